"""Image classifiers for calibration studies, looked up by name.

Every entry of :data:`MODELS` is a factory ``(num_classes, in_channels=3, **kw) -> nn.Module``
taking 32x32 images (LeNet-5 also 28x28 with ``input_size=28``; the MLP
any size); :func:`create_model` builds
one by name. ``MODELS.names()`` lists them all.

>>> import torch
>>> model = create_model("resnet20", num_classes=10)
>>> model(torch.zeros(2, 3, 32, 32)).shape
torch.Size([2, 10])
"""

from __future__ import annotations

from typing import Any

from torch import nn

from calibkit.core.validation import Integer

# Import order is registration order (that of ``MODELS.names()``).
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
from calibkit.models.resnet import ResNet18, WideResNet, resnet18, wide_resnet, wrn16_4, wrn28_10
from calibkit.models.mlp import MLP, mlp

# isort: on


def create_model(name: str, num_classes: int, **kw: Any) -> nn.Module:
    """The model registered under ``name`` for ``num_classes`` classes; ``kw`` go to its factory.

    An unknown ``name`` raises :class:`~calibkit.core.errors.UnknownNameError` listing the
    valid ones.
    """
    factory = MODELS.get(name)
    return factory(Integer(low=1).check("num_classes", num_classes), **kw)


__all__ = [
    "MLP",
    "MODELS",
    "CifarResNet",
    "LeNet5",
    "ModelFactory",
    "ResNet18",
    "WideResNet",
    "create_model",
    "keep_classes",
    "lenet5",
    "lenet5_dropout",
    "load_pretrained_cifar_resnet",
    "mlp",
    "resnet18",
    "resnet20",
    "resnet32",
    "resnet44",
    "resnet56",
    "resnet110",
    "wide_resnet",
    "wrn16_4",
    "wrn28_10",
]
