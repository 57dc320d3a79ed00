"""Selective prediction and failure detection: how well the confidence ranks the predictions.

A classifier that may abstain accepts the samples whose confidence score (the top-label
probability unless ``confidence=`` gives another score) reaches a threshold and rejects the
rest. These metrics judge the *ranking* of the score against the correctness of the
top-label prediction, so any strictly increasing transform of the score leaves every one of
them unchanged (calibration metrics judge the values instead).

The convention with ties: samples with equal scores enter together. A threshold accepts a
whole tie group or none of it, so the achievable points of the risk-coverage curve are the
ends of the tie groups, taken in decreasing score; with group ``g`` holding weight ``n_g`` of
which ``e_g`` is wrong, ``C_g`` and ``E_g`` the cumulative weight and wrong weight down to
it and ``W`` the total weight:

- ``failure_auroc``: the probability that a random correct prediction has a higher score than
  a random wrong one, ties counted half (Mann-Whitney; scikit-learn's
  ``roc_auc_score(correct, confidence)``).
- ``aurc``: ``sum_g n_g R_g / W`` with ``R_g = E_g / C_g``: each sample's selective risk at the
  threshold equal to its own score (its whole tie group accepted), averaged over the
  samples. Without ties this is Geifman et al.'s (2019) mean of the selective risks of the
  top-k, ``k = 1..n``. fd-shifts integrates the same points with the trapezoid rule (plus a
  point at coverage 0); torch-uncertainty breaks ties by sort order and normalises its
  trapezoid by ``1 - 1/n``: both differ from this by ``O(1/n)`` (the tests restate them).
- ``eaurc``: ``aurc`` minus the AURC of a perfect ranking at the same accuracy (every correct
  prediction before every wrong one, one at a time): ``(M - W_c (psi(W + 1) - psi(W_c + 1))) /
  W`` for wrong weight ``M`` and correct weight ``W_c`` (the exact finite sum
  ``sum_j j / (W_c + j) / W``; Geifman's ``r + (1 - r) log(1 - r)`` is its large-n limit). It
  is never negative.
- ``augrc``: the area under the generalized risk ``E / W`` (the fraction of all samples that
  are accepted and wrong) against coverage, linear between the achievable points (the
  expected curve when a tie group is accepted in part, at random): Traub et al. (NeurIPS
  2024), as fd-shifts computes it. It equals ``(1 - AUROC) acc (1 - acc) + (1 - acc)^2 / 2``.
- ``risk_at_coverage``: the selective risk ``R_g`` of the smallest achievable coverage
  ``C_g / W >= coverage`` (accepting at least that fraction).
- ``coverage_at_risk``: the largest achievable coverage whose selective risk is at most
  ``risk`` (0.0 when no threshold reaches it: everything is rejected).

Undefined and edge cases: ``failure_auroc`` needs both a correct and a wrong prediction (an
:class:`~calibkit.core.errors.InputError` from the function; NaN inside
:func:`~calibkit.metrics.evaluate`, whose bootstrap then leaves such resamples out). All
correct: AURC, E-AURC and AUGRC are 0. All wrong: AURC is 1, E-AURC 0, AUGRC 1/2. One
sample: AURC is its error (0 or 1). Every function sorts once (O(n log n)); sample weights
(e.g. bootstrap counts) count a sample that many times, as tied copies.

>>> y, p = [0, 0, 1, 1], [[0.9, 0.1], [0.6, 0.4], [0.7, 0.3], [0.2, 0.8]]
>>> # scores 0.9 (right), 0.6 (right), 0.7 (wrong), 0.8 (right)
>>> failure_auroc(y, p)  # 2 of 3 correct-wrong pairs ordered right
0.6666666666666666
>>> aurc(y, p)  # selective risks 0/1, 0/2, 1/3, 1/4 (by decreasing score), averaged
0.14583333333333331
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypedDict, Unpack

import numpy as np
import numpy.typing as npt

from calibkit.core.errors import InputError
from calibkit.core.outputs import as_outputs, to_numpy
from calibkit.metrics.samples import F64, check_weight

I64 = npt.NDArray[np.int64]
#: Group sums: int64 for integer weights (bootstrap counts; exact, and integer prefix sums
#: are ten times faster than float ones), float64 otherwise.
Sums = npt.NDArray[Any]

#: The coverage and risk of the registered ``risk_at_cov80`` and ``cov_at_risk5`` metrics.
DEFAULT_COVERAGE = 0.8
DEFAULT_RISK = 0.05


class _Options(TypedDict, total=False):
    """The keyword options of every metric function here (defaults None): ``logits``,
    ``sample_weight`` and ``confidence``, a score of shape ``(N,)`` that replaces the
    top-label probability."""

    logits: object
    sample_weight: object
    confidence: object


#: ``work(name, shape, dtype)``: a work array kept from call to call (see :class:`Work`).
WorkArrays = Callable[[str, tuple[int, ...], Any], np.ndarray]


class Work:
    """Work arrays kept from block to block of the bootstrap: a block's arrays come to tens
    of MB, and allocated afresh each arrives as new pages, a page fault per 4 KB (half the
    time of these metrics at 100,000 samples). An array is valid until the next block.

    >>> work = Work()
    >>> a = work("x", (2, 3), np.int64)
    >>> work("x", (1, 3), np.int64).base is a.base  # the same memory, fewer rows
    True
    """

    def __init__(self) -> None:
        self._arrays: dict[str, np.ndarray] = {}

    def __call__(self, name: str, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        buf = self._arrays.get(name)
        if (
            buf is None
            or buf.shape[0] < shape[0]
            or buf.shape[1:] != shape[1:]
            or (buf.dtype != dtype)
        ):
            buf = self._arrays[name] = np.empty(shape, dtype)
        return buf[: shape[0]]


@dataclass(frozen=True)
class RankSums:
    """Weight and wrong weight of each tie group, groups in decreasing score, per row.

    ``count`` and ``wrong`` have shape ``(b, G)``: one row per weighting of the samples
    (int64 for integer weights, float64 otherwise).
    """

    count: Sums
    wrong: Sums
    work: WorkArrays | None = field(default=None, repr=False, compare=False)

    def _out(self, name: str, dtype: Any) -> np.ndarray | None:
        """A kept work array for ``name`` (None: a new array)."""
        return None if self.work is None else self.work(name, self.count.shape, dtype)

    @cached_property
    def cum_count(self) -> Sums:
        """Cumulative weight ``C`` down to each group (computed once for every metric)."""
        return np.cumsum(self.count, axis=1, out=self._out("cum_count", self.count.dtype))

    @cached_property
    def cum_wrong(self) -> Sums:
        """Cumulative wrong weight ``E`` down to each group."""
        return np.cumsum(self.wrong, axis=1, out=self._out("cum_wrong", self.wrong.dtype))

    @cached_property
    def right(self) -> Sums:
        """Weight of the correct predictions of each group."""
        return np.subtract(self.count, self.wrong, out=self._out("right", self.count.dtype))

    @cached_property
    def risk(self) -> F64:
        """Selective risk ``R = E / C`` at each group's end (0 where nothing is accepted)."""
        c = self.cum_count
        least = 1 if np.issubdtype(c.dtype, np.integer) else np.finfo(np.float64).tiny
        denominator = np.maximum(c, least, out=self._out("denominator", c.dtype))
        r: F64 = np.divide(self.cum_wrong, denominator, out=self._out("risk", np.float64))
        return r

    @property
    def cumulative(self) -> tuple[F64, F64, F64]:
        """``C``, ``E`` and ``R``, as float64."""
        c = self.cum_count.astype(np.float64)
        return c, self.cum_wrong.astype(np.float64), self.risk

    @property
    def total(self) -> F64:
        """Total weight of each row, shape ``(b,)``."""
        t: F64 = self.cum_count[:, -1].astype(np.float64)
        return t


