"""Cross-entropy, label smoothing and the Brier score, plus the checks every loss shares.

All losses take raw ``logits`` of shape ``(N, K)`` and integer ``targets`` of shape ``(N,)``
(int64, values in ``[0, K)``) and work from ``log p = F.log_softmax(logits)``; probabilities
are ``p = exp(log p)``, never ``softmax`` followed by ``log``. ``reduction`` is ``"mean"``
(default), ``"sum"`` or ``"none"`` (the ``(N,)`` per-sample values).

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

from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from calibkit.core.errors import InputError
from calibkit.core.validation import FRACTION, Choice, check_fraction
from calibkit.losses.registry import LOSSES

Reduction = Literal["mean", "sum", "none"]
REDUCTIONS: tuple[str, ...] = ("mean", "sum", "none")
REDUCTION = Choice(*REDUCTIONS)


def check_reduction(reduction: object) -> Reduction:
    """``"mean"``, ``"sum"`` or ``"none"``, else InputError."""
    return REDUCTION.check("reduction", reduction)  # type: ignore[no-any-return]


def check_inputs(logits: object, targets: object) -> None:
    """Check shapes and dtypes (no device sync), else InputError.

    ``logits`` must be a floating ``(N, K)`` tensor with ``N, K >= 1`` and ``targets`` an
    int64 ``(N,)`` tensor; target values are not range-checked here (``gather`` raises).
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
    """``F.log_softmax(logits, dim=1)`` after :func:`check_inputs`."""
    check_inputs(logits, targets)
    return F.log_softmax(logits, dim=1)


def _describe(x: object) -> str:
    if isinstance(x, Tensor):
        return f"shape {tuple(x.shape)}, dtype {str(x.dtype).removeprefix('torch.')}"
    return repr(x)


def target_log_prob(logp: Tensor, targets: Tensor) -> Tensor:
    """``log p_y`` per sample, shape ``(N,)``."""
    return logp.gather(1, targets[:, None])[:, 0]


def reduce(loss: Tensor, reduction: Reduction) -> Tensor:
    """Mean, sum or the per-sample tensor itself."""
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def cross_entropy(logits: Tensor, targets: Tensor, reduction: Reduction = "mean") -> Tensor:
    """Cross-entropy ``-log p_y``."""
    reduction = check_reduction(reduction)
    return reduce(-target_log_prob(log_probs(logits, targets), targets), reduction)


def label_smoothing_loss(
    logits: Tensor, targets: Tensor, epsilon: float, reduction: Reduction = "mean"
) -> Tensor:
    """Cross-entropy against ``(1 - eps) onehot(y) + eps / K`` (Szegedy et al. 2016).

    Per sample: ``-(1 - eps) log p_y - (eps / K) sum_k log p_k``; ``eps = 0`` is cross-entropy.
    """
    epsilon = check_fraction("epsilon", epsilon)
    reduction = check_reduction(reduction)
    logp = log_probs(logits, targets)
    loss = -(1.0 - epsilon) * target_log_prob(logp, targets) - epsilon * logp.mean(dim=1)
    return reduce(loss, reduction)


def brier_loss(logits: Tensor, targets: Tensor, reduction: Reduction = "mean") -> Tensor:
    """Brier score (Brier 1950): ``sum_k (p_k - onehot(y)_k)^2`` per sample, in ``[0, 2]``."""
    reduction = check_reduction(reduction)
    p = log_probs(logits, targets).exp()
    onehot = F.one_hot(targets, p.shape[1]).to(p.dtype)
    return reduce((p - onehot).square().sum(dim=1), reduction)


@LOSSES.register("cross_entropy", params={"reduction": REDUCTION})
class CrossEntropyLoss(nn.Module):
    """Cross-entropy ``-log p_y`` as a module (see :func:`cross_entropy`)."""

    def __init__(self, reduction: Reduction = "mean") -> None:
        super().__init__()
        self.reduction = check_reduction(reduction)

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        return cross_entropy(logits, targets, self.reduction)


@LOSSES.register("label_smoothing", params={"epsilon": FRACTION, "reduction": REDUCTION})
class LabelSmoothingLoss(nn.Module):
    """Label-smoothed cross-entropy, ``epsilon`` in [0, 1); see :func:`label_smoothing_loss`."""

    def __init__(self, epsilon: float = 0.1, reduction: Reduction = "mean") -> None:
        super().__init__()
        self.epsilon = check_fraction("epsilon", epsilon)
        self.reduction = check_reduction(reduction)

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        return label_smoothing_loss(logits, targets, self.epsilon, self.reduction)

    def extra_repr(self) -> str:
        return f"epsilon={self.epsilon}, reduction={self.reduction!r}"


@LOSSES.register("brier", params={"reduction": REDUCTION})
class BrierLoss(nn.Module):
    """Brier score of the softmax probabilities (see :func:`brier_loss`)."""

    def __init__(self, reduction: Reduction = "mean") -> None:
        super().__init__()
        self.reduction = check_reduction(reduction)

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        return brier_loss(logits, targets, self.reduction)
