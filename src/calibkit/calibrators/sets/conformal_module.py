"""Conformal prediction sets as a torch module: logits in, a boolean mask out.

:meth:`ConformalClassifier.to_module
<calibkit.calibrators.sets.conformal.ConformalClassifier.to_module>` returns
a :class:`ConformalSets`: the calibrator's module (or a softmax) gives float64
probabilities, the score object (:mod:`~calibkit.calibrators.sets.conformal_scores`, a module)
computes every class's score with its torch half, and a class is in the set when its score
is at or below its stored threshold. A randomised score takes the uniform ``u`` (one value
in [0, 1) per row) as a second input: ``module(logits, u)``; any other ``u`` is refused as
``predict_set`` refuses it (:func:`check_uniform`, the one check of both).

The module scripts, exports and runs in ONNX (the torch halves rank without a sort, at
O(N K^2) memory: :mod:`~calibkit.calibrators.sets.conformal_scores`); a class whose score
equals the threshold to 1e-15 may be decided otherwise than by ``predict_set``. A row with
a NaN or infinite logit has NaN scores and an empty set.

>>> from calibkit.calibrators.sets.conformal_scores import LAC
>>> m = ConformalSets(softmax_module(2), LAC(), np.array([0.6, 0.6]), False)
>>> m(torch.tensor([[0.0, 1.0]])).tolist()
[[False, True]]
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import torch
from torch import Tensor, nn

from calibkit.calibrators.modules import softmax_module
from calibkit.calibrators.sets.conformal_scores import ConformalScore
from calibkit.core.errors import InputError

__all__ = [
    "ConformalPredictor",
    "ConformalSets",
    "RandomizedConformalPredictor",
    "RandomizedConformalSets",
    "check_uniform",
    "softmax_module",
]


@torch.jit.unused
def _refuse_u(u: Tensor, n: int, expected: str) -> None:
    """The InputError of :func:`check_uniform`, naming the shape or the first value refused."""
    if u.dim() != 1 or u.shape[0] != n:
        got = f"shape {tuple(u.shape)}"
    else:
        i = int(torch.nonzero(~((u >= 0.0) & (u < 1.0)))[0, 0])
        got = f"{float(u[i])!r} at index {i}"
    raise InputError("u", expected, got)


def check_uniform(u: Tensor, n: int) -> None:
    """Refuse ``u`` unless it holds ``n`` values in [0, 1) (NaN refused): the one check of
    the uniform draws of a randomised score, shared by
    :meth:`~calibkit.calibrators.sets.conformal.ConformalClassifier.predict_set` and the
    modules that take ``u``.

    Eager, it raises an :class:`~calibkit.core.errors.InputError` naming ``u`` and the
    first value refused; scripted, a ``ValueError``; in a ``torch.export`` program, a
    runtime assertion. An ONNX graph cannot raise: ONNX Runtime drops the assertion, so
    there a caller checks ``u`` itself.

    Examples
    --------
    >>> check_uniform(torch.tensor([0.0, 0.5]), 2)
    >>> check_uniform(torch.tensor([0.5, 1.5]), 2)
    Traceback (most recent call last):
    ...
    calibkit.core.errors.InputError: u: expected 2 values in [0, 1), one per row, got 1.5 at index 1
    """
    expected = str(n) + " values in [0, 1), one per row"
    if u.dim() != 1 or u.shape[0] != n:
        if torch.jit.is_scripting():  # type: ignore[attr-defined]
            raise ValueError("u: expected " + expected + ", got another shape")
        _refuse_u(u, n, expected)
    inside = (u >= 0.0) & (u < 1.0)  # False for NaN
    if torch.jit.is_scripting():  # type: ignore[attr-defined]
        if not bool(inside.all()):
            raise ValueError("u: expected " + expected + ", got other values")
    elif torch.compiler.is_exporting():
        torch._assert_async(inside.all(), "u: expected " + expected)
    elif not bool(inside.all()):
        _refuse_u(u, n, expected)


class ConformalSets(nn.Module):
    """Prediction sets: ``probabilities(logits)`` scored, compared with ``thresholds``.

    Parameters
    ----------
    probabilities : nn.Module
        Logits to probabilities (a calibrator's ``to_module()``, or :func:`softmax_module`).
    score : ConformalScore
        The score (an entry of :data:`~calibkit.calibrators.sets.conformal_scores.SCORES`,
        with its parameters).
    thresholds : ndarray of shape (K,)
        Each class's quantile (``inf``: always in the set).
    randomized : bool
        Whether ``forward`` takes ``u``; use :class:`RandomizedConformalSets` for that.

    Examples
    --------
    >>> from calibkit.calibrators.sets.conformal_scores import LAC
    >>> m = ConformalSets(softmax_module(3), LAC(), np.array([0.7, 0.7, 0.7]), False)
    >>> m(torch.tensor([[2.0, 1.0, -3.0], [0.0, 0.0, 0.0]])).tolist()
    [[True, False, False], [True, True, True]]
    """

    def __init__(
        self,
        probabilities: nn.Module,
        score: ConformalScore,
        thresholds: npt.NDArray[np.float64],
        randomized: bool,
    ) -> None:
        super().__init__()
        if randomized and not score.randomizable:
            raise InputError(
                "randomized", f"False for {score.name!r} (no randomised variant)", "True"
            )
        self.probabilities = probabilities
        self.score = score
        self.randomized = randomized
        self.thresholds: Tensor
        self.register_buffer("thresholds", torch.tensor(np.asarray(thresholds, np.float64)))

    def sets(self, logits: Tensor, u: Tensor) -> Tensor:
        p = self.probabilities(logits)
        scores: Tensor = self.score(p, u)  # the score's torch half
        return scores <= self.thresholds.unsqueeze(0)

    def forward(self, logits: Tensor) -> Tensor:
        if self.randomized:
            raise ValueError("a randomised score: call RandomizedConformalSets(logits, u)")
        return self.sets(logits, torch.zeros(logits.shape[0], dtype=torch.float64))


class RandomizedConformalSets(ConformalSets):
    """:class:`ConformalSets` of a randomised score: ``forward(logits, u)``.

    Parameters
    ----------
    probabilities, score, thresholds, randomized
        As :class:`ConformalSets` (``randomized=True``).

    Examples
    --------
    >>> from calibkit.calibrators.sets.conformal_scores import APS
    >>> m = RandomizedConformalSets(softmax_module(2), APS(), np.array([0.5, 0.5]), True)
    >>> u = torch.tensor([0.0, 0.9], dtype=torch.float64)  # score: mass to the class, less u p
    >>> m(torch.tensor([[0.0, 3.0], [0.0, 3.0]]), u).tolist()
    [[False, False], [False, True]]
    """

    def forward(self, logits: Tensor, u: Tensor) -> Tensor:  # type: ignore[override]
        check_uniform(u, logits.shape[0])
        return self.sets(logits, u)


class ConformalPredictor(ConformalSets):
    """The three answers of a fitted conformal predictor in one module: ``forward(logits)``
    returns ``(probs, sets, accept)``: the calibrated probabilities (float64), the
    prediction sets (as :class:`ConformalSets`) and whether each row's top-label
    confidence is at or above ``confidence_threshold`` (answer, else abstain).

    Parameters
    ----------
    probabilities, score, thresholds
        As :class:`ConformalSets`.
    confidence_threshold : float
        The selective threshold (:meth:`ConformalClassifier.selective
        <calibkit.calibrators.sets.conformal.ConformalClassifier.selective>`).
    randomized : bool
        Use :class:`RandomizedConformalPredictor` for a randomised score.

    Examples
    --------
    >>> from calibkit.calibrators.sets.conformal_scores import LAC
    >>> m = ConformalPredictor(softmax_module(2), LAC(), np.array([0.6, 0.6]), 0.7)
    >>> probs, sets, accept = m(torch.tensor([[0.0, 1.0], [0.0, 0.1]]))
    >>> sets.tolist(), accept.tolist()
    ([[False, True], [True, True]], [True, False])
    """

    def __init__(
        self,
        probabilities: nn.Module,
        score: ConformalScore,
        thresholds: npt.NDArray[np.float64],
        confidence_threshold: float,
        randomized: bool = False,
    ) -> None:
        super().__init__(probabilities, score, thresholds, randomized)
        self.confidence_threshold: Tensor
        self.register_buffer(
            "confidence_threshold", torch.tensor(float(confidence_threshold), dtype=torch.float64)
        )

    def answers(self, logits: Tensor, u: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        p = self.probabilities(logits)
        scores: Tensor = self.score(p, u)
        accept = p.max(dim=1).values >= self.confidence_threshold
        return p, scores <= self.thresholds.unsqueeze(0), accept

    def forward(self, logits: Tensor) -> tuple[Tensor, Tensor, Tensor]:  # type: ignore[override]
        if self.randomized:
            raise ValueError("a randomised score: call RandomizedConformalPredictor(logits, u)")
        return self.answers(logits, torch.zeros(logits.shape[0], dtype=torch.float64))


class RandomizedConformalPredictor(ConformalPredictor):
    """:class:`ConformalPredictor` of a randomised score: ``forward(logits, u)``.

    Parameters
    ----------
    probabilities, score, thresholds, confidence_threshold, randomized
        As :class:`ConformalPredictor` (``randomized=True``).

    Examples
    --------
    >>> from calibkit.calibrators.sets.conformal_scores import APS
    >>> m = RandomizedConformalPredictor(softmax_module(2), APS(), np.array([0.5, 0.5]), 0.9, True)
    >>> u = torch.tensor([0.0, 0.9], dtype=torch.float64)
    >>> m(torch.tensor([[0.0, 3.0], [0.0, 3.0]]), u)[1].tolist()
    [[False, False], [False, True]]
    """

    def forward(  # type: ignore[override]
        self, logits: Tensor, u: Tensor
    ) -> tuple[Tensor, Tensor, Tensor]:
        check_uniform(u, logits.shape[0])
        return self.answers(logits, u)
