"""Cross-entropy, label smoothing and the Brier score, plus the checks every loss shares.

All losses take raw ``logits`` of shape ``(N, K)`` and integer ``targets`` of shape ``(N,)``
(int64, values in ``[0, K)``) and work from ``log p = F.log_softmax(logits)``; probabilities
are ``p = exp(log p)``, never ``softmax`` followed by ``log``. ``reduction`` is ``"mean"``
(default), ``"sum"`` or ``"none"`` (the ``(N,)`` per-sample values). The examples use
``logits = torch.zeros(1, 2)`` where they can: ``p = (0.5, 0.5)``, cross-entropy ``log 2``.

- cross-entropy: ``-log p_y``
- label smoothing (Szegedy et al. 2016): cross-entropy against the smoothed target
  ``q = (1 - eps) onehot(y) + eps / K``, i.e. ``-(1 - eps) log p_y - (eps / K) sum_k log p_k``
- Brier score (Brier 1950): ``sum_k (p_k - onehot(y)_k)^2``

>>> logits = torch.tensor([[2.0, 0.0], [0.0, 1.0]])
>>> targets = torch.tensor([0, 0])
>>> round(float(cross_entropy(logits, targets)), 4)
0.7201
>>> label_smoothing_loss(logits, targets, epsilon=0.0, reduction="none")
tensor([0.1269, 1.3133])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from calibkit.core.docs import fill_doc
from calibkit.core.errors import InputError
from calibkit.core.validation import FRACTION, Choice, check_fraction
from calibkit.losses.registry import LOSSES

Reduction = Literal["mean", "sum", "none"]
REDUCTIONS: tuple[str, ...] = ("mean", "sum", "none")


REDUCTION = Choice(*REDUCTIONS)


#: The Parameters section of CrossEntropyLoss and BrierLoss, and the Examples header.
_PARAMETERS = """Parameters
----------
reduction : {"mean", "sum", "none"}
    How to reduce the per-sample losses.

Examples
--------"""


#: The Returns section of the losses' functions, and the Examples header.
_RETURNS_LOSS = """Returns
-------
Tensor
    The loss (shape ``(N,)`` for ``"none"``).

