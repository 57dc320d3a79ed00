"""Analytic intervals, without resampling: means of per-sample terms, and the ranking metrics.

``interval="mean"`` (:attr:`~calibkit.metrics.info.MetricInfo.interval`; accuracy, NLL, Brier
score, entropy, mean confidence: a :class:`~calibkit.metrics.kernels.SampleMean` kernel): the
metric is the average of one term per sample, ``m = (1/n) sum_i v_i``. Its estimand is the
population mean ``E[v]`` (the metric's value on the whole population the test samples are
drawn from), and the central limit theorem gives its interval: ``m +- t_{n-1} s / sqrt(n)``,
with ``s`` the sample standard deviation of the terms and ``t_{n-1}`` the Student-t quantile
at ``(1 + level) / 2`` (exact for normal terms, the CLT's for any terms of finite variance).
The percentile bootstrap of the same mean estimates the same spread (its replicates'
standard deviation is ``s sqrt((n - 1) / n) / sqrt(n)``) at a thousand times the cost.

``interval="influence"`` (failure AUROC, AUGRC, AURC, E-AURC: a
:class:`~calibkit.metrics.kernels.RankStatistic` kernel whose function
:func:`influence_functions` knows): a smooth functional of the joint law of (score,
correctness), asymptotically normal, whose standard error is that of its empirical
influence function (the nonparametric delta method, or infinitesimal jackknife):
``estimate +- z se``. The failure AUROC's is DeLong, DeLong & Clarke-Pearson's (1988)
two-sample variance; AUGRC is a V-statistic (``(1/n^2) sum_ij wrong_i [s_i > s_j]``, ties
half), whose influence is its Hoeffding projection; AURC ``= int R(t) dF(t)`` with ``R(t)``
the selective risk of the samples scored ``>= t`` has the influence
``R(s) - AURC + int_{t <= s} (wrong - R(t)) / P(S >= t) dF(t)``; E-AURC adds that of its
optimum ``r + (1 - r) log(1 - r)`` at error rate ``r``, ``log(1 - r) (wrong - r)``.

Coverage of a known truth (``tests/metrics/test_analytic.py``): simulated models
(:func:`~calibkit.metrics.simulated.simulate`) whose accuracy and mean confidence are
exact, the other metrics' truth taken from four million samples.

>>> t_quantile(0.975, 10), round(t_quantile(0.975, 10**9), 6)
(2.228138851986274, 1.959964)
>>> [round(x, 4) for x in mean_interval(np.array([1.0, 0.0, 1.0, 1.0]), 0.95)]  # t_3: 3.18
[-0.0456, 1.5456]
>>> ranks = RankInfluence(np.array([0.9, 0.8, 0.7, 0.6, 0.5]), np.array([1.0, 1, 0, 1, 0]))
>>> ranks.estimate_se(auroc_of)  # 5 of the 6 (right, wrong) pairs in order; DeLong's se
(0.8333333333333334, 0.23570226039551584)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cached_property, lru_cache
from statistics import NormalDist

import numpy as np

from calibkit.core.errors import InputError
from calibkit.metrics.samples import F64
from calibkit.metrics.selective import (
    RankSums,
    augrc_of,
    aurc_of,
    auroc_of,
    eaurc_of,
    optimal_aurc_of,
)

#: From this many degrees of freedom on, :func:`t_quantile` uses the Cornish-Fisher
#: expansion (within 1e-10 of the quantile there); below, the exact distribution
#: function is inverted.
_EXPANSION_DF = 200


def _t_two_sided(t: float, df: int) -> float:
    """``P(|T| <= t)`` for Student's t with ``df`` degrees of freedom (``t >= 0``): the
    finite series of Abramowitz & Stegun 26.7.3-4."""
    theta = math.atan(t / math.sqrt(df))
    c2, s = math.cos(theta) ** 2, math.sin(theta)
    if df % 2:  # odd: 2/pi (theta + sin cos (1 + 2/3 cos^2 + 2*4/(3*5) cos^4 + ...))
        term, total = 1.0, 1.0 if df > 1 else 0.0
        for k in range(3, df - 1, 2):
            term *= (k - 1) / k * c2
            total += term
        cos = math.cos(theta)
        return 2.0 / math.pi * (theta + (s * cos * total if df > 1 else 0.0))
    term, total = 1.0, 1.0  # even: sin (1 + 1/2 cos^2 + 1*3/(2*4) cos^4 + ...)
    for k in range(2, df - 1, 2):
        term *= (k - 1) / k * c2
        total += term
    return s * total


@lru_cache(maxsize=4096)  # once per sample size: a bisection below 200 degrees of freedom
def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (``p`` in ``[0.5, 1)``,
    ``df >= 1``; ``math.inf``: the normal quantile), without scipy.

    Below 200 degrees of freedom the exact distribution function is inverted by bisection;
    from 200 on, the Cornish-Fisher expansion in ``1/df`` to the fourth order (Abramowitz &
    Stegun 26.7.5). Within 1e-9 of ``scipy.stats.t.ppf`` (``tests/metrics/test_analytic.py``).

    Examples
    --------
    >>> round(t_quantile(0.975, 1), 4), round(t_quantile(0.975, 30), 4)
    (12.7062, 2.0423)
    """
    if not 0.5 <= p < 1.0:
        raise InputError("p", "a probability in [0.5, 1)", repr(p))
    if not (df >= 1 and (math.isinf(df) or float(df).is_integer())):
        raise InputError("df", "an integer >= 1 or math.inf", repr(df))
    z = NormalDist().inv_cdf(p)
    if math.isinf(df):
        return z
    if df >= _EXPANSION_DF:
        z2 = z * z
        g1 = (z2 + 1.0) * z / 4.0
        g2 = ((5.0 * z2 + 16.0) * z2 + 3.0) * z / 96.0
        g3 = (((3.0 * z2 + 19.0) * z2 + 17.0) * z2 - 15.0) * z / 384.0
        g4 = ((((79.0 * z2 + 776.0) * z2 + 1482.0) * z2 - 1920.0) * z2 - 945.0) * z / 92160.0
        return float(z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4)
    n, target = int(df), 2.0 * p - 1.0
    low, high = z, 2.0 * z
    while _t_two_sided(high, n) < target:
        low, high = high, 2.0 * high
    for _ in range(200):  # bisection to the float's resolution
        mid = 0.5 * (low + high)
        if mid in (low, high):
            break
        low, high = (mid, high) if _t_two_sided(mid, n) < target else (low, mid)
    return 0.5 * (low + high)


