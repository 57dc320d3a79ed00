"""Conformal prediction sets as a torch module: logits in, a boolean mask out.

:meth:`ConformalClassifier.to_module <calibkit.calibrators.conformal.ConformalClassifier.to_module>`
returns a :class:`ConformalSets`: the calibrator's module (or a softmax) gives float64
probabilities, the score of every class is computed as
:func:`~calibkit.calibrators.conformal.set_scores` computes it, and a class is in the set
when its score is at or below its stored threshold. A randomised score takes the uniform
``u`` (one value in [0, 1) per row) as a second input: ``module(logits, u)``.

The ranking uses pairwise comparisons instead of a sort (the same tie rule as numpy's
stable sort: equal probabilities rank the lower class index first), so it scripts, exports
and runs in ONNX without a sort; memory is O(N K^2) per batch. The cumulative sums are
added in class order rather than rank order, so a score may differ from ``set_scores``'s by
a few units in the last place: a class whose score equals the threshold to 1e-15 may be
decided differently. A row with a NaN or infinite logit has NaN scores and an empty set.

>>> m = ConformalSets(softmax_module(2), "lac", np.array([0.6, 0.6]), False)
>>> m(torch.tensor([[0.0, 1.0]])).tolist()
[[False, True]]
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import torch
from torch import Tensor, nn

from calibkit.calibrators.modules import softmax_module

__all__ = [
    "ConformalPredictor",
    "ConformalSets",
    "RandomizedConformalPredictor",
    "RandomizedConformalSets",
    "pairwise_scores",
    "softmax_module",
]


def pairwise_scores(
    p: Tensor, u: Tensor, score: str, penalty: float, k_reg: int, weight: float
) -> Tensor:
    """Every class's non-conformity score, ``(N, K)``, ranked by pairwise comparisons."""
    if score == "lac":
        return 1.0 - p
    k = p.shape[1]
    index = torch.arange(k, device=p.device)
    earlier = (index.unsqueeze(1) < index.unsqueeze(0)).unsqueeze(0)  # [i, j]: i < j
    pi, pj = p.unsqueeze(2), p.unsqueeze(1)
    ahead = (pi > pj) | ((pi == pj) & earlier)  # [n, i, j]: class i ranked before class j
    rank = ahead.to(p.dtype).sum(dim=1) + 1.0
    uu = u.to(p.dtype).unsqueeze(1)
    if score == "saps":
        top = p.max(dim=1, keepdim=True).values
        return torch.where(rank == 1.0, (1.0 - uu) * top, top + weight * (rank - 1.0 - uu))
    before = (ahead.to(p.dtype) * pi).sum(dim=1)
    out = before + (1.0 - uu) * p
    if score == "raps":
        out = out + penalty * torch.clamp(rank - float(k_reg), min=0.0)
    return out


class ConformalSets(nn.Module):
    """Prediction sets: ``probabilities(logits)`` scored, compared with ``thresholds``.

    Parameters
    ----------
    probabilities : nn.Module
        Logits to probabilities (a calibrator's ``to_module()``, or :func:`softmax_module`).
    score : str
        ``"lac"``, ``"aps"``, ``"raps"`` or ``"saps"``.
    thresholds : ndarray of shape (K,)
        Each class's quantile (``inf``: always in the set).
    randomized : bool
        Whether ``forward`` takes ``u``; use :class:`RandomizedConformalSets` for that.
    penalty, k_reg, weight
        RAPS's and SAPS's parameters.

    Examples
    --------
    >>> m = ConformalSets(softmax_module(3), "lac", np.array([0.7, 0.7, 0.7]), False)
    >>> m(torch.tensor([[2.0, 1.0, -3.0], [0.0, 0.0, 0.0]])).tolist()
    [[True, False, False], [True, True, True]]
    """

    def __init__(
        self,
        probabilities: nn.Module,
        score: str,
        thresholds: npt.NDArray[np.float64],
        randomized: bool,
        penalty: float = 0.0,
        k_reg: int = 0,
        weight: float = 0.2,
    ) -> None:
        super().__init__()
        self.probabilities = probabilities
        self.score = score
        self.randomized = randomized
        self.penalty, self.k_reg, self.weight = float(penalty), int(k_reg), float(weight)
        self.thresholds: Tensor
        self.register_buffer("thresholds", torch.tensor(np.asarray(thresholds, np.float64)))

    def sets(self, logits: Tensor, u: Tensor) -> Tensor:
        p = self.probabilities(logits)
        s = pairwise_scores(p, u, self.score, self.penalty, self.k_reg, self.weight)
        return s <= self.thresholds.unsqueeze(0)

    def forward(self, logits: Tensor) -> Tensor:
        if self.randomized:
            raise ValueError("a randomised score: call RandomizedConformalSets(logits, u)")
        return self.sets(logits, torch.zeros(logits.shape[0], dtype=torch.float64))


