"""Metrics of prediction sets: coverage, set size, and their bootstrap intervals.

The set metrics are entries of the metric registry (:data:`~calibkit.metrics.info.METRICS`)
of their own kind, ``"set"``: each entry's function computes the metric from ``(sets,
labels)`` (a boolean mask ``(N, K)`` and the true labels), and its label, percent and
``better`` are what reports show. They are never in the metric suite (they judge sets, not
probabilities):

- ``coverage``: the fraction of rows whose set holds the label;
- ``mean_set_size``, ``median_set_size``: of the set sizes (the median: the smallest size
  with at least half the rows at or below it);
- ``class_coverage_gap``: ``(1 - alpha)`` minus the worst class's coverage (positive: some
  class is under-covered; classes absent from a replicate are left out of its minimum).

:func:`set_metrics` computes all of them with percentile bootstrap intervals at ``level``,
all replicates at once, by the resampling engine of the metric suite: each replicate is a
vector of multinomial counts over the rows (:func:`~calibkit.metrics.resampled.resample_counts`
of ``rng.integers(0, N, (B, N))``, as :func:`~calibkit.metrics.groups.evaluate_groups`
draws them), so a metric is a weighted sum and no data is copied. It adds the coverage
among the rows of each set size (``size_coverage``: point values and row counts, no
interval) and each class's coverage.

>>> sets = np.array([[True, False], [True, True], [False, True], [False, False]])
>>> m = set_metrics(sets, np.array([0, 1, 0, 1]), alpha=0.5, resampling=Resampling(n_boot=0))
>>> m.values["coverage"], m.values["mean_set_size"], m.values["median_set_size"]
(0.5, 1.0, 1.0)
>>> m.size_coverage
{0: (0.0, 1), 1: (0.5, 2), 2: (1.0, 1)}
>>> METRICS.get("mean_set_size")(sets, [0, 1, 0, 1]), METRICS.get("mean_set_size").label
(1.0, 'Mean set size')
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from calibkit.core.errors import InputError
from calibkit.core.options import Resampling
from calibkit.core.outputs import check_labels
from calibkit.core.validation import MISCOVERAGE
from calibkit.metrics.info import METRICS, MetricInfo, register_metric
from calibkit.metrics.resampled import count_blocks

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
#: The set metrics with an interval, in the order tables list them (each a registry entry
#: of kind ``"set"``).
SET_METRICS = ("coverage", "mean_set_size", "median_set_size", "class_coverage_gap")
#: Rows times replicates of one bootstrap block (bounds the memory of the weights).
_BLOCK = 1 << 20


@dataclass(frozen=True)
class SetMetrics:
    """Metrics of prediction sets: ``values[name]``, ``ci[name] = (low, high)`` (NaN
    without resamples; percentile intervals as ``resampling`` says), ``size_coverage[size]
    = (coverage, rows)``, ``class_coverage`` (NaN for a class without test rows).

    Examples
    --------
    >>> sets = [[True, False], [True, True], [False, True], [False, True]]
    >>> metrics = set_metrics(sets, [0, 1, 1, 1], 0.1, resampling=Resampling(n_boot=0))
    >>> metrics.values["coverage"], metrics.values["mean_set_size"], metrics.size_coverage
    (1.0, 1.25, {1: (1.0, 3), 2: (1.0, 1)})
    """

    values: dict[str, float]
    ci: dict[str, tuple[float, float]]
    size_coverage: dict[int, tuple[float, int]]
    class_coverage: F64
    resampling: Resampling = Resampling(n_boot=0)


def _check(sets: object, labels: object) -> tuple[npt.NDArray[np.bool_], I64]:
    mask = np.asarray(sets)
    if mask.dtype != np.bool_ or mask.ndim != 2:
        raise InputError("sets", "a boolean mask of shape (N, K)", f"{mask.dtype} {mask.shape}")
    y = check_labels(labels, n_classes=mask.shape[1])
    if y.shape[0] != mask.shape[0]:
        raise InputError("labels", f"{mask.shape[0]} labels (one per set)", f"{y.shape[0]}")
    return mask, y


def _weighted(w: F64, covered: F64, size: F64, labels: I64, k: int) -> F64:
    """Coverage, mean size, median size and the worst class's coverage under row weights
    ``w`` (``(B, N)``) -> ``(B, 4)``."""
    total = w.sum(axis=1)
    coverage = w @ covered / total
    mean_size = w @ size / total
    hist = w @ (size.astype(np.int64)[:, None] == np.arange(k + 1)[None, :])
    median = np.argmax(np.cumsum(hist, axis=1) >= total[:, None] / 2, axis=1).astype(float)
    onehot = labels[:, None] == np.arange(k)[None, :]
    per_class_n = w @ onehot
    per_class = np.where(
        per_class_n > 0, (w @ (onehot * covered[:, None])) / np.maximum(per_class_n, 1), np.inf
    )
    worst = per_class.min(axis=1)
    return np.stack([coverage, mean_size, median, worst], axis=1)


def _point(sets: object, labels: object) -> F64:
    mask, y = _check(sets, labels)
    n, k = mask.shape
    covered = mask[np.arange(n), y].astype(np.float64)
    point = _weighted(np.ones((1, n)), covered, mask.sum(axis=1).astype(np.float64), y, k)
    return np.asarray(point[0], dtype=np.float64)


def coverage(sets: object, labels: object) -> float:
    """The fraction of rows whose set holds the label."""
    return float(_point(sets, labels)[0])


def mean_set_size(sets: object, labels: object) -> float:
    """The mean number of classes per set."""
    return float(_point(sets, labels)[1])


def median_set_size(sets: object, labels: object) -> float:
    """The median number of classes per set (the smallest size with half the rows at or
    below it)."""
    return float(_point(sets, labels)[2])


def class_coverage_gap(sets: object, labels: object, alpha: float = 0.1) -> float:
    """``(1 - alpha)`` minus the worst class's coverage (positive: a class is under-covered)."""
    alpha = MISCOVERAGE.check("alpha", alpha)
    return float((1 - alpha) - _point(sets, labels)[3])