def mean_interval(values: F64, level: float) -> tuple[float, float]:
    """The Student-t interval ``(low, high)`` at ``level`` in (0, 1) of the population mean
    of ``values``, one term per sample (e.g. each sample's NLL): ``m +- t_{n-1} s / sqrt(n)``
    (module docstring); NaN with fewer than 2 terms.

    Examples
    --------
    >>> mean_interval(np.array([0.5, 0.5, 0.5]), 0.9)  # no spread: no width
    (0.5, 0.5)
    """
    if not 0.0 < level < 1.0:
        raise InputError("level", "a number in (0, 1)", repr(level))
    n = values.shape[0]
    if n < 2:
        return (math.nan, math.nan)
    mean = float(np.mean(values))
    sd = float(np.std(values, ddof=1))
    half = t_quantile(0.5 + level / 2.0, n - 1) * sd / math.sqrt(n)
    return (mean - half, mean + half)


def mean_estimand(label: str) -> str:
    """What a ``"mean"`` interval of the metric labelled ``label`` is an interval of.

    >>> mean_estimand("NLL")
    'the population NLL (a mean of per-sample terms: Student-t interval)'
    """
    return f"the population {label} (a mean of per-sample terms: Student-t interval)"


def normal_interval(estimate: float, se: float, level: float) -> tuple[float, float]:
    """``estimate +- z se``, ``z`` the normal quantile at ``(1 + level) / 2`` (NaN ends for a
    NaN estimate or standard error).

    >>> [round(x, 4) for x in normal_interval(0.5, 0.1, 0.95)]
    [0.304, 0.696]
    """
    if not 0.0 < level < 1.0:
        raise InputError("level", "a number in (0, 1)", repr(level))
    if not (math.isfinite(estimate) and math.isfinite(se)):
        return (math.nan, math.nan)
    half = NormalDist().inv_cdf(0.5 + level / 2.0) * se
    return (estimate - half, estimate + half)