def _rowdot(a: Sums, b: Sums) -> F64:
    """The dot product of each row of ``a`` with the same row of ``b`` (exact on integers:
    below ``(N max weight)^2``)."""
    d: F64 = np.einsum("ij,ij->i", a, b).astype(np.float64)
    return d


class Ranking:
    """Samples sorted once by decreasing score, with their tie groups.

    Parameters
    ----------
    score : ndarray of shape (N,)
        Finite confidence scores (higher: more confident).
    correct : ndarray of shape (N,)
        1.0 where the prediction is correct, 0.0 otherwise.

    Examples
    --------
    >>> r = Ranking(np.array([0.5, 0.9, 0.5]), np.array([1.0, 0.0, 0.0]))
    >>> s = r.sums(None)
    >>> s.count.tolist(), s.wrong.tolist(), r.thresholds.tolist()
    ([[1, 2]], [[1, 1]], [0.9, 0.5])
    """

    def __init__(self, score: F64, correct: F64) -> None:
        n = score.shape[0]
        # the order within a tie group does not matter (its sums do): no stable sort needed
        self.order: I64 = np.argsort(score)[::-1]
        s = score[self.order]
        self.n = n
        self.starts: I64 = np.flatnonzero(np.append(True, s[1:] != s[:-1])).astype(np.int64)
        self.thresholds: F64 = s[self.starts]
        self.wrong: F64 = 1.0 - correct[self.order]
        self._wrong_int: I64 = (self.wrong != 0).astype(np.int64)  # 0/1 correctness
        self.tied = self.starts.shape[0] < n
        self._sizes: I64 = np.diff(np.append(self.starts, n)).astype(np.int64)
        self._work = Work()

    def sums(
        self, weights: np.ndarray | None, columns: I64 | None = None, *, reuse: bool = False
    ) -> RankSums:
        """The group sums under ``weights`` (shape ``(b, N)``, in sample order; None: every
        sample once, one row). ``columns``: where each sample's weight is in the rows (the
        sample order if None), for weights kept in another order. ``reuse``: compute in
        work arrays kept from call to call (valid until the next call: the bootstrap's
        blocks).

        One gather of the weights into decreasing score; the group sums only with ties.
        Integer weights give int64 sums, others float64.
        """
        if weights is None:
            ones = self._wrong_int
            wrong = np.add.reduceat(ones, self.starts) if self.tied else ones
            return RankSums(self._sizes[None, :], np.asarray(wrong, dtype=np.int64)[None, :])
        work = self._work if reuse else None
        weights = np.asarray(weights)
        b, groups = weights.shape[0], self.starts.shape[0]

        def out(name: str, dtype: Any, width: int = self.n) -> np.ndarray | None:
            return None if work is None else work(name, (b, width), dtype)

        index = self.order if columns is None else columns[self.order]
        raw = np.take(weights, index, axis=1, out=out("raw", weights.dtype), mode="clip")
        integer = np.issubdtype(raw.dtype, np.integer)
        dtype = np.int64 if integer else np.float64
        w = out("w", dtype)
        if w is None:
            w = raw.astype(dtype, copy=False)
        else:
            np.copyto(w, raw)
        factor = self._wrong_int if integer else self.wrong
        wrong = np.multiply(w, factor, out=out("wrong", dtype))
        if self.tied:
            w = np.add.reduceat(w, self.starts, axis=1, out=out("count_g", dtype, groups))
            wrong = np.add.reduceat(wrong, self.starts, axis=1, out=out("wrong_g", dtype, groups))
        return RankSums(w, wrong, work)