for _info in (  # name, label, kind, percent, better, has_floor, function, in_suite
    MetricInfo(
        "coverage",
        "Coverage",
        "set",
        True,
        None,
        False,
        coverage,
        False,
        summary="share of samples whose prediction set holds the label",
    ),
    MetricInfo(
        "mean_set_size",
        "Mean set size",
        "set",
        False,
        "min",
        False,
        mean_set_size,
        False,
        summary="mean number of classes in a prediction set",
    ),
    MetricInfo(
        "median_set_size",
        "Median set size",
        "set",
        False,
        "min",
        False,
        median_set_size,
        False,
        summary="median number of classes in a prediction set",
    ),
    MetricInfo(
        "class_coverage_gap",
        "Class coverage gap",
        "set",
        True,
        "min",
        False,
        class_coverage_gap,
        False,
        summary="the target coverage less the worst class's coverage",
    ),
):
    if _info.name not in METRICS:  # a reload of this module registers nothing twice
        register_metric(_info)


def set_metrics(
    sets: object,
    labels: object,
    alpha: float,
    *,
    resampling: Resampling = Resampling(),
) -> SetMetrics:
    """Coverage and set-size metrics of ``sets`` (bool ``(N, K)``) against ``labels``, with
    percentile bootstrap intervals as ``resampling`` says (none without replicates).

    Examples
    --------
    Two of three sets hold the label, sizes 1, 2 and 1:

    >>> sets = [[True, False], [True, True], [False, True]]
    >>> m = set_metrics(sets, [0, 0, 0], 0.1, resampling=Resampling(n_boot=0))
    >>> round(m.values["coverage"], 4), round(m.values["mean_set_size"], 4)
    (0.6667, 1.3333)
    """
    mask, y = _check(sets, labels)
    alpha = MISCOVERAGE.check("alpha", alpha)
    n_boot, level = resampling.n_boot, resampling.level
    n, k = mask.shape
    covered = mask[np.arange(n), y].astype(np.float64)
    size = mask.sum(axis=1).astype(np.float64)
    point = _weighted(np.ones((1, n)), covered, size, y, k)[0]
    point[3] = (1 - alpha) - point[3]
    values = dict(zip(SET_METRICS, map(float, point), strict=True))
    ci = {name: (float("nan"), float("nan")) for name in SET_METRICS}
    if n_boot:
        blocks = count_blocks(np.random.default_rng(resampling.seed), n, n_boot, _BLOCK)
        rep = np.concatenate([_weighted(w, covered, size, y, k) for w in blocks])
        rep[:, 3] = (1 - alpha) - rep[:, 3]
        tail = (1.0 - level) / 2.0
        low, high = np.quantile(rep, [tail, 1.0 - tail], axis=0)
        ci = {m: (float(a), float(b)) for m, a, b in zip(SET_METRICS, low, high, strict=True)}
    by_size = {
        int(s): (float(covered[size == s].mean()), int((size == s).sum())) for s in np.unique(size)
    }
    counts_y = np.bincount(y, minlength=k)
    per_class = np.bincount(y, weights=covered, minlength=k) / np.maximum(counts_y, 1)
    per_class[counts_y == 0] = np.nan
    return SetMetrics(values, ci, by_size, per_class, resampling)


__all__ = [
    "SET_METRICS",
    "SetMetrics",
    "class_coverage_gap",
    "coverage",
    "mean_set_size",
    "median_set_size",
    "set_metrics",
]
