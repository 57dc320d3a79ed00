"""The calibration / refinement split of a proper score (NLL or Brier).

``score = calibration + refinement``, where ``refinement`` is the score after the best
temperature for that score, fitted in-sample on the same outputs, and ``calibration`` is
the part that temperature removes. The family is temperature scaling, the post-hoc method
by which Wang, Feng & Zhang (2021) judge how "calibratable" a model is: a low refinement
means a model that is good once recalibrated, whatever its raw calibration.

The temperature ``T = 1 / beta`` rescales the logits (or the log-probabilities when only
probabilities are given); ``beta`` is a root of the score's derivative in ``beta``, found
downhill from ``beta = 1`` (bracketed by doubling or halving, then Brent's method, within
``2**-20 .. 2**20``). The NLL is convex in ``beta``, so its root is the global minimum;
for the Brier score it is the nearest local minimum downhill. In-sample, so optimistic:
the calibration part is what recalibration on this very data could remove. Guarantees:
``calibration >= 0`` (when the fitted temperature does not lower the score, ``T = 1``),
and a decrease below ``1e-12`` of the score counts as rounding, so outputs already at
their best temperature get ``calibration == 0.0`` and ``T == 1.0`` exactly.

Scores are those of :mod:`calibkit.metrics.scores`: NLL in nats and the multiclass Brier
score (summed over classes, in [0, 2]).

Outputs whose confidence is 0.8 and accuracy 0.75: the best temperature brings the
confidence to 0.75, and the Brier calibration part is ``2 * (0.8 - 0.75) ** 2``.

>>> d = score_decomposition([1, 1, 1, 0], probs=[[0.2, 0.8]] * 4, score="brier")
>>> round(d.value, 6), round(d.calibration, 6), round(d.refinement, 6)
(0.38, 0.005, 0.375)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from calibkit.core.errors import InputError
from calibkit.core.outputs import as_outputs, log_softmax64
from calibkit.metrics.samples import (
    F64,
    brier_per_sample,
    check_weight,
    nll_per_sample,
    weighted_mean,
)

Score = Literal["nll", "brier"]
SCORES: tuple[str, ...] = ("nll", "brier")
#: Relative decrease of the score below which the fitted temperature counts as 1.
ROUNDING = 1e-12
#: ``beta`` is searched in ``2**-LIMIT .. 2**LIMIT``.
LIMIT = 20


@dataclass(frozen=True)
class ScoreDecomposition:
    """A proper score split into the part a temperature removes and the rest.

    Attributes
    ----------
    score : {"nll", "brier"}
        Which score.
    value : float
        The score of the outputs.
    calibration : float
        ``value - refinement``: what the in-sample temperature removes (>= 0).
    refinement : float
        The score after the in-sample temperature.
    temperature : float
        That temperature (1.0 when it does not lower the score).

    Examples
    --------
    >>> probs = [[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.3, 0.7]]
    >>> nll = score_decomposition([0, 1, 1, 1], probs=probs)
    >>> nll.score, round(nll.value, 4), round(nll.calibration + nll.refinement, 4)
    ('nll', 0.4004, 0.4004)
    """

    score: str
    value: float
    calibration: float
    refinement: float
    temperature: float


class _Scaled:
    """The score and its derivative at ``beta`` for logits ``z`` and labels ``y``
    (probabilities ``softmax(beta * z)``: renormalised, should the inputs not sum to 1)."""

    def __init__(self, z: F64, y: np.ndarray, weight: F64, score: str) -> None:
        self.z, self.y, self.w, self.score = z, y, weight / weight.sum(), score
        self.z_y = np.take_along_axis(z, y[:, None], axis=1)[:, 0]

    def _probs(self, beta: float) -> tuple[F64, F64]:
        log_p = log_softmax64(beta * self.z)
        return log_p, np.exp(log_p)

    def value(self, beta: float) -> float:
        log_p, p = self._probs(beta)
        log_p_y = np.take_along_axis(log_p, self.y[:, None], axis=1)[:, 0]
        if self.score == "nll":
            return float(self.w @ -log_p_y)
        return float(self.w @ (np.einsum("ij,ij->i", p, p) - 2.0 * np.exp(log_p_y) + 1.0))

    def slope(self, beta: float) -> float:
        _, p = self._probs(beta)
        centred = self.z - np.einsum("ij,ij->i", p, self.z)[:, None]
        c_y = np.take_along_axis(centred, self.y[:, None], axis=1)[:, 0]
        if self.score == "nll":
            return float(self.w @ -c_y)
        p_y = np.take_along_axis(p, self.y[:, None], axis=1)[:, 0]
        return float(self.w @ (2.0 * (np.einsum("ij,ij->i", p * p, centred) - p_y * c_y)))


def _best_beta(slope: Callable[[float], float]) -> float:
    """A root of ``slope`` downhill from 1, or the end of the search range."""
    from scipy.optimize import brentq  # only here: keeps ``import calibkit.metrics`` light

    s1 = slope(1.0)
    if s1 == 0.0:
        return 1.0
    step = 2.0 if s1 < 0 else 0.5
    inner = 1.0
    for _ in range(LIMIT):
        outer = inner * step
        if (slope(outer) > 0) == (s1 < 0):
            low, high = sorted((inner, outer))
            return float(brentq(slope, low, high))
        inner = outer
    return inner


def score_decomposition(
    labels: object,
    probs: object = None,
    *,
    logits: object = None,
    score: Score = "nll",
    sample_weight: object = None,
) -> ScoreDecomposition:
    """Split the NLL or Brier score into calibration (removable by a temperature) and refinement.

    Parameters
    ----------
    labels, probs, logits, sample_weight
        The outputs, as for every metric.
    score : {"nll", "brier"}
        Which proper score.

    Returns
    -------
    ScoreDecomposition
        The score, its two parts (``value == calibration + refinement``) and the temperature.

    Examples
    --------
    >>> d = score_decomposition([1, 1, 1, 0], probs=[[0.2, 0.8]] * 4)  # confidence -> 0.75
    >>> round(d.calibration, 6), round(d.temperature, 5)  # T = log 4 / log 3
    (0.007382, 1.26186)
    """
    if score not in SCORES:
        raise InputError("score", "one of " + ", ".join(SCORES), repr(score))
    out = as_outputs(labels, probs, logits=logits)
    w = check_weight(sample_weight, out.n_samples)
    weight = np.ones(out.n_samples) if w is None else w
    scaled = _Scaled(np.asarray(out.as_logits(), dtype=np.float64), out.labels, weight, score)
    per_sample = nll_per_sample(out) if score == "nll" else brier_per_sample(out)
    value = weighted_mean(per_sample, w)
    beta = _best_beta(scaled.slope)
    refined = scaled.value(beta)
    if not value - refined > ROUNDING * abs(value):
        beta, refined = 1.0, value
    return ScoreDecomposition(score, value, value - refined, refined, 1.0 / beta)