def auroc_of(s: RankSums) -> F64:
    """Failure-detection AUROC of each row (NaN where a row lacks correct or wrong weight)."""
    e = s.cum_wrong
    neg = e[:, -1].astype(np.float64)
    pos = s.total - neg
    right = s.right
    # sum_g right_g (wrong weight below g + half of g's own) = pos neg - ...
    pairs = pos * neg - _rowdot(right, e) + 0.5 * _rowdot(right, s.wrong)
    den = pos * neg
    auc: F64 = np.divide(pairs, den, out=np.full_like(den, np.nan), where=den > 0)
    return auc


def aurc_of(s: RankSums) -> F64:
    """AURC of each row: the weighted mean of the group-end selective risks."""
    area: F64 = _rowdot(s.count, s.risk) / s.total
    return area


def digamma(x: F64) -> F64:
    """The digamma function for ``x >= 1`` (float64 rounding; no SciPy import for evaluate):
    the recurrence ``psi(x) = psi(x + 1) - 1 / x`` up to 16, then the asymptotic series.

    >>> abs(float(digamma(np.array([1.0]))[0]) - -0.5772156649015329) < 1e-15  # -gamma
    True
    """
    x = np.array(x, dtype=np.float64)
    shift = np.zeros_like(x)
    for _ in range(16):
        small = x < 16.0
        if not small.any():  # the rest of the steps change nothing (the bootstrap's totals)
            break
        shift -= np.where(small, 1.0 / x, 0.0)
        x = np.where(small, x + 1.0, x)
    inv2 = 1.0 / (x * x)  # Bernoulli terms to x^-10: the next below 1e-16 from x = 16
    tail = inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (1 / 240 - inv2 / 132))))
    psi: F64 = shift + np.log(x) - 0.5 / x - tail
    return psi


