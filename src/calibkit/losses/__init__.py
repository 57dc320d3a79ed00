"""Calibration-aware training losses, looked up by name.

Every loss is an ``nn.Module`` called as ``loss(logits (N, K), targets (N,) int64)`` and
computed from ``F.log_softmax(logits)``. :data:`LOSSES` maps names to factories and
:func:`create_loss` builds one, rejecting unknown parameter names:

- ``cross_entropy``, ``label_smoothing`` (``epsilon``), ``brier`` (:mod:`.basic`)
- ``focal`` (``gamma``), ``adaptive_focal`` (FLSD-53), ``inverse_focal``, ``dual_focal``
  (Tao et al.), all with the class weight ``alpha`` (:mod:`.focal`), and the survey's
  ``dual_focal_two_term`` (:mod:`.dual_focal`)
- ``l1_norm`` (``alpha``), ``mmce``, ``mdca``, ``soft_ece``, ``confidence_penalty``, ``dca``,
  ``dece`` (``beta``): cross-entropy plus the weighted penalty of the same name,
  ``CE + beta * penalty`` (``alpha`` for the L1 logit norm); pass ``base=`` to put the
  penalty on another loss. The penalties alone, returning just the penalty, are in
  :data:`PENALTIES` (:mod:`.penalties`, :mod:`.confidence` and :mod:`.dece` state their
  formulas).

Losses with a ``reduction`` accept "mean" (default), "sum" and "none"; the penalised losses
always reduce to a scalar (the penalties are batch statistics). Every entry declares its
parameters (``LOSSES.info(name)["params"]``), which :func:`create_loss` checks; its
``penalty`` option adds a penalty to any loss.

>>> import torch
>>> loss = create_loss("focal", gamma=3, penalty={"name": "mdca", "beta": 1.0})
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
loss 'focal': expected parameters among gamma, reduction, alpha, got 'gama'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torch import nn

from calibkit.core.errors import InputError
from calibkit.core.validation import check_params
from calibkit.losses.basic import (
    BrierLoss,
    CrossEntropyLoss,
    LabelSmoothingLoss,
    brier_loss,
    cross_entropy,
    label_smoothing_loss,
)
from calibkit.losses.confidence import DCA, ConfidencePenalty, dca, negative_entropy
from calibkit.losses.dece import DECE, dece
from calibkit.losses.dual_focal import DualFocalTwoTermLoss, dual_focal_two_term_loss
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
    WEIGHT,
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
from calibkit.losses.registry import LOSSES, PENALTIES, LossFactory


def _penalised(base: nn.Module | None, penalty: Penalty, weight: float) -> CombinedLoss:
    return CombinedLoss(CrossEntropyLoss() if base is None else base, penalty, weight)


@LOSSES.register("l1_norm", params={"alpha": WEIGHT})
def l1_norm_loss(alpha: float = 0.01, base: nn.Module | None = None) -> CombinedLoss:
    """``CE + alpha * mean_i ||z_i||_1`` (Joo & Chung 2021), or ``base`` instead of CE."""
    return _penalised(base, L1LogitNorm(), WEIGHT.check("alpha", alpha))


@LOSSES.register("mmce", params={"beta": WEIGHT, **PENALTIES.info("mmce")["params"]})
def mmce_loss(
    beta: float = 1.0,
    bandwidth: float = 0.4,
    weighted: bool = True,
    base: nn.Module | None = None,
) -> CombinedLoss:
    """``CE + beta * MMCE`` (Kumar et al. 2018; weighted MMCE_w by default)."""
    return _penalised(base, MMCE(bandwidth, weighted), WEIGHT.check("beta", beta))


@LOSSES.register("mdca", params={"beta": WEIGHT})
def mdca_loss(beta: float = 1.0, base: nn.Module | None = None) -> CombinedLoss:
    """``CE + beta * MDCA`` (Hebbalaguppe et al. 2022)."""
    return _penalised(base, MDCA(), WEIGHT.check("beta", beta))


@LOSSES.register("soft_ece", params={"beta": WEIGHT, **PENALTIES.info("soft_ece")["params"]})
def soft_ece_loss(
    beta: float = 1.0,
    n_bins: int = 15,
    temperature: float = 1e-3,
    norm: SoftNorm = "l1",
    base: nn.Module | None = None,
) -> CombinedLoss:
    """``CE + beta * soft-binned ECE`` (Karandikar et al. 2021)."""
    return _penalised(base, SoftECE(n_bins, temperature, norm), WEIGHT.check("beta", beta))


@LOSSES.register("confidence_penalty", params={"beta": WEIGHT})
def confidence_penalty_loss(beta: float = 0.1, base: nn.Module | None = None) -> CombinedLoss:
    """``CE - beta * H(p)`` (Pereyra et al. 2017): CE plus ``beta`` times the negative entropy."""
    return _penalised(base, ConfidencePenalty(), WEIGHT.check("beta", beta))


@LOSSES.register("dca", params={"beta": WEIGHT})
def dca_loss(beta: float = 1.0, base: nn.Module | None = None) -> CombinedLoss:
    """``CE + beta * |mean confidence - mean accuracy|`` (Liang et al. 2020)."""
    return _penalised(base, DCA(), WEIGHT.check("beta", beta))


@LOSSES.register("dece", params={"beta": WEIGHT, **PENALTIES.info("dece")["params"]})
def dece_loss(
    beta: float = 1.0,
    n_bins: int = 15,
    bin_temperature: float = 0.01,
    accuracy_temperature: float = 0.01,
    base: nn.Module | None = None,
) -> CombinedLoss:
    """``CE + beta * DECE`` (Bohdal et al. 2021, without their meta-learning)."""
    penalty = DECE(n_bins, bin_temperature, accuracy_temperature)
    return _penalised(base, penalty, WEIGHT.check("beta", beta))


def _checked(kind: str, name: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` of the loss ``name`` checked against its declaration."""
    return check_params(LOSSES.info(name)["params"], params, f"{kind} {name!r}")


