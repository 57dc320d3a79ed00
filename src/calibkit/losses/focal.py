"""Focal-loss family: focal, adaptive (FLSD-53), inverse focal and dual focal (two forms).

Each is a weighted cross-entropy ``-w(p) log p_y`` with ``p_y`` the probability of the
target class:

- focal (Lin et al. 2017; for calibration Mukhoti et al. 2020): ``w = (1 - p_y)^gamma``
- adaptive focal, FLSD-53 (Mukhoti et al. 2020, "Calibrating deep neural networks using
  focal loss"): the focal loss with a per-sample ``gamma`` chosen from the *detached*
  ``p_y``: 5 if ``p_y < 0.2``, 3 if ``0.2 <= p_y < 0.5``, else ``gamma`` (default 3, which
  is FLSD-53 exactly)
- inverse focal (Wang et al. 2021, "Rethinking calibration of deep neural networks: do not
  be afraid of overconfidence"): ``w = (1 + p_y)^gamma``
- dual focal (Tao, Dong & Xu 2023, "Dual Focal Loss for Calibration", ICML):
  ``w = (1 - p_y + p_j)^gamma`` where ``p_j`` is the largest probability *smaller than*
  ``p_y`` (the class ranked right after the target), and ``p_j = 0`` when every other class
  is at least as probable as the target. When the prediction is correct, ``p_j`` is the
  largest non-target probability; when it is wrong, classes ranked above the target are
  skipped. This follows the paper ("the highest logit ranked after the ground truth logit")
  and the authors' code (``p_k < p_y`` mask, ties excluded); ``p_j`` carries gradient.

At ``gamma = 0`` focal, inverse focal and dual focal are cross-entropy (``w = 1``), and so
is the adaptive loss on samples with ``p_y >= 0.5``. The survey's two-term dual focal loss
is in :mod:`calibkit.losses.dual_focal` (registered as ``dual_focal_two_term``).

Class weight ``alpha`` (Lin et al. 2017, "Focal loss for dense object detection"): every
loss here takes ``alpha`` and multiplies sample ``i``'s loss by ``alpha_t = alpha[y_i]``.
``alpha`` is ``None`` (default: no weight, ``alpha_t = 1``), one number in ``[0, 1]`` for
two classes (Lin et al.'s binary form: ``alpha_t = alpha`` for class 1 and ``1 - alpha``
for class 0), or ``K`` weights ``>= 0``, one per class. ``alpha = 0.5`` halves the loss.

Numerics (float32): ``1 - p_y`` is computed as ``-expm1(log p_y)``, exact near ``p_y = 1``.
For ``gamma < 1`` the derivative of ``x^gamma`` is infinite at ``x = 0``, so the base of the
power is clamped at the smallest normal number of the dtype (inside the power only); the
loss is then finite with finite gradients from ``p_y -> 0`` to ``p_y = 1``.

>>> logits = torch.tensor([[2.0, 0.0], [0.0, 1.0]])
>>> targets = torch.tensor([0, 0])
>>> focal_loss(logits, targets, gamma=0.0, reduction="none")
tensor([0.1269, 1.3133])
>>> focal_loss(logits, targets, gamma=2.0, reduction="none")
tensor([0.0018, 0.7019])
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor, nn

from calibkit.core.docs import fill_doc
from calibkit.core.validation import NON_NEGATIVE
from calibkit.losses.basic import (
    REDUCTION,
    Reduction,
    check_reduction,
    log_probs,
    reduce,
    target_log_prob,
)
from calibkit.losses.class_weight import ALPHA, Alpha, class_weight, weighted
from calibkit.losses.registry import LOSSES

#: The focusing parameter: a finite number >= 0.
GAMMA = NON_NEGATIVE
GAMMA_PARAMS = {"gamma": GAMMA, "reduction": REDUCTION, "alpha": ALPHA}


#: The Parameters and Returns sections of focal_loss, inverse_focal_loss, dual_focal_loss.
_FUNCTION_SIGNATURE = """Parameters
----------
logits, targets, reduction
    As in :func:`~calibkit.losses.basic.cross_entropy`.