def optimal_aurc_of(s: RankSums) -> F64:
    """AURC of a perfect ranking of each row at its accuracy (exact, any weights)."""
    total, wrong = s.total, s.cum_wrong[:, -1].astype(np.float64)
    right = np.maximum(total - wrong, 0.0)
    harmonic = digamma(total + 1.0) - digamma(right + 1.0)  # sum_j 1 / (right + j)
    return np.asarray((wrong - right * harmonic) / total, dtype=np.float64)


def eaurc_of(s: RankSums) -> F64:
    """E-AURC of each row: AURC minus its optimum, which it never falls below (a difference
    below 0 is rounding of the digamma function, and is shown as 0)."""
    excess: F64 = np.maximum(aurc_of(s) - optimal_aurc_of(s), 0.0)
    return excess


def augrc_of(s: RankSums) -> F64:
    """AUGRC of each row: trapezoids of the generalized risk between achievable points."""
    total = s.total
    twice = 2.0 * _rowdot(s.count, s.cum_wrong) - _rowdot(s.count, s.wrong)
    area: F64 = twice / (2.0 * total * total)
    return area


def risk_at_coverage_of(s: RankSums, coverage: float = DEFAULT_COVERAGE) -> F64:
    """Selective risk of each row at the smallest achievable coverage ``>= coverage``."""
    c, e = s.cum_count, s.cum_wrong
    risk = np.empty(c.shape[0])
    for i, (row, total) in enumerate(zip(c, s.total, strict=True)):
        # the first group with row / total >= coverage (7 / 10 >= 0.7: both correctly
        # rounded); a binary search, then a step either way for the rounding of the product
        k = min(int(np.searchsorted(row, coverage * total)), row.shape[0] - 1)
        while k > 0 and row[k - 1] / total >= coverage:
            k -= 1
        while k < row.shape[0] - 1 and row[k] / total < coverage:
            k += 1
        risk[i] = float(e[i, k]) / float(row[k])
    return risk


def coverage_at_risk_of(s: RankSums, risk: float = DEFAULT_RISK) -> F64:
    """The largest achievable coverage of each row with selective risk ``<= risk`` (0.0 if
    none)."""
    ok = s.risk <= risk
    last = ok.shape[1] - 1 - np.argmax(ok[:, ::-1], axis=1)  # C grows: the last one is largest
    rows = np.arange(ok.shape[0])
    cov = np.where(ok[rows, last], s.cum_count[rows, last] / s.total, 0.0)
    return np.asarray(cov, dtype=np.float64)


def risk_at_cov80_of(s: RankSums) -> F64:
    """:func:`risk_at_coverage_of` at :data:`DEFAULT_COVERAGE` (the registered metric)."""
    return risk_at_coverage_of(s, DEFAULT_COVERAGE)


def cov_at_risk5_of(s: RankSums) -> F64:
    """:func:`coverage_at_risk_of` at :data:`DEFAULT_RISK` (the registered metric)."""
    return coverage_at_risk_of(s, DEFAULT_RISK)


# ----- the metric functions -------------------------------------------------------------------
def _sums(
    labels: object,
    probs: object,
    *,
    logits: object = None,
    sample_weight: object = None,
    confidence: object = None,
) -> tuple[RankSums, Ranking]:
    """The validated outputs' tie-group sums (one row), and their :class:`Ranking`."""
    out = as_outputs(labels, probs, logits=logits)
    score = out.confidence
    if confidence is not None:
        score = np.asarray(to_numpy(confidence, "confidence"), dtype=np.float64)
        if score.shape != (out.n_samples,):
            raise InputError("confidence", f"shape ({out.n_samples},)", f"shape {score.shape}")
        if not np.all(np.isfinite(score)):
            raise InputError("confidence", "finite scores", "NaN or infinite values")
    w = check_weight(sample_weight, out.n_samples)
    ranking = Ranking(score, out.correct)
    return ranking.sums(None if w is None else w[None, :]), ranking


def failure_auroc(labels: object, probs: object = None, **options: Unpack[_Options]) -> float:
    """AUROC of the confidence for telling correct top-label predictions from wrong ones.

    Ties count half: equal to scikit-learn's ``roc_auc_score(correct, confidence,
    sample_weight=...)``. Needs at least one correct and one wrong prediction (InputError
    otherwise).

    Examples
    --------
    >>> failure_auroc([0, 1], probs=[[0.9, 0.1], [0.6, 0.4]])  # the wrong one is less sure
    1.0
    >>> failure_auroc([0, 1], probs=[[0.6, 0.4], [0.6, 0.4]])  # a tie counts half
    0.5
    """
    s, _ = _sums(labels, probs, **options)
    value = float(auroc_of(s)[0])
    if math.isnan(value):
        wrong = float(s.wrong.sum())
        got = f"{s.total[0] - wrong:g} correct and {wrong:g} wrong (weight)"
        raise InputError("labels", "both correct and wrong predictions for the AUROC", got)
    return value


