"""Metrics of prediction sets: coverage, set size, and their bootstrap intervals.

:func:`set_metrics` takes a boolean mask of sets ``(N, K)`` and the true labels and returns
every metric with a seeded percentile bootstrap interval, all replicates at once: each
replicate is a multinomial count vector over the rows, so a metric is a weighted sum and
no data is copied (as :func:`~calibkit.metrics.bootstrap.bootstrap_ci` does for one metric).

- ``coverage``: the fraction of rows whose set holds the label;
- ``mean_size``, ``median_size``: of the set sizes (the median: the smallest size with at
  least half the rows at or below it);
- ``class_coverage_gap``: ``(1 - alpha)`` minus the worst class's coverage (positive: some
  class is under-covered; classes absent from a replicate are left out of its minimum);
- ``size_coverage``: the coverage among rows of each set size (a table, point values and
  row counts; no interval).

>>> sets = np.array([[True, False], [True, True], [False, True], [False, False]])
>>> m = set_metrics(sets, np.array([0, 1, 0, 1]), alpha=0.5, n_boot=0)
>>> m.values["coverage"], m.values["mean_size"], m.values["median_size"]
(0.5, 1.0, 1.0)
>>> m.size_coverage
{0: (0.0, 1), 1: (0.5, 2), 2: (1.0, 1)}
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from calibkit.core.errors import InputError
from calibkit.core.outputs import check_labels
from calibkit.core.validation import RESAMPLES, SEED, Real

F64 = npt.NDArray[np.float64]
#: The metrics with an interval, in the order tables list them.
SET_METRICS = ("coverage", "mean_size", "median_size", "class_coverage_gap")


@dataclass(frozen=True)
class SetMetrics:
    """Metrics of prediction sets: ``values[name]``, ``ci[name] = (low, high)`` (NaN
    without resamples), ``size_coverage[size] = (coverage, rows)``, ``class_coverage``."""

    values: dict[str, float]
    ci: dict[str, tuple[float, float]]
    size_coverage: dict[int, tuple[float, int]]
    class_coverage: F64
    n_boot: int
    level: float = 0.95


def _weighted(w: F64, covered: F64, size: F64, labels: npt.NDArray[np.int64], k: int) -> F64:
    """The :data:`SET_METRICS` under row weights ``w`` (``(B, N)``) -> ``(B, 4)``."""
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


def set_metrics(
    sets: object, labels: object, alpha: float, *, n_boot: int = 1000, seed: int = 0
) -> SetMetrics:
    """Coverage and set-size metrics of ``sets`` (bool ``(N, K)``) against ``labels``."""
    mask = np.asarray(sets)
    if mask.dtype != np.bool_ or mask.ndim != 2:
        raise InputError("sets", "a boolean mask of shape (N, K)", f"{mask.dtype} {mask.shape}")
    y = check_labels(labels, n_classes=mask.shape[1])
    if y.shape[0] != mask.shape[0]:
        raise InputError("labels", f"{mask.shape[0]} labels (one per set)", f"{y.shape[0]}")
    alpha = Real(0.0, 1.0, closed="neither").check("alpha", alpha)
    n_boot, seed = RESAMPLES.check("n_boot", n_boot), SEED.check("seed", seed)
    n, k = mask.shape
    covered = mask[np.arange(n), y].astype(np.float64)
    size = mask.sum(axis=1).astype(np.float64)
    point = _weighted(np.ones((1, n)), covered, size, y, k)[0]
    point[3] = (1 - alpha) - point[3]
    values = dict(zip(SET_METRICS, map(float, point), strict=True))
    ci = {name: (float("nan"), float("nan")) for name in SET_METRICS}
    if n_boot:
        rng = np.random.default_rng(seed)
        reps = []
        for start in range(0, n_boot, 100):  # 100 replicates at a time bounds memory
            counts = rng.multinomial(n, np.full(n, 1 / n), size=min(100, n_boot - start))
            reps.append(_weighted(counts.astype(np.float64), covered, size, y, k))
        rep = np.concatenate(reps)
        rep[:, 3] = (1 - alpha) - rep[:, 3]
        low, high = np.quantile(rep, [0.025, 0.975], axis=0)
        ci = {m: (float(a), float(b)) for m, a, b in zip(SET_METRICS, low, high, strict=True)}
    by_size = {
        int(s): (float(covered[size == s].mean()), int((size == s).sum())) for s in np.unique(size)
    }
    counts_y = np.bincount(y, minlength=k)
    per_class = np.bincount(y, weights=covered, minlength=k) / np.maximum(counts_y, 1)
    per_class[counts_y == 0] = np.nan
    return SetMetrics(values, ci, by_size, per_class, n_boot)
