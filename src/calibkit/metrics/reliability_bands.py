"""Honest reliability diagrams: per-bin intervals and the CORP curve with its consistency band.

A bar of a reliability diagram is an estimate from the bin's samples; these are the numbers
that say how far to believe it. Figures draw them (:mod:`calibkit.reporting.figures`,
:class:`~calibkit.reporting.display.ReliabilityDisplay`), never compute them.

- :func:`bin_intervals`: a binomial interval for each bin's accuracy, from its outcome sum
  ``k`` and weight ``n`` (:class:`~calibkit.core.binning.BinStats`): Wilson's score interval
  (the default) or Clopper-Pearson's exact one (``scipy.stats.beta`` quantiles). An empty
  bin gets NaN (no interval, as it gets no bar). With sample weights, ``k`` and ``n`` are
  weight sums and the interval is approximate.
- :func:`corp_reliability`: the CORP reliability curve of Dimitriadis, Gneiting & Jordan
  (PNAS 2021), the isotonic (pool-adjacent-violators) regression of the outcome on the
  confidence, with no bins to choose, and its consistency band: the outcomes are redrawn
  as ``Bernoulli(confidence)`` (the data perfectly calibrated), the curve refitted, and the
  band is the pointwise quantiles of the refits. A curve leaving the band where the data
  lie is miscalibration that the sample size does not explain.

>>> from calibkit.core.binning import bin_stats
>>> stats = bin_stats(np.array([0.1, 0.15, 0.9, 0.95]), np.array([0.0, 1.0, 1.0, 1.0]), 4)
>>> iv = bin_intervals(stats)
>>> np.round(iv.lower, 4).tolist()[:2], np.isnan(iv.lower[1:3]).tolist()
([0.0945, nan], [True, True])
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

import numpy as np

from calibkit.core.binning import BinStats
from calibkit.core.errors import InputError
from calibkit.core.outputs import as_outputs
from calibkit.metrics.samples import F64, Mode, calibration_target

IntervalMethod = Literal["wilson", "clopper-pearson"]
INTERVAL_METHODS: tuple[str, ...] = ("wilson", "clopper-pearson")


@dataclass(frozen=True)
class BinIntervals:
    """Per-bin ``lower`` and ``upper`` bounds of the accuracy (NaN for empty bins).

    Examples
    --------
    >>> from calibkit import reliability_stats
    >>> stats = reliability_stats([0, 1, 1, 1], probs=[[0.9, 0.1], [0.2, 0.8]] * 2, n_bins=2)
    >>> band = bin_intervals(stats, "clopper-pearson")
    >>> band.method, band.level, band.upper.round(4).tolist()  # 3 of 4: 0.975 ** (1 / 4)
    ('clopper-pearson', 0.95, [nan, 0.9937])
    """

    lower: F64
    upper: F64
    method: str
    level: float


def _check_level(level: object) -> float:
    if not isinstance(level, float | int) or not 0.0 < float(level) < 1.0:
        raise InputError("level", "a number in (0, 1)", repr(level))
    return float(level)


def proportion_interval(
    successes: F64, trials: F64, method: IntervalMethod = "wilson", level: float = 0.95
) -> tuple[F64, F64]:
    """Two-sided ``level`` interval of each proportion ``successes / trials`` (NaN where
    ``trials`` is 0).

    >>> lo, hi = proportion_interval(np.array([3.0]), np.array([10.0]), "clopper-pearson")
    >>> round(float(lo[0]), 4), round(float(hi[0]), 4)
    (0.0667, 0.6525)
    """
    level = _check_level(level)
    k = np.asarray(successes, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    ok = n > 0
    nn = np.where(ok, n, 1.0)
    kk = np.clip(np.where(ok, k, 0.0), 0.0, nn)
    alpha = 1.0 - level
    if method == "wilson":
        z = NormalDist().inv_cdf(1.0 - alpha / 2)  # the standard library's: no SciPy to load
        p = kk / nn
        centre = (p + z * z / (2 * nn)) / (1 + z * z / nn)
        half = z / (1 + z * z / nn) * np.sqrt(p * (1 - p) / nn + z * z / (4 * nn * nn))
        lower, upper = centre - half, centre + half
        lower = np.where(kk == 0, 0.0, np.clip(lower, 0.0, 1.0))
        upper = np.where(kk == nn, 1.0, np.clip(upper, 0.0, 1.0))
    elif method == "clopper-pearson":
        from scipy.stats import beta  # lazy: scipy.stats costs a second at import

        with np.errstate(invalid="ignore"):
            lower = np.where(kk > 0, beta.ppf(alpha / 2, kk, nn - kk + 1), 0.0)
            upper = np.where(kk < nn, beta.ppf(1 - alpha / 2, kk + 1, nn - kk), 1.0)
    else:
        raise InputError("method", "one of " + ", ".join(INTERVAL_METHODS), repr(method))
    return np.where(ok, lower, np.nan), np.where(ok, upper, np.nan)


def bin_intervals(
    stats: BinStats, method: IntervalMethod = "wilson", level: float = 0.95
) -> BinIntervals:
    """The ``level`` interval of every bin's accuracy (see the module docstring).

    Examples
    --------
    The upper bin holds four correct predictions: Wilson's 95% interval is
    ``[4 / (4 + 1.96^2), 1]``; the lower bin is empty (NaN).

    >>> from calibkit import reliability_stats
    >>> probs = [[0.9, 0.1], [0.2, 0.8], [0.3, 0.7], [0.4, 0.6]]
    >>> band = bin_intervals(reliability_stats([0, 1, 1, 1], probs=probs, n_bins=2))
    >>> band.lower.round(4).tolist(), band.upper.tolist()
    ([nan, 0.5101], [nan, 1.0])
    """
    if not isinstance(stats, BinStats):
        raise InputError("stats", "a BinStats (from reliability_stats)", type(stats).__name__)
    lower, upper = proportion_interval(stats.accuracy_sum, stats.counts, method, level)
    return BinIntervals(lower, upper, method, float(level))


@dataclass(frozen=True)
class CorpReliability:
    """The CORP curve on ``grid`` (confidences where the data lie) and its consistency band
    ``[lower, upper]`` (pointwise ``level`` quantiles of ``n_resamples`` refits under
    perfect calibration).

    Examples
    --------
    >>> probs = [[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.3, 0.7]]
    >>> corp = corp_reliability([0, 1, 1, 1], probs=probs, n_resamples=20)
    >>> float(corp.grid.min()), float(corp.grid.max()), bool((corp.lower <= corp.upper).all())
    (0.6, 0.9, True)
    """

    grid: F64
    curve: F64
    lower: F64
    upper: F64
    level: float
    n_resamples: int


def isotonic_fit(conf: F64, outcome: F64, grid: F64) -> F64:
    """The isotonic regression of ``outcome`` on ``conf`` (ties in ``conf`` pooled), read
    at ``grid`` (constant beyond the data).

    >>> isotonic_fit(np.array([0.2, 0.4, 0.6, 0.8]), np.array([0.0, 1, 0, 1]),
    ...              np.array([0.2, 0.5, 0.8])).tolist()
    [0.0, 0.5, 1.0]
    """
    from sklearn.isotonic import IsotonicRegression  # lazy: sklearn costs seconds at import

    iso = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip")
    return np.asarray(iso.fit(conf, outcome).predict(grid), dtype=np.float64)


def corp_reliability(
    labels: object,
    probs: object = None,
    *,
    logits: object = None,
    mode: Mode = "top_label",
    n_resamples: int = 200,
    level: float = 0.9,
    seed: int = 0,
    n_grid: int = 200,
) -> CorpReliability:
    """The CORP reliability curve and its consistency band (see the module docstring).

    The grid is ``n_grid`` quantiles of the confidences (duplicates dropped), so the curve
    is read where the data are. The band is seeded by ``seed``.

    >>> rel = corp_reliability([0, 1, 1, 1], [0.6, 0.7, 0.8, 0.9], mode="positive_class",
    ...                        n_resamples=20, n_grid=4)
    >>> rel.grid.tolist(), rel.curve.tolist()
    ([0.6, 0.7, 0.8, 0.9], [0.0, 1.0, 1.0, 1.0])
    """
    level = _check_level(level)
    for name, value, least in (("n_resamples", n_resamples, 1), ("n_grid", n_grid, 2)):
        if not isinstance(value, int | np.integer) or value < least:
            raise InputError(name, f"an integer of at least {least}", repr(value))
    out = as_outputs(labels, probs, logits=logits)
    conf, outcome = calibration_target(out, mode)
    grid = np.unique(np.quantile(conf, np.linspace(0.0, 1.0, int(n_grid))))
    curve = isotonic_fit(conf, outcome, grid)
    rng = np.random.default_rng(seed)
    refits = np.empty((int(n_resamples), grid.size))
    for b in range(int(n_resamples)):
        redrawn = (rng.uniform(size=conf.size) < conf).astype(np.float64)
        refits[b] = isotonic_fit(conf, redrawn, grid)
    tail = (1.0 - level) / 2
    lower, upper = np.quantile(refits, [tail, 1.0 - tail], axis=0)
    return CorpReliability(grid, curve, lower, upper, level, int(n_resamples))