gamma : float
    Exponent, finite and >= 0; 0 gives cross-entropy.
alpha : None, float or sequence of float
    Class weight ``alpha_t`` (see the module docstring); None: off.

Returns
-------
Tensor
    The loss.

Examples
--------"""
#: The Parameters section of the gamma-loss modules (FocalLoss, InverseFocalLoss,
#: DualFocalLoss, DualFocalTwoTermLoss), and the Examples header.
MODULE_PARAMETERS = """Parameters
----------
gamma : float
    Exponent, finite and >= 0.
reduction : {"mean", "sum", "none"}
    How to reduce the per-sample losses.
alpha : None, float or sequence of float
    Class weight ``alpha_t`` (see the module docstring); None (default): off.

Examples
--------"""


def focal_power(base: Tensor, gamma: float | Tensor) -> Tensor:
    """``base^gamma`` for ``base >= 0`` with finite gradients at ``base = 0`` (see module doc).

    Parameters
    ----------
    base : Tensor
        Values >= 0, clamped below at the dtype's smallest normal number.
    gamma : float or Tensor
        Exponent(s) >= 0; a float 0 gives ones.

    Returns
    -------
    Tensor
        ``base^gamma``.

    Examples
    --------
    >>> focal_power(torch.tensor([0.5, 0.0]), 2.0)
    tensor([0.2500, 0.0000])
    """
    if isinstance(gamma, float) and gamma == 0.0:
        return torch.ones_like(base)
    return base.clamp_min(torch.finfo(base.dtype).tiny).pow(gamma)


#: The base of a loss of the focal form: ``(log p, log p_y, targets) -> base``, one per sample.
_Base = Callable[[Tensor, Tensor, Tensor], Tensor]


def _focal_form(
    logits: Tensor,
    targets: Tensor,
    gamma: float,
    reduction: Reduction,
    alpha: object,
    base: _Base,
    exponent: Callable[[Tensor, float], Tensor | float] | None = None,
) -> Tensor:
    """``-base^gamma log p_y``, weighted by ``alpha_t`` and reduced: every loss of this module
    (``exponent(log p_y, gamma)``: a per-sample exponent instead of ``gamma``)."""
    gamma = GAMMA.check("gamma", gamma)
    reduction = check_reduction(reduction)
    logp = log_probs(logits, targets)
    logp_y = target_log_prob(logp, targets)
    power = gamma if exponent is None else exponent(logp_y, gamma)
    weight = class_weight(alpha, targets, logp.shape[1], logp_y)
    return reduce(
        weighted(-focal_power(base(logp, logp_y, targets), power) * logp_y, weight), reduction
    )


def _one_minus_p_y(logp: Tensor, logp_y: Tensor, targets: Tensor) -> Tensor:
    """Focal loss's base, ``1 - p_y``."""
    return -torch.expm1(logp_y)


def _one_plus_p_y(logp: Tensor, logp_y: Tensor, targets: Tensor) -> Tensor:
    """Inverse focal loss's base, ``1 + p_y``."""
    return 1.0 + logp_y.exp()


def _one_minus_p_y_plus_p_j(logp: Tensor, logp_y: Tensor, targets: Tensor) -> Tensor:
    """Dual focal loss's base, ``1 - p_y + p_j``, ``p_j`` the largest probability below
    ``p_y`` (0 if none)."""
    p = logp.exp()
    below = p < p.gather(1, targets[:, None])
    p_j = torch.where(below, p, torch.zeros_like(p)).amax(dim=1)
    return -torch.expm1(logp_y) + p_j


def _flsd_53(logp_y: Tensor, gamma: float) -> Tensor:
    """FLSD-53's exponent: 5 where ``p_y < 0.2``, 3 where ``p_y < 0.5``, else ``gamma`` (chosen
    without gradient)."""
    p = logp_y.detach().exp()
    high = torch.full_like(p, gamma)
    return torch.where(p < 0.2, 5.0, torch.where(p < 0.5, 3.0, high))