def aurc(labels: object, probs: object = None, **options: Unpack[_Options]) -> float:
    """Area under the risk-coverage curve (Geifman et al. 2019; ties enter together).

    See the module docstring for the convention.

    Examples
    --------
    >>> aurc([0, 0, 1], probs=[[0.9, 0.1], [0.8, 0.2], [0.7, 0.3]])  # (0 + 0 + 1/3) / 3
    0.1111111111111111
    >>> aurc([0, 0, 1], probs=[[0.9, 0.1], [0.7, 0.3], [0.7, 0.3]])  # (0 + 1/3 + 1/3) / 3
    0.2222222222222222
    """
    s, _ = _sums(labels, probs, **options)
    return float(aurc_of(s)[0])


def eaurc(labels: object, probs: object = None, **options: Unpack[_Options]) -> float:
    """Excess AURC: :func:`aurc` minus that of a perfect ranking at the same accuracy.

    Examples
    --------
    >>> round(eaurc([0, 0, 1], probs=[[0.9, 0.1], [0.8, 0.2], [0.7, 0.3]]), 12)  # perfect
    0.0
    >>> round(eaurc([0, 0, 1], probs=[[0.7, 0.3], [0.8, 0.2], [0.9, 0.1]]), 4)  # worst
    0.5
    """
    s, _ = _sums(labels, probs, **options)
    return float(eaurc_of(s)[0])


def augrc(labels: object, probs: object = None, **options: Unpack[_Options]) -> float:
    """Area under the generalized risk-coverage curve (Traub et al., NeurIPS 2024).

    Examples
    --------
    >>> augrc([0, 0, 1], probs=[[0.9, 0.1], [0.8, 0.2], [0.7, 0.3]])  # (1/3)^2 / 2
    0.05555555555555555
    """
    s, _ = _sums(labels, probs, **options)
    return float(augrc_of(s)[0])


def check_fraction(name: str, value: object, low_open: bool) -> float:
    """``value`` as a float in (0, 1] (``low_open``) or [0, 1]; InputError naming ``name``.

    >>> check_fraction("coverage", 0.9, low_open=True)
    0.9
    """
    ok = isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool)
    v = float(value) if ok else math.nan  # type: ignore[arg-type]
    inside = (0.0 < v <= 1.0) if low_open else (0.0 <= v <= 1.0)
    if not inside:
        expected = "a number in (0, 1]" if low_open else "a number in [0, 1]"
        raise InputError(name, expected, repr(value))
    return v


def risk_at_coverage(
    labels: object,
    probs: object = None,
    *,
    coverage: float = DEFAULT_COVERAGE,
    **options: Unpack[_Options],
) -> float:
    """Selective risk when accepting the most confident ``coverage`` fraction, in (0, 1].

    Tie groups enter whole, so the coverage used is the smallest achievable one at least
    ``coverage``.

    Examples
    --------
    >>> p = [[0.9, 0.1], [0.8, 0.2], [0.7, 0.3], [0.6, 0.4]]
    >>> risk_at_coverage([0, 1, 0, 1], p, coverage=0.5)  # top two: one wrong
    0.5
    >>> risk_at_coverage([0, 1, 0, 1], p, coverage=0.3)  # at least 30%: the top two
    0.5
    >>> risk_at_coverage([0, 1, 0, 1], p, coverage=0.25)
    0.0
    """
    c = check_fraction("coverage", coverage, low_open=True)
    s, _ = _sums(labels, probs, **options)
    return float(risk_at_coverage_of(s, c)[0])