class RankInfluence:
    """The ranking metrics of one sample with their standard errors from their influence
    functions (module docstring), from one sort of the scores ``score`` (the top-label
    confidence) of the predictions ``correct`` (as :class:`~calibkit.metrics.selective.Ranking`
    takes them).

    Notes
    -----
    Tied scores form a group that is accepted whole, as in
    :mod:`~calibkit.metrics.selective`; the estimates equal its functions' to rounding.
    """

    def __init__(self, score: F64, correct: F64) -> None:
        n = self.n = score.shape[0]
        order = np.argsort(score, kind="stable")
        s = score[order]
        self.wrong = (correct[order] == 0).astype(np.float64)  # ascending score
        new = np.empty(n, dtype=bool)
        new[:1] = True
        np.not_equal(s[1:], s[:-1], out=new[1:])
        starts = np.flatnonzero(new)
        self.group = np.cumsum(new) - 1  # each sample's tie group, ascending
        self.size = np.diff(np.append(starts, n)).astype(np.float64)
        self.group_wrong = np.add.reduceat(self.wrong, starts) if n else self.size
        self.below = np.cumsum(self.size) - self.size  # samples scored below each group
        self.below_wrong = np.cumsum(self.group_wrong) - self.group_wrong
        self.total_wrong = float(self.wrong.sum())

    def _se(self, influence: F64) -> float:
        """The standard error of a statistic with these per-sample ``influence`` values."""
        return float(np.sqrt(np.var(influence, ddof=1) / self.n)) if self.n > 1 else math.nan

    def auroc(self) -> tuple[float, float]:
        """Failure AUROC and DeLong's standard error (NaN without a right and a wrong
        prediction). A class of one sample has no sample variance of its placements: their
        largest possible variance, 1/4 (values in [0, 1]), stands in for it."""
        w, h = self.total_wrong, self.n - self.total_wrong
        if w < 1 or h < 1:
            return (math.nan, math.nan)
        hw = self.size - self.group_wrong
        # a right sample: the share of the wrong ones below it (ties half); a wrong one: the
        # share of the right ones above it
        v10 = ((self.below_wrong + 0.5 * self.group_wrong) / w)[self.group][self.wrong == 0]
        above_h = h - (self.below - self.below_wrong) - 0.5 * hw
        v01 = (above_h / h)[self.group][self.wrong == 1]
        s10 = float(np.var(v10, ddof=1)) if h > 1 else 0.25
        s01 = float(np.var(v01, ddof=1)) if w > 1 else 0.25
        se = math.sqrt(s10 / h + s01 / w)
        return (float(np.mean(v10)), se)

    def augrc(self) -> tuple[float, float]:
        """AUGRC and the standard error of its Hoeffding projection."""
        n = self.n
        first = self.wrong * ((self.below + 0.5 * self.size) / n)[self.group]
        second = ((self.total_wrong - self.below_wrong - 0.5 * self.group_wrong) / n)[self.group]
        value = float(np.mean(first))
        return (value, self._se(first + second - 2.0 * value))

    @cached_property
    def _aurc(self) -> tuple[float, F64]:
        """AURC and its per-sample influence."""
        cum = self.n - self.below  # C: samples scored >= each group
        risk = (self.total_wrong - self.below_wrong) / cum  # R = E / C
        value = float(np.dot(self.size, risk) / self.n)
        a = np.cumsum(self.size / cum)[self.group]  # sum over t <= s of 1 / C(t)
        b = np.cumsum(self.size * risk / cum)[self.group]  # of R(t) / C(t)
        return value, risk[self.group] - value + self.wrong * a - b

    def aurc(self) -> tuple[float, float]:
        """AURC and the standard error of its influence function."""
        value, influence = self._aurc
        return (value, self._se(influence))

    def eaurc(self) -> tuple[float, float]:
        """E-AURC (AURC less the optimum at this accuracy) and its standard error."""
        value, influence = self._aurc
        n, w = self.n, self.total_wrong
        # the optimum as eaurc_of takes it: n samples, w of them wrong
        one = RankSums(np.array([[n]], dtype=np.int64), np.array([[round(w)]], dtype=np.int64))
        excess = max(value - float(optimal_aurc_of(one)[0]), 0.0)
        r = w / n
        if r >= 1.0:  # all wrong: E-AURC is 0 whatever the ranking
            return (excess, 0.0)
        return (excess, self._se(influence + math.log1p(-r) * (self.wrong - r)))

    def estimate_se(self, function: Callable[[RankSums], F64]) -> tuple[float, float]:
        """The estimate and standard error of the ranking metric computed by ``function``
        (a key of :func:`influence_functions`)."""
        return influence_functions()[function](self)


def influence_functions() -> dict[
    Callable[[RankSums], F64], Callable[[RankInfluence], tuple[float, float]]
]:
    """The ranking functions (:mod:`~calibkit.metrics.selective`) whose influence-function
    interval :class:`RankInfluence` computes, and how."""
    return {
        auroc_of: RankInfluence.auroc,
        augrc_of: RankInfluence.augrc,
        aurc_of: RankInfluence.aurc,
        eaurc_of: RankInfluence.eaurc,
    }


def influence_estimand(label: str, function: Callable[[RankSums], F64]) -> str:
    """What an ``"influence"`` interval of the metric labelled ``label`` is an interval of.

    >>> influence_estimand("AURC", aurc_of)
    'the population AURC (normal interval, the standard error of its influence function)'
    """
    how = (
        "DeLong's variance"
        if function is auroc_of
        else "the standard error of its influence function"
    )
    return f"the population {label} (normal interval, {how})"


__all__ = [
    "RankInfluence",
    "influence_estimand",
    "influence_functions",
    "mean_estimand",
    "mean_interval",
    "normal_interval",
    "t_quantile",
]
