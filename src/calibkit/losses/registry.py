"""The registries of training losses and of calibration penalties.

Every entry is registered with its parameter declaration, ``params`` (name ->
:class:`~calibkit.core.validation.Constraint`), which :func:`calibkit.losses.create_loss`
reads to check a configuration's parameters before building the loss.
"""

from __future__ import annotations

from collections.abc import Callable

from torch import nn

from calibkit.core.registry import Registry

#: A loss factory: keyword hyper-parameters -> ``nn.Module``.
LossFactory = Callable[..., nn.Module]

#: Loss factories by name, in registration order; ``LOSSES.info(name)["params"]`` declares
#: their parameters.
LOSSES: Registry[LossFactory] = Registry("loss")

#: Penalty modules (returning only the penalty) by name, with their ``params`` too.
PENALTIES: Registry[LossFactory] = Registry("penalty")