def coverage_at_risk(
    labels: object, probs: object = None, *, risk: float = DEFAULT_RISK, **options: Unpack[_Options]
) -> float:
    """The largest achievable coverage whose selective risk is at most ``risk`` (in [0, 1]).

    0.0 when no threshold reaches ``risk`` (the most confident tie group is already worse).

    Examples
    --------
    >>> p = [[0.9, 0.1], [0.8, 0.2], [0.7, 0.3], [0.6, 0.4]]
    >>> coverage_at_risk([0, 1, 0, 1], p, risk=0.4)  # risks 0, 1/2, 1/3, 1/2
    0.75
    >>> coverage_at_risk([1, 1, 0, 1], p, risk=0.4)  # the most confident one is wrong
    0.0
    """
    r = check_fraction("risk", risk, low_open=False)
    s, _ = _sums(labels, probs, **options)
    return float(coverage_at_risk_of(s, r)[0])


@dataclass(frozen=True)
class RiskCoverage:
    """The achievable points of the risk-coverage curve, by decreasing threshold.

    Attributes
    ----------
    coverage, risk, generalized_risk, threshold : ndarray of shape (G,)
        At each tie group's end: the accepted fraction, the selective risk, the fraction of
        all samples accepted and wrong, and the threshold (accept scores ``>=`` it).
    aurc, augrc, optimal_aurc : float
        The areas (:func:`aurc`, :func:`augrc`) and the AURC of a perfect ranking.

    Examples
    --------
    The only error is the least confident prediction:

    >>> probs = [[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.3, 0.7]]
    >>> curve = risk_coverage_curve([0, 1, 1, 1], probs=probs)
    >>> curve.coverage.tolist(), curve.risk.tolist(), curve.aurc
    ([0.25, 0.5, 0.75, 1.0], [0.0, 0.0, 0.0, 0.25], 0.0625)
    """

    coverage: F64
    risk: F64
    generalized_risk: F64
    threshold: F64
    aurc: float
    augrc: float
    optimal_aurc: float


def risk_coverage_curve(
    labels: object, probs: object = None, **options: Unpack[_Options]
) -> RiskCoverage:
    """The risk-coverage curve's achievable points and its areas (for the figure).

    Examples
    --------
    >>> rc = risk_coverage_curve([0, 1, 0], probs=[[0.9, 0.1], [0.7, 0.3], [0.7, 0.3]])
    >>> rc.coverage.tolist(), rc.risk.tolist(), rc.threshold.tolist()
    ([0.3333333333333333, 1.0], [0.0, 0.3333333333333333], [0.9, 0.7])
    """
    s, ranking = _sums(labels, probs, **options)
    c, e, r = s.cumulative
    total = c[0, -1]
    return RiskCoverage(
        coverage=c[0] / total,
        risk=r[0],
        generalized_risk=e[0] / total,
        threshold=ranking.thresholds.copy(),
        aurc=float(aurc_of(s)[0]),
        augrc=float(augrc_of(s)[0]),
        optimal_aurc=float(optimal_aurc_of(s)[0]),
    )


# ----- does a calibrator change the ranking? ----------------------------------------------------
@dataclass(frozen=True)
class RankingChange:
    """How another score ranks the samples against a reference score.

    Attributes
    ----------
    same : bool
        Every pair of samples is ordered (or tied) the same way by both scores.
    tau : float
        Kendall's tau-b between the scores (1.0 when the ranking is the same; NaN when only
        one score is constant).
    """

    same: bool
    tau: float


def ranking_change(reference: object, other: object) -> RankingChange:
    """Whether ``other`` orders the samples as ``reference`` does, and Kendall's tau-b.

    Exact and O(n log n): sorted by ``(reference, other)``, neighbours must rise (or tie)
    together in both. Tau-b comes from :func:`scipy.stats.kendalltau`.

    Examples
    --------
    >>> ranking_change([0.2, 0.5, 0.9], [0.1, 0.6, 0.7])  # a monotone map
    RankingChange(same=True, tau=1.0)
    >>> ranking_change([0.2, 0.5, 0.9], [0.1, 0.1, 0.7]).same  # a new tie
    False
    """
    from scipy.stats import kendalltau

    a = np.asarray(to_numpy(reference, "reference"), dtype=np.float64)
    b = np.asarray(to_numpy(other, "other"), dtype=np.float64)
    if a.ndim != 1 or b.shape != a.shape:
        raise InputError("other", f"a score of shape {a.shape} (as reference)", f"{b.shape}")
    order = np.lexsort((b, a))
    da, db = np.diff(a[order]), np.diff(b[order])
    same = bool(np.all((da > 0) == (db > 0)) and np.all(db >= 0))
    if a.size < 2:
        return RankingChange(same, math.nan)
    tau = float(kendalltau(a, b).statistic) if same is False else 1.0
    return RankingChange(same, tau)
