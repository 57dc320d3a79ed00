"""Image classifiers for calibration studies, looked up by name.

Every entry of :data:`MODELS` is a factory ``(num_classes, in_channels=3, **kw) -> nn.Module``
taking 32x32 images (LeNet-5 also 28x28 with ``input_size=28``; the MLP
any size), except those registered with an ``input_size``: ``resnet50_28`` (28x28) and the
ImageNet models with timm's parameter names (``family="timm"``, 224x224: ``resnet101``,
``vit_small_patch16_224``, ``mixer_b16_224``), which :func:`load_checkpoint` starts from a
timm checkpoint; :func:`create_model` builds
one by name, :func:`load_model` one with its trained weights. ``MODELS.names()`` lists
them all.

>>> import torch
>>> model = create_model("resnet20", num_classes=10)
>>> model(torch.zeros(2, 3, 32, 32)).shape
torch.Size([2, 10])
"""

from __future__ import annotations

import os
from typing import Any

from torch import nn

from calibkit.core.errors import InputError
from calibkit.core.validation import Integer

# The order of ``MODELS.names()`` is calibkit.core.catalog.MODEL_ENTRIES'.
# isort: off
from calibkit.models.registry import MODELS, ModelFactory
from calibkit.models.lenet import LeNet5, lenet5, lenet5_dropout
from calibkit.models.resnet_cifar import (
    CifarResNet,
    keep_classes,
    load_pretrained_cifar_resnet,
    resnet20,
    resnet32,
    resnet44,
    resnet56,
    resnet110,
)
from calibkit.models.resnet import (
    ResNet18,
    WideResNet,
    resnet18,
    wide_resnet,
    wrn16_4,
    wrn28_10,
    wrn40_10,
)
from calibkit.models.bottleneck import BottleneckResNet, resnet50_28, resnet101
from calibkit.models.vit import VisionTransformer, vit_small_patch16_224
from calibkit.models.mixer import MlpMixer, mixer_b16_224
from calibkit.models.checkpoint import checkpoint_classes, load_checkpoint, read_state_dict
from calibkit.models.mlp import MLP, mlp

# isort: on


def create_model(name: str, num_classes: int, **kw: Any) -> nn.Module:
    """The model registered under ``name`` for ``num_classes`` classes; ``kw`` go to its factory.

    An unknown ``name`` raises :class:`~calibkit.core.errors.UnknownNameError` listing the
    valid ones.

    Examples
    --------
    >>> import torch
    >>> model = create_model("lenet5", 10)
    >>> tuple(model(torch.zeros(2, 3, 32, 32)).shape)
    (2, 10)
    """
    MODELS.get(name)  # an unknown name is named before num_classes
    model: nn.Module = MODELS.create(name, Integer(low=1).check("num_classes", num_classes), **kw)
    return model


def load_model(
    name: str, weights: str | os.PathLike[str], n_classes: int, in_channels: int = 3
) -> nn.Module:
    """The model registered as ``name`` for ``n_classes`` classes of ``in_channels``-channel
    images, with the trained weights of checkpoint ``weights``, in eval mode.

    A CIFAR ResNet (``family="cifar_resnet"``) starts from the original checkpoints
    (:func:`load_pretrained_cifar_resnet`: its number of classes read from the file, which
    must be ``n_classes``); any other model is built by :func:`create_model` and its
    weights loaded strictly (:func:`load_checkpoint`). An unknown ``name`` is refused with
    the valid ones, a missing or mismatched checkpoint naming ``weights``.
    """
    info = MODELS.info(name)  # an unknown name: UnknownNameError listing the valid ones
    try:
        if info.get("family") == "cifar_resnet":
            resnet = load_pretrained_cifar_resnet(os.fspath(weights), int(info["depth"]))
            classes, channels = resnet.linear.out_features, resnet.conv1.in_channels
            if (classes, channels) != (n_classes, in_channels):
                raise InputError(
                    "weights",
                    f"a {name} checkpoint of {n_classes} classes and {in_channels} channels",
                    f"{weights} ({classes} classes, {channels} channels)",
                )
            model: nn.Module = resnet
        else:
            model = create_model(name, n_classes, in_channels=in_channels)
            model = load_checkpoint(model, weights)
    except InputError as exc:
        if exc.argument != "path":
            raise
        raise InputError("weights", exc.expected, exc.got) from None
    return model.eval()


def model_classes(name: str, weights: str | os.PathLike[str]) -> int:
    """The number of classes of checkpoint ``weights`` for the model registered as ``name``,
    read from the file without building the model's weights (its shapes come from the
    ``meta`` device): a model's classes checked against a dataset's before any work.

    Parameters
    ----------
    name
        A name of :data:`MODELS` (an unknown one: UnknownNameError listing the valid ones).
    weights
        Its checkpoint; a missing, unreadable or foreign file is refused naming ``weights``.

    Returns
    -------
    int
        The classes of the checkpoint's classifier.

    Examples
    --------
    >>> import tempfile, torch
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     torch.save(create_model("lenet5", 4).state_dict(), f"{folder}/w.pt")
    ...     model_classes("lenet5", f"{folder}/w.pt")
    4
    """
    import torch

    info = MODELS.info(name)
    try:
        if info.get("family") == "cifar_resnet":  # the loader's own checks (a small model)
            resnet = load_pretrained_cifar_resnet(os.fspath(weights), int(info["depth"]))
            return int(resnet.linear.out_features)
        with torch.device("meta"):
            two, three = create_model(name, 2), create_model(name, 3)
        return checkpoint_classes(two, three, weights)
    except InputError as exc:
        if exc.argument != "path":
            raise
        raise InputError("weights", exc.expected, exc.got) from None


__all__ = [
    "MLP",
    "MODELS",
    "BottleneckResNet",
    "CifarResNet",
    "LeNet5",
    "MlpMixer",
    "ModelFactory",
    "ResNet18",
    "VisionTransformer",
    "WideResNet",
    "create_model",
    "keep_classes",
    "lenet5",
    "lenet5_dropout",
    "load_checkpoint",
    "load_model",
    "load_pretrained_cifar_resnet",
    "mixer_b16_224",
    "mlp",
    "model_classes",
    "read_state_dict",
    "resnet18",
    "resnet20",
    "resnet32",
    "resnet44",
    "resnet50_28",
    "resnet56",
    "resnet101",
    "resnet110",
    "vit_small_patch16_224",
    "wide_resnet",
    "wrn16_4",
    "wrn28_10",
    "wrn40_10",
]