Examples
--------"""


def check_reduction(reduction: object) -> Reduction:
    """``"mean"``, ``"sum"`` or ``"none"``, else InputError.

    Parameters
    ----------
    reduction : object
        The value to check.

    Returns
    -------
    {"mean", "sum", "none"}
        ``reduction`` itself.

    Examples
    --------
    >>> check_reduction("sum")
    'sum'
    """
    return REDUCTION.check("reduction", reduction)  # type: ignore[no-any-return]


def check_inputs(logits: object, targets: object) -> None:
    """Check shapes and dtypes (no device sync), else InputError.

    ``logits`` must be a floating ``(N, K)`` tensor with ``N, K >= 1`` and ``targets`` an
    int64 ``(N,)`` tensor; target values are not range-checked here (``gather`` raises).

    Parameters
    ----------
    logits, targets : object
        The loss inputs.

    Examples
    --------
    >>> check_inputs(torch.zeros(2, 3), torch.tensor([0, 2]))
    >>> try:
    ...     check_inputs(torch.zeros(2, 3), torch.tensor([0.0, 2.0]))
    ... except InputError as err:
    ...     print(err.argument)
    targets
    """
    if not isinstance(logits, Tensor) or logits.ndim != 2 or not logits.is_floating_point():
        got = f"{type(logits).__name__} {_describe(logits)}"
        raise InputError("logits", "a floating-point tensor of shape (N, K)", got)
    if logits.shape[0] < 1 or logits.shape[1] < 1:
        raise InputError("logits", "at least one sample and one class", _describe(logits))
    if not isinstance(targets, Tensor) or targets.dtype != torch.int64 or targets.ndim != 1:
        got = f"{type(targets).__name__} {_describe(targets)}"
        raise InputError("targets", "an int64 tensor of shape (N,)", got)
    if targets.shape[0] != logits.shape[0]:
        expected = f"{logits.shape[0]} values (one per row of logits)"
        raise InputError("targets", expected, str(targets.shape[0]))


def log_probs(logits: Tensor, targets: Tensor) -> Tensor:
    """``F.log_softmax(logits, dim=1)`` after :func:`check_inputs`.

    Parameters
    ----------
    logits, targets : Tensor
        Logits ``(N, K)`` and int64 targets ``(N,)``.

    Returns
    -------
    Tensor of shape (N, K)
        Log-probabilities.

    Examples
    --------
    >>> log_probs(torch.zeros(1, 2), torch.tensor([0]))
    tensor([[-0.6931, -0.6931]])
    """
    check_inputs(logits, targets)
    return F.log_softmax(logits, dim=1)


def _describe(x: object) -> str:
    if isinstance(x, Tensor):
        return f"shape {tuple(x.shape)}, dtype {str(x.dtype).removeprefix('torch.')}"
    return repr(x)


def target_log_prob(logp: Tensor, targets: Tensor) -> Tensor:
    """``log p_y`` per sample, shape ``(N,)``.

    Parameters
    ----------
    logp : Tensor of shape (N, K)
        Log-probabilities.
    targets : Tensor of shape (N,)
        int64 targets.

    Returns
    -------
    Tensor of shape (N,)
        The target's log-probability.

    Examples
    --------
    >>> target_log_prob(torch.tensor([[-0.1, -2.0], [-3.0, -0.2]]), torch.tensor([1, 1]))
    tensor([-2.0000, -0.2000])
    """
    return logp.gather(1, targets[:, None])[:, 0]


def reduce(loss: Tensor, reduction: Reduction) -> Tensor:
    """Mean, sum or the per-sample tensor itself.

    Parameters
    ----------
    loss : Tensor of shape (N,)
        Per-sample values.
    reduction : {"mean", "sum", "none"}
        How to reduce.

    Returns
    -------
    Tensor
        A scalar, or ``loss`` for ``"none"``.

    Examples
    --------
    >>> reduce(torch.tensor([1.0, 3.0]), "mean")
    tensor(2.)
    """
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


@fill_doc(returns=_RETURNS_LOSS)
def cross_entropy(logits: Tensor, targets: Tensor, reduction: Reduction = "mean") -> Tensor:
    """Cross-entropy ``-log p_y``.

    Parameters
    ----------
    logits : Tensor of shape (N, K)
        Raw scores.
    targets : Tensor of shape (N,)
        int64 class indices.
    reduction : {"mean", "sum", "none"}
        How to reduce the per-sample losses.

    {returns}
    >>> cross_entropy(torch.zeros(1, 2), torch.tensor([0]))  # log 2
    tensor(0.6931)
    """
    reduction = check_reduction(reduction)
    return reduce(-target_log_prob(log_probs(logits, targets), targets), reduction)


@fill_doc(returns=_RETURNS_LOSS)
def label_smoothing_loss(
    logits: Tensor, targets: Tensor, epsilon: float, reduction: Reduction = "mean"
) -> Tensor:
    """Cross-entropy against ``(1 - eps) onehot(y) + eps / K`` (Szegedy et al. 2016).

    Per sample: ``-(1 - eps) log p_y - (eps / K) sum_k log p_k``; ``eps = 0`` is cross-entropy.

    Parameters
    ----------
    logits, targets, reduction
        As in :func:`cross_entropy`.
    epsilon : float
        Smoothing in ``[0, 1)``.

    {returns}
    >>> import math
    >>> logits = torch.tensor([[0.0, math.log(3.0)]])  # p = (1/4, 3/4)
    >>> loss = label_smoothing_loss(logits, torch.tensor([1]), epsilon=0.5)
    >>> round(float(loss), 4), round(-0.75 * math.log(0.75) - 0.25 * math.log(0.25), 4)
    (0.5623, 0.5623)
    """
    epsilon = check_fraction("epsilon", epsilon)
    reduction = check_reduction(reduction)
    logp = log_probs(logits, targets)
    loss = -(1.0 - epsilon) * target_log_prob(logp, targets) - epsilon * logp.mean(dim=1)
    return reduce(loss, reduction)


@fill_doc(returns=_RETURNS_LOSS)
def brier_loss(logits: Tensor, targets: Tensor, reduction: Reduction = "mean") -> Tensor:
    """Brier score (Brier 1950): ``sum_k (p_k - onehot(y)_k)^2`` per sample, in ``[0, 2]``.

    Parameters
    ----------
    logits, targets, reduction
        As in :func:`cross_entropy`.

    {returns}
    >>> brier_loss(torch.zeros(1, 2), torch.tensor([0]))  # 0.5^2 + 0.5^2
    tensor(0.5000)
    """
    reduction = check_reduction(reduction)
    p = log_probs(logits, targets).exp()
    onehot = F.one_hot(targets, p.shape[1]).to(p.dtype)
    return reduce((p - onehot).square().sum(dim=1), reduction)


class _ReducedLoss(nn.Module):
    """``function(logits, targets, reduction)`` as a module."""

    def __init__(
        self, function: Callable[[Tensor, Tensor, Reduction], Tensor], reduction: Reduction
    ) -> None:
        super().__init__()
        self.function = function
        self.reduction = check_reduction(reduction)

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        return self.function(logits, targets, self.reduction)


@LOSSES.register("cross_entropy", params={"reduction": REDUCTION})
@fill_doc(parameters=_PARAMETERS)
class CrossEntropyLoss(_ReducedLoss):
    """Cross-entropy ``-log p_y`` as a module (see :func:`cross_entropy`).

    {parameters}
    >>> CrossEntropyLoss()(torch.zeros(1, 2), torch.tensor([0]))
    tensor(0.6931)
    """

    def __init__(self, reduction: Reduction = "mean") -> None:
        super().__init__(cross_entropy, reduction)


@LOSSES.register("label_smoothing", params={"epsilon": FRACTION, "reduction": REDUCTION})
class LabelSmoothingLoss(nn.Module):
    """Label-smoothed cross-entropy, ``epsilon`` in [0, 1); see :func:`label_smoothing_loss`.

    Parameters
    ----------
    epsilon : float
        Smoothing in ``[0, 1)``.
    reduction : {"mean", "sum", "none"}
        How to reduce the per-sample losses.

    Examples
    --------
    >>> LabelSmoothingLoss(0.1)(torch.zeros(1, 2), torch.tensor([0]))  # log 2 for any epsilon
    tensor(0.6931)
    """

    def __init__(self, epsilon: float = 0.1, reduction: Reduction = "mean") -> None:
        super().__init__()
        self.epsilon = check_fraction("epsilon", epsilon)
        self.reduction = check_reduction(reduction)

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        return label_smoothing_loss(logits, targets, self.epsilon, self.reduction)

    def extra_repr(self) -> str:
        return f"epsilon={self.epsilon}, reduction={self.reduction!r}"


@LOSSES.register("brier", params={"reduction": REDUCTION})
@fill_doc(parameters=_PARAMETERS)
class BrierLoss(_ReducedLoss):
    """Brier score of the softmax probabilities (see :func:`brier_loss`).

    {parameters}
    >>> BrierLoss(reduction="none")(torch.zeros(2, 2), torch.tensor([0, 1]))
    tensor([0.5000, 0.5000])
    """

    def __init__(self, reduction: Reduction = "mean") -> None:
        super().__init__(brier_loss, reduction)