@fill_doc(signature=_FUNCTION_SIGNATURE)
def focal_loss(
    logits: Tensor,
    targets: Tensor,
    gamma: float,
    reduction: Reduction = "mean",
    alpha: object = None,
) -> Tensor:
    """Focal loss ``-(1 - p_y)^gamma log p_y`` (Lin et al. 2017; Mukhoti et al. 2020).

    {signature}
    >>> from calibkit.losses.basic import cross_entropy
    >>> logits, targets = torch.tensor([[2.0, 0.0], [0.0, 1.0]]), torch.tensor([0, 0])
    >>> torch.allclose(focal_loss(logits, targets, gamma=0.0), cross_entropy(logits, targets))
    True
    >>> focal_loss(torch.zeros(1, 2), torch.tensor([0]), gamma=1.0)  # 0.5 * log 2
    tensor(0.3466)
    """
    return _focal_form(logits, targets, gamma, reduction, alpha, _one_minus_p_y)


def adaptive_focal_loss(
    logits: Tensor,
    targets: Tensor,
    gamma: float = 3.0,
    reduction: Reduction = "mean",
    alpha: object = None,
) -> Tensor:
    """FLSD-53 (Mukhoti et al. 2020): focal loss with ``gamma`` 5 / 3 / ``gamma`` by ``p_y``.

    The per-sample exponent is 5 where ``p_y < 0.2``, 3 where ``p_y < 0.5`` and ``gamma``
    elsewhere, chosen from ``p_y`` without gradient.

    Parameters
    ----------
    logits, targets, reduction
        As in :func:`~calibkit.losses.basic.cross_entropy`.
    gamma : float
        Exponent where ``p_y >= 0.5`` (3 gives FLSD-53).
    alpha : None, float or sequence of float
        Class weight ``alpha_t`` (see the module docstring); None: off.

    Returns
    -------
    Tensor
        The loss.

    Examples
    --------
    >>> adaptive_focal_loss(torch.zeros(1, 2), torch.tensor([0]))  # p_y = 0.5: 0.5^3 log 2
    tensor(0.0866)
    """
    return _focal_form(logits, targets, gamma, reduction, alpha, _one_minus_p_y, _flsd_53)


@fill_doc(signature=_FUNCTION_SIGNATURE)
def inverse_focal_loss(
    logits: Tensor,
    targets: Tensor,
    gamma: float,
    reduction: Reduction = "mean",
    alpha: object = None,
) -> Tensor:
    """Inverse focal loss ``-(1 + p_y)^gamma log p_y`` (Wang et al. 2021).

    {signature}
    >>> inverse_focal_loss(torch.zeros(1, 2), torch.tensor([0]), gamma=1.0)  # 1.5 log 2
    tensor(1.0397)
    """
    return _focal_form(logits, targets, gamma, reduction, alpha, _one_plus_p_y)


@fill_doc(signature=_FUNCTION_SIGNATURE)
def dual_focal_loss(
    logits: Tensor,
    targets: Tensor,
    gamma: float,
    reduction: Reduction = "mean",
    alpha: object = None,
) -> Tensor:
    """Dual focal loss ``-(1 - p_y + p_j)^gamma log p_y`` (Tao et al. 2023).

    ``p_j = max{p_k : p_k < p_y}`` (0 if no class is less probable than the target).

    {signature}
    >>> logits = torch.log(torch.tensor([[1.0, 2.0, 1.0]]))  # p = (1/4, 1/2, 1/4)
    >>> dual_focal_loss(logits, torch.tensor([1]), gamma=1.0)  # (1 - 1/2 + 1/4) log 2
    tensor(0.5199)
    """
    return _focal_form(logits, targets, gamma, reduction, alpha, _one_minus_p_y_plus_p_j)


