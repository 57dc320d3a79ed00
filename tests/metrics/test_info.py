"""The metric registry: one entry per metric, everything else derived from it."""

from __future__ import annotations

import numpy as np

from calibkit import Resampling
from calibkit.metrics import (
    EXTRA_METRICS,
    FLOOR_METRICS,
    METRIC_NAMES,
    METRICS,
    MetricInfo,
    ece,
    evaluate,
)
from calibkit.metrics.conformal import SET_METRICS


def test_names_and_floors_are_derived_in_report_order() -> None:
    assert tuple(METRICS.names()) == METRIC_NAMES + EXTRA_METRICS + SET_METRICS
    assert EXTRA_METRICS[0] == "smooth_ece"
    assert METRIC_NAMES[:5] == ("accuracy", "nll", "brier", "entropy", "ece")
    assert FLOOR_METRICS == ("ece", "aece")


def test_every_entry_is_consistent() -> None:
    labels = set()
    for name in METRICS:
        info = METRICS.get(name)
        assert isinstance(info, MetricInfo)
        assert info.name == name
        assert info.better in ("min", "max", None)
        assert info.kind in ("score", "error", "set")
        assert info.kind != "error" or (info.percent and info.better == "min")
        assert info.kind != "set" or not (info.in_suite or info.kernel or info.has_floor)
        assert callable(info.function)
        labels.add(info.label)
    assert len(labels) == len(METRICS)


def test_every_metric_says_in_one_line_what_it_measures() -> None:
    """Issue #46, item 6: every metric's meaning, declared once on its entry and shown
    beside it in the reports, fits one line."""
    for name in METRICS:
        summary = METRICS.get(name).summary
        assert summary, name
        assert len(summary) <= 100, name
        assert "\n" not in summary
        assert not summary.endswith("."), name  # the reports add the direction and the stop


def test_a_registry_entry_calls_its_function() -> None:
    y = np.array([0, 1, 1, 0])
    p = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.7, 0.3]])
    assert METRICS.get("ece")(y, probs=p, n_bins=5) == ece(y, probs=p, n_bins=5)
    assert METRICS.get("accuracy")(y, probs=p) == 0.75  # 3 of 4 argmaxes right


def test_evaluate_reports_every_metric_and_each_floor() -> None:
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(3), size=200)
    y = rng.integers(0, 3, 200)
    values = evaluate(y, probs=p, resampling=Resampling(n_boot=0, seed=0)).values
    assert [k for k in values if not k.endswith("_floor")] == list(METRIC_NAMES)
    assert [k for k in values if k.endswith("_floor")] == [f"{m}_floor" for m in FLOOR_METRICS]
