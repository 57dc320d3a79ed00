"""Calibration-aware training losses, looked up by name.

Every loss is an ``nn.Module`` called as ``loss(logits (N, K), targets (N,) int64)`` and
computed from ``F.log_softmax(logits)``. :data:`LOSSES` maps names to factories and
:func:`create_loss` builds one, rejecting unknown parameter names:

- ``cross_entropy``, ``label_smoothing`` (``epsilon``), ``brier`` (:mod:`.basic`)
- ``focal`` (``gamma``), ``adaptive_focal`` (FLSD-53), ``inverse_focal``, ``dual_focal``
  (:mod:`.focal`)
- ``l1_norm`` (``alpha``), ``mmce``, ``mdca``, ``soft_ece`` (``beta``): cross-entropy plus
  the weighted penalty of the same name, ``CE + beta * penalty`` (``alpha`` for the L1 logit
  norm); pass ``base=`` to put the penalty on another loss. The penalties alone, returning
  just the penalty, are in :data:`PENALTIES` (:mod:`.penalties` states their formulas).

Losses with a ``reduction`` accept "mean" (default), "sum" and "none"; the penalised losses
always reduce to a scalar (the penalties are batch statistics). :func:`build_loss` builds a
loss from a config mapping, optionally with a penalty.

>>> import torch
>>> loss = build_loss({"name": "focal", "gamma": 3, "penalty": {"name": "mdca", "beta": 1.0}})
>>> loss
CombinedLoss(
  weight=1.0
  (base): FocalLoss(gamma=3.0, reduction='mean')
  (penalty): MDCA()
)
>>> logits = torch.tensor([[2.0, 0.0], [0.0, 1.0]], requires_grad=True)
>>> value = loss(logits, torch.tensor([0, 0]))
>>> value.backward()
>>> round(float(value.detach()), 4)
0.6818
>>> try:
...     create_loss("focal", gama=2)
... except InputError as err:
...     print(err)
loss 'focal': expected parameters among gamma, reduction, got 'gama'
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from torch import nn

from calibkit.core.errors import InputError
from calibkit.core.registry import Registry
from calibkit.losses.basic import (
    BrierLoss,
    CrossEntropyLoss,
    LabelSmoothingLoss,
    brier_loss,
    check_real,
    cross_entropy,
    label_smoothing_loss,
)
from calibkit.losses.focal import (
    AdaptiveFocalLoss,
    DualFocalLoss,
    FocalLoss,
    InverseFocalLoss,
    adaptive_focal_loss,
    dual_focal_loss,
    focal_loss,
    inverse_focal_loss,
)
from calibkit.losses.penalties import (
    MDCA,
    MMCE,
    CombinedLoss,
    L1LogitNorm,
    Penalty,
    SoftECE,
    SoftNorm,
    l1_logit_norm,
    mdca,
    mmce,
    soft_ece,
)

#: A loss factory: keyword hyper-parameters -> ``nn.Module``.
LossFactory = Callable[..., nn.Module]

#: Loss factories by name, in registration order.
LOSSES: Registry[LossFactory] = Registry("loss")

#: Penalty modules (returning only the penalty) by name.
PENALTIES: Registry[type[Penalty]] = Registry("penalty")


def _penalised(base: nn.Module | None, penalty: Penalty, weight: float) -> CombinedLoss:
    return CombinedLoss(CrossEntropyLoss() if base is None else base, penalty, weight)


def l1_norm_loss(alpha: float = 0.01, base: nn.Module | None = None) -> CombinedLoss:
    """``CE + alpha * mean_i ||z_i||_1`` (Joo & Chung 2021), or ``base`` instead of CE."""
    return _penalised(base, L1LogitNorm(), check_real("alpha", alpha))


def mmce_loss(
    beta: float = 1.0,
    bandwidth: float = 0.4,
    weighted: bool = True,
    base: nn.Module | None = None,
) -> CombinedLoss:
    """``CE + beta * MMCE`` (Kumar et al. 2018; weighted MMCE_w by default)."""
    return _penalised(base, MMCE(bandwidth, weighted), check_real("beta", beta))


def mdca_loss(beta: float = 1.0, base: nn.Module | None = None) -> CombinedLoss:
    """``CE + beta * MDCA`` (Hebbalaguppe et al. 2022)."""
    return _penalised(base, MDCA(), check_real("beta", beta))


def soft_ece_loss(
    beta: float = 1.0,
    n_bins: int = 15,
    temperature: float = 1e-3,
    norm: SoftNorm = "l1",
    base: nn.Module | None = None,
) -> CombinedLoss:
    """``CE + beta * soft-binned ECE`` (Karandikar et al. 2021)."""
    return _penalised(base, SoftECE(n_bins, temperature, norm), check_real("beta", beta))


_LOSSES: dict[str, LossFactory] = {
    "cross_entropy": CrossEntropyLoss,
    "label_smoothing": LabelSmoothingLoss,
    "brier": BrierLoss,
    "focal": FocalLoss,
    "adaptive_focal": AdaptiveFocalLoss,
    "inverse_focal": InverseFocalLoss,
    "dual_focal": DualFocalLoss,
    "l1_norm": l1_norm_loss,
    "mmce": mmce_loss,
    "mdca": mdca_loss,
    "soft_ece": soft_ece_loss,
}
for _name, _factory in _LOSSES.items():
    LOSSES.register(_name)(_factory)
for _name, _penalty in {
    "l1_norm": L1LogitNorm,
    "mmce": MMCE,
    "mdca": MDCA,
    "soft_ece": SoftECE,
}.items():
    PENALTIES.register(_name)(_penalty)


def _check_params(
    kind: str, name: str, factory: LossFactory, params: Mapping[str, Any], hidden: str = ""
) -> None:
    accepted = [p for p in inspect.signature(factory).parameters if p != hidden]
    unknown = [key for key in params if key not in accepted]
    if unknown:
        expected = "parameters among " + ", ".join(accepted) if accepted else "no parameters"
        raise InputError(f"{kind} {name!r}", expected, ", ".join(map(repr, unknown)))


def create_loss(name: str, **params: Any) -> nn.Module:
    """The loss registered under ``name`` built with ``params``.

    An unknown ``name`` raises :class:`~calibkit.core.errors.UnknownNameError` listing the valid
    ones; an unknown parameter raises :class:`~calibkit.core.errors.InputError` listing the
    accepted ones; invalid values raise InputError naming the parameter.
    """
    factory = LOSSES.get(name)
    _check_params("loss", name, factory, params)
    return factory(**params)


def build_loss(spec: Mapping[str, Any]) -> nn.Module:
    """A loss from a config mapping ``{"name": ..., <params>, "penalty": {...}}``.

    ``penalty`` (optional) names an entry of :data:`PENALTIES` with its weight (``beta``, or
    ``alpha`` for ``l1_norm``) and parameters; the result is
    ``CombinedLoss(base, penalty, weight)``, e.g. focal + MDCA from
    ``{"name": "focal", "gamma": 3, "penalty": {"name": "mdca", "beta": 1.0}}``.
    """
    params = _spec_params("spec", spec)
    name = params.pop("name")
    penalty = params.pop("penalty", None)
    loss = create_loss(name, **params)
    if penalty is None:
        return loss
    penalty_params = _spec_params("penalty", penalty)
    penalty_name = penalty_params.pop("name")
    PENALTIES.get(penalty_name)  # an unknown penalty lists the penalties
    factory = LOSSES.get(penalty_name)
    _check_params("penalty", penalty_name, factory, penalty_params, hidden="base")
    return factory(base=loss, **penalty_params)


def _spec_params(argument: str, spec: object) -> dict[str, Any]:
    if not isinstance(spec, Mapping) or not isinstance(spec.get("name"), str):
        raise InputError(argument, "a mapping with a string 'name'", repr(spec))
    return dict(spec)


__all__ = [
    "LOSSES",
    "MDCA",
    "MMCE",
    "PENALTIES",
    "AdaptiveFocalLoss",
    "BrierLoss",
    "CombinedLoss",
    "CrossEntropyLoss",
    "DualFocalLoss",
    "FocalLoss",
    "InverseFocalLoss",
    "L1LogitNorm",
    "LabelSmoothingLoss",
    "LossFactory",
    "Penalty",
    "SoftECE",
    "adaptive_focal_loss",
    "brier_loss",
    "build_loss",
    "create_loss",
    "cross_entropy",
    "dual_focal_loss",
    "focal_loss",
    "inverse_focal_loss",
    "l1_logit_norm",
    "l1_norm_loss",
    "label_smoothing_loss",
    "mdca",
    "mdca_loss",
    "mmce",
    "mmce_loss",
    "soft_ece",
    "soft_ece_loss",
]
