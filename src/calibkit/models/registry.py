"""The registry of model factories.

Every entry is a factory ``(num_classes, in_channels=3, **kw) -> nn.Module`` declared in
:data:`calibkit.core.catalog.MODEL_ENTRIES` with its metadata: ``family`` (``"lenet"``,
``"cifar_resnet"``, ``"resnet"``, ``"wide_resnet"``, ``"mlp"`` or ``"timm"``: timm's names,
started from a timm checkpoint by :func:`~calibkit.models.checkpoint.load_checkpoint`), for
the CIFAR ResNets ``depth``, which
:func:`~calibkit.models.resnet_cifar.load_pretrained_cifar_resnet` needs to start one from a
checkpoint, and ``input_size`` for models made for another size than 32x32.
"""

from __future__ import annotations

from collections.abc import Callable

from torch import nn

from calibkit.core import catalog
from calibkit.core.registry import Registry

#: A model factory: ``(num_classes, in_channels=3, **kw) -> nn.Module``.
ModelFactory = Callable[..., nn.Module]

#: Model factories by name, declared in :data:`calibkit.core.catalog.MODEL_ENTRIES` (its
#: order, its metadata); each factory's module is imported when it is asked for.
MODELS: Registry[ModelFactory] = Registry("model")
for _name, _entry in catalog.MODEL_ENTRIES.items():
    MODELS.declare(_name, f"calibkit.models.{_entry.module}:{_name}", **_entry.info())