class RandomizedConformalSets(ConformalSets):
    """:class:`ConformalSets` of a randomised score: ``forward(logits, u)``.

    Parameters
    ----------
    probabilities, score, thresholds, randomized, penalty, k_reg, weight
        As :class:`ConformalSets` (``randomized=True``).

    Examples
    --------
    >>> m = RandomizedConformalSets(softmax_module(2), "aps", np.array([0.5, 0.5]), True)
    >>> u = torch.tensor([0.0, 1.0], dtype=torch.float64)  # score: mass to the class, less u p
    >>> m(torch.tensor([[0.0, 3.0], [0.0, 3.0]]), u).tolist()
    [[False, False], [False, True]]
    """

    def forward(self, logits: Tensor, u: Tensor) -> Tensor:  # type: ignore[override]
        if u.dim() != 1 or u.shape[0] != logits.shape[0]:
            raise ValueError("u: expected one uniform value per row of logits")
        return self.sets(logits, u)


class ConformalPredictor(nn.Module):
    """The three answers of a fitted conformal predictor in one module: ``forward(logits)``
    returns ``(probs, sets, accept)``: the calibrated probabilities (float64), the
    prediction sets (as :class:`ConformalSets`) and whether each row's top-label
    confidence is at or above ``confidence_threshold`` (answer, else abstain).

    Parameters
    ----------
    probabilities, score, thresholds, penalty, k_reg, weight
        As :class:`ConformalSets`.
    confidence_threshold : float
        The selective threshold (:meth:`ConformalClassifier.selective
        <calibkit.calibrators.conformal.ConformalClassifier.selective>`).

    Examples
    --------
    >>> m = ConformalPredictor(softmax_module(2), "lac", np.array([0.6, 0.6]), 0.7)
    >>> probs, sets, accept = m(torch.tensor([[0.0, 1.0], [0.0, 0.1]]))
    >>> sets.tolist(), accept.tolist()
    ([[False, True], [True, True]], [True, False])
    """

    randomized: bool = False

    def __init__(
        self,
        probabilities: nn.Module,
        score: str,
        thresholds: npt.NDArray[np.float64],
        confidence_threshold: float,
        penalty: float = 0.0,
        k_reg: int = 0,
        weight: float = 0.2,
    ) -> None:
        super().__init__()
        self.probabilities = probabilities
        self.score = score
        self.penalty, self.k_reg, self.weight = float(penalty), int(k_reg), float(weight)
        self.thresholds: Tensor
        self.register_buffer("thresholds", torch.tensor(np.asarray(thresholds, np.float64)))
        self.confidence_threshold: Tensor
        self.register_buffer(
            "confidence_threshold", torch.tensor(float(confidence_threshold), dtype=torch.float64)
        )

    def answers(self, logits: Tensor, u: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        p = self.probabilities(logits)
        s = pairwise_scores(p, u, self.score, self.penalty, self.k_reg, self.weight)
        accept = p.max(dim=1).values >= self.confidence_threshold
        return p, s <= self.thresholds.unsqueeze(0), accept

    def forward(self, logits: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        return self.answers(logits, torch.zeros(logits.shape[0], dtype=torch.float64))


class RandomizedConformalPredictor(ConformalPredictor):
    """:class:`ConformalPredictor` of a randomised score: ``forward(logits, u)``.

    Parameters
    ----------
    probabilities, score, thresholds, confidence_threshold, penalty, k_reg, weight
        As :class:`ConformalPredictor`.

    Examples
    --------
    >>> m = RandomizedConformalPredictor(softmax_module(2), "aps", np.array([0.5, 0.5]), 0.9)
    >>> u = torch.tensor([0.0, 1.0], dtype=torch.float64)
    >>> m(torch.tensor([[0.0, 3.0], [0.0, 3.0]]), u)[1].tolist()
    [[False, False], [False, True]]
    """

    randomized: bool = True

    def forward(  # type: ignore[override]
        self, logits: Tensor, u: Tensor
    ) -> tuple[Tensor, Tensor, Tensor]:
        if u.dim() != 1 or u.shape[0] != logits.shape[0]:
            raise ValueError("u: expected one uniform value per row of logits")
        return self.answers(logits, u)
