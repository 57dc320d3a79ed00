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

from collections.abc import Callable
from functools import partial
from typing import Any

from torch import nn

from calibkit.core.errors import InputError
from calibkit.core.registry import Registry
from calibkit.models.lenet import LeNet5, lenet5, lenet5_dropout
from calibkit.models.mlp import MLP, mlp
from calibkit.models.resnet import ResNet18, WideResNet, resnet18, wide_resnet
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

#: A model factory: ``(num_classes, in_channels=3, **kw) -> nn.Module``.
ModelFactory = Callable[..., nn.Module]

#: Model factories by name, in registration order.
MODELS: Registry[ModelFactory] = Registry("model")

_FACTORIES: dict[str, ModelFactory] = {
    "lenet5": lenet5,
    "lenet5_dropout": lenet5_dropout,
    "resnet20": resnet20,
    "resnet32": resnet32,
    "resnet44": resnet44,
    "resnet56": resnet56,
    "resnet110": resnet110,
    "resnet18": resnet18,
    "wrn16_4": partial(wide_resnet, 16, 4),
    "wrn28_10": partial(wide_resnet, 28, 10),
    "mlp": mlp,
}
for _name, _factory in _FACTORIES.items():
    MODELS.register(_name)(_factory)


def create_model(name: str, num_classes: int, **kw: Any) -> nn.Module:
    """The model registered under ``name`` for ``num_classes`` classes; ``kw`` go to its factory.

    An unknown ``name`` raises :class:`~calibkit.core.errors.UnknownNameError` listing the
    valid ones.
    """
    factory = MODELS.get(name)
    if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 1:
        raise InputError("num_classes", "a positive integer", repr(num_classes))
    return factory(num_classes, **kw)


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
]