class GammaLoss(nn.Module):
    """``function(logits, targets, gamma, reduction, alpha)`` as a module.

    Parameters
    ----------
    function : callable
        The loss function, e.g. :func:`focal_loss`.
    gamma, reduction, alpha
        As in :class:`FocalLoss` (``alpha`` shown by ``repr`` only when set).

    Examples
    --------
    >>> GammaLoss(focal_loss, 1.0, "mean", alpha=[1, 3])
    GammaLoss(gamma=1.0, reduction='mean', alpha=(1.0, 3.0))
    """

    def __init__(
        self,
        function: Callable[[Tensor, Tensor, float, Reduction, Alpha], Tensor],
        gamma: float,
        reduction: Reduction,
        alpha: object = None,
    ) -> None:
        super().__init__()
        self.function = function
        self.gamma = GAMMA.check("gamma", gamma)
        self.reduction = check_reduction(reduction)
        self.alpha: Alpha = ALPHA.check("alpha", alpha)

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        return self.function(logits, targets, self.gamma, self.reduction, self.alpha)

    def extra_repr(self) -> str:
        alpha = "" if self.alpha is None else f", alpha={self.alpha}"
        return f"gamma={self.gamma}, reduction={self.reduction!r}{alpha}"


@LOSSES.register("focal", params=GAMMA_PARAMS)
@fill_doc(parameters=MODULE_PARAMETERS)
class FocalLoss(GammaLoss):
    """Focal loss ``-(1 - p_y)^gamma log p_y``; default ``gamma = 3`` (FL-3, Mukhoti et al.).

    {parameters}
    >>> FocalLoss(gamma=1.0)(torch.zeros(1, 2), torch.tensor([0]))  # 0.5 log 2
    tensor(0.3466)
    >>> FocalLoss(gamma=1.0, alpha=0.25)(torch.zeros(1, 2), torch.tensor([1]))  # 0.25 * that
    tensor(0.0866)
    """

    def __init__(
        self, gamma: float = 3.0, reduction: Reduction = "mean", alpha: object = None
    ) -> None:
        super().__init__(focal_loss, gamma, reduction, alpha)


@LOSSES.register("adaptive_focal", params=GAMMA_PARAMS)
@fill_doc(parameters=MODULE_PARAMETERS)
class AdaptiveFocalLoss(GammaLoss):
    """FLSD-53: ``gamma`` 5 if ``p_y < 0.2``, 3 if ``p_y < 0.5``, else ``gamma`` (default 3).

    {parameters}
    >>> AdaptiveFocalLoss()(torch.zeros(1, 2), torch.tensor([0]))  # 0.5^3 log 2
    tensor(0.0866)
    """

    def __init__(
        self, gamma: float = 3.0, reduction: Reduction = "mean", alpha: object = None
    ) -> None:
        super().__init__(adaptive_focal_loss, gamma, reduction, alpha)


@LOSSES.register("inverse_focal", params=GAMMA_PARAMS)
@fill_doc(parameters=MODULE_PARAMETERS)
class InverseFocalLoss(GammaLoss):
    """Inverse focal loss ``-(1 + p_y)^gamma log p_y`` (Wang et al. 2021); default gamma 2.

    {parameters}
    >>> loss = InverseFocalLoss(gamma=1.0)
    >>> loss
    InverseFocalLoss(gamma=1.0, reduction='mean')
    >>> loss(torch.zeros(1, 2), torch.tensor([0]))  # 1.5 log 2
    tensor(1.0397)
    """

    def __init__(
        self, gamma: float = 2.0, reduction: Reduction = "mean", alpha: object = None
    ) -> None:
        super().__init__(inverse_focal_loss, gamma, reduction, alpha)


@LOSSES.register("dual_focal", params=GAMMA_PARAMS)
@fill_doc(parameters=MODULE_PARAMETERS)
class DualFocalLoss(GammaLoss):
    """Dual focal loss ``-(1 - p_y + p_j)^gamma log p_y`` (Tao et al. 2023); default gamma 2.

    ``p_j`` is the largest probability below ``p_y`` (see the module docstring).

    {parameters}
    >>> DualFocalLoss(gamma=1.0)(torch.zeros(1, 2), torch.tensor([0]))  # no p_j: 0.5 log 2
    tensor(0.3466)
    """

    def __init__(
        self, gamma: float = 2.0, reduction: Reduction = "mean", alpha: object = None
    ) -> None:
        super().__init__(dual_focal_loss, gamma, reduction, alpha)