def create_loss(name: str, *, penalty: Mapping[str, Any] | None = None, **params: Any) -> nn.Module:
    """The loss registered under ``name`` built with ``params``, plus an optional ``penalty``.

    ``penalty`` names an entry of :data:`PENALTIES` with its weight (``beta``, or ``alpha``
    for ``l1_norm``) and parameters; the result is ``CombinedLoss(loss, penalty, weight)``,
    e.g. focal + MDCA from ``create_loss("focal", gamma=3, penalty={"name": "mdca"})``.

    An unknown ``name`` raises :class:`~calibkit.core.errors.UnknownNameError` listing the valid
    ones; an unknown parameter raises :class:`~calibkit.core.errors.InputError` listing the
    declared ones; an invalid value raises InputError naming the parameter.

    Examples
    --------
    >>> import torch
    >>> loss = create_loss("cross_entropy")
    >>> round(float(loss(torch.zeros(2, 2), torch.tensor([0, 1]))), 4)  # ln 2
    0.6931
    >>> type(create_loss("focal", gamma=3, penalty={"name": "mdca"})).__name__
    'CombinedLoss'
    """
    loss: nn.Module = LOSSES.create(name, **_checked("loss", name, params))
    if penalty is None:
        return loss
    if not isinstance(penalty, Mapping) or not isinstance(penalty.get("name"), str):
        raise InputError("penalty", "a mapping with a string 'name'", repr(penalty))
    penalty_params = dict(penalty)
    penalty_name = penalty_params.pop("name")
    PENALTIES.get(penalty_name)  # an unknown penalty lists the penalties
    checked = _checked("penalty", penalty_name, penalty_params)
    combined: nn.Module = LOSSES.create(penalty_name, base=loss, **checked)
    return combined


__all__ = [
    "DCA",
    "DECE",
    "LOSSES",
    "MDCA",
    "MMCE",
    "PENALTIES",
    "AdaptiveFocalLoss",
    "BrierLoss",
    "CombinedLoss",
    "ConfidencePenalty",
    "CrossEntropyLoss",
    "DualFocalLoss",
    "DualFocalTwoTermLoss",
    "FocalLoss",
    "InverseFocalLoss",
    "L1LogitNorm",
    "LabelSmoothingLoss",
    "LossFactory",
    "Penalty",
    "SoftECE",
    "adaptive_focal_loss",
    "brier_loss",
    "confidence_penalty_loss",
    "create_loss",
    "cross_entropy",
    "dca",
    "dca_loss",
    "dece",
    "dece_loss",
    "dual_focal_loss",
    "dual_focal_two_term_loss",
    "focal_loss",
    "inverse_focal_loss",
    "l1_logit_norm",
    "l1_norm_loss",
    "label_smoothing_loss",
    "mdca",
    "mdca_loss",
    "mmce",
    "mmce_loss",
    "negative_entropy",
    "soft_ece",
    "soft_ece_loss",
]
