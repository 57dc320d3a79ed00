"""Set metrics: registry entries of kind "set", values by hand, and bootstrap intervals at
the requested level from the suite's multinomial count engine."""

from __future__ import annotations

import numpy as np
import pytest

from calibkit import Resampling
from calibkit.core.errors import InputError
from calibkit.metrics import METRICS, MetricInfo, extra_names
from calibkit.metrics.conformal import SET_METRICS, set_metrics
from calibkit.metrics.resampled import resample_counts

SETS = np.array([[True, False], [True, True], [False, True], [False, False]] * 50)
LABELS = np.array([0, 1, 0, 1] * 50)


def test_set_metrics_are_registry_entries_of_their_own_kind() -> None:
    for name in SET_METRICS:
        info = METRICS.get(name)
        assert info.kind == "set"
        assert not info.in_suite
        assert info.kernel is None
        assert name not in extra_names()  # not an evaluate --extra of predictions
    assert METRICS.get("coverage").percent
    assert METRICS.get("mean_set_size").better == "min"
    assert METRICS.get("coverage")(SETS, LABELS) == 0.5
    assert METRICS.get("mean_set_size")(SETS, LABELS) == 1.0
    assert METRICS.get("median_set_size")(SETS, LABELS) == 1.0
    assert METRICS.get("class_coverage_gap")(SETS, LABELS, alpha=0.1) == pytest.approx(0.4)
    assert "mean_size" not in METRICS
    assert "median_size" not in METRICS


def test_a_set_metric_in_the_suite_is_refused() -> None:
    with pytest.raises(InputError, match="outside the suite"):
        MetricInfo("toy", "Toy", "set", True, None, False, len, True)


def test_set_metrics_by_hand_and_their_intervals() -> None:
    m = set_metrics(SETS, LABELS, alpha=0.1, resampling=Resampling(n_boot=300, seed=0))
    assert m.values["coverage"] == 0.5
    assert m.values["mean_set_size"] == 1.0
    assert m.values["median_set_size"] == 1.0
    assert m.values["class_coverage_gap"] == pytest.approx(0.9 - 0.5)  # both classes at 50%
    assert m.resampling.level == 0.95
    low, high = m.ci["coverage"]
    assert low < 0.5 < high
    assert high - low < 0.2
    assert (
        set_metrics(SETS, LABELS, alpha=0.1, resampling=Resampling(n_boot=300, seed=0)).ci == m.ci
    )  # seeded


def test_intervals_at_the_level_from_the_count_engine() -> None:
    """The replicates are ``resample_counts(rng.integers(0, N, (B, N)))``, as the suite and
    the group bootstrap draw them; the interval is their percentile interval at ``level``."""
    n, b = SETS.shape[0], 400
    rng = np.random.default_rng(5)
    w = resample_counts(rng.integers(0, n, (b, n))).astype(np.float64)
    covered = SETS[np.arange(n), LABELS].astype(np.float64)
    reps = w @ covered / w.sum(axis=1)
    for level in (0.8, 0.95):
        m = set_metrics(
            SETS, LABELS, alpha=0.1, resampling=Resampling(n_boot=b, level=level, seed=5)
        )
        tail = (1 - level) / 2
        assert m.ci["coverage"] == pytest.approx(tuple(np.quantile(reps, [tail, 1 - tail])))
        assert m.resampling.level == level
    narrow = set_metrics(
        SETS, LABELS, alpha=0.1, resampling=Resampling(n_boot=b, level=0.8, seed=5)
    ).ci["coverage"]
    wide = set_metrics(
        SETS, LABELS, alpha=0.1, resampling=Resampling(n_boot=b, level=0.95, seed=5)
    ).ci["coverage"]
    assert wide[0] <= narrow[0] < narrow[1] <= wide[1]


def test_no_resamples_no_interval_and_bad_input() -> None:
    m = set_metrics(SETS, LABELS, alpha=0.1, resampling=Resampling(n_boot=0))
    assert all(np.isnan(m.ci[k][0]) for k in SET_METRICS)
    with pytest.raises(InputError, match="level"):
        set_metrics(SETS, LABELS, alpha=0.1, resampling=Resampling(level=1.0))
    with pytest.raises(InputError, match="boolean mask"):
        set_metrics(SETS.astype(int), LABELS, alpha=0.1)
