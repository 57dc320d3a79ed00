"""Conformal sets judged on held-out data (numbers only) and their report (verdict first)."""

from __future__ import annotations

import dataclasses
import logging

import numpy as np
import pytest

from calibkit import Resampling
from calibkit.core.errors import InputError
from calibkit.core.outputs import as_outputs
from calibkit.core.progress import progress_of
from calibkit.reporting.conformal_report import conformal_report, under_covers
from calibkit.reporting.text import plain
from calibkit.workflows.conformal import conformal_sets, split_conformal_sets
from tests.calibrators.problems import random_problem


@pytest.fixture(scope="module")
def whole():  # type: ignore[no-untyped-def]
    z, y = random_problem(1200, 4, seed=1)
    return as_outputs(y, logits=z)


def test_level_reaches_the_intervals(whole) -> None:  # type: ignore[no-untyped-def]
    found = split_conformal_sets(
        whole, ["lac", "aps"], alpha=0.1, resampling=Resampling(n_boot=200, level=0.8)
    )
    assert (found.n_cal, found.n_test) == (600, 600)
    assert all(r.metrics.resampling.level == 0.8 for r in found.rows)
    wide = split_conformal_sets(
        whole, ["lac", "aps"], alpha=0.1, resampling=Resampling(n_boot=200, level=0.95)
    )
    for a, b in zip(found.rows, wide.rows, strict=True):
        assert a.metrics.values == b.metrics.values
        lo8, hi8 = a.metrics.ci["coverage"]
        lo95, hi95 = b.metrics.ci["coverage"]
        assert hi8 - lo8 < hi95 - lo95


def test_a_split_that_cannot_be_is_blamed_on_cal_size(whole) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError) as exc:
        split_conformal_sets(
            whole, ["lac"], cal_size=5000, alpha=0.1, resampling=Resampling(n_boot=0)
        )
    assert exc.value.argument == "cal_size"
    with pytest.raises(InputError) as exc:
        split_conformal_sets(
            whole, ["lac"], cal_size=0.1, alpha=0.001, resampling=Resampling(n_boot=0)
        )
    assert exc.value.argument == "cal_size"


def test_the_verdict_says_coverage_against_the_target_first(whole) -> None:  # type: ignore[no-untyped-def]
    found = split_conformal_sets(
        whole, ["lac", "aps"], alpha=0.1, resampling=Resampling(n_boot=200)
    )
    report = conformal_report(found.rows, source="toy")
    headline = plain(report.document.verdict.headline)
    smallest = min(found.rows, key=lambda r: r.metrics.values["mean_set_size"])
    assert f"{smallest.score.upper()} gives the smallest sets" in headline
    assert "90% target" in headline
    assert report.text.index("Coverage %") > 0
    assert report.results["results"][0]["values"]["mean_set_size"] > 0
    assert set(report.files) == {"conformal_lac.json", "conformal_aps.json"}


def test_an_under_covering_score_is_named(whole) -> None:  # type: ignore[no-untyped-def]
    cal, test = whole, whole
    rows = conformal_sets(cal, test, ["lac", "aps"], alpha=0.1, resampling=Resampling(n_boot=100))
    low = dataclasses.replace(
        rows[1].metrics,
        values={**rows[1].metrics.values, "coverage": 0.8},
        ci={**rows[1].metrics.ci, "coverage": (0.78, 0.82)},
    )
    rows[1] = dataclasses.replace(rows[1], metrics=low)
    assert under_covers(rows[1])
    assert not under_covers(rows[0])
    headline = plain(conformal_report(rows, source="toy").document.verdict.headline)
    assert "LAC gives the smallest sets that reach the 90% target" in headline
    assert "APS under-covers: 80.0% of test labels, its 95% interval [78.0%, 82.0%]" in headline


def test_without_resamples_the_verdict_claims_no_interval(whole) -> None:  # type: ignore[no-untyped-def]
    rows = conformal_sets(whole, whole, ["lac"], alpha=0.2, resampling=Resampling(n_boot=0))
    verdict = conformal_report(rows, source="toy").document.verdict
    assert plain(verdict.headline).startswith("LAC covers ")
    assert "no intervals" in verdict.detail
    assert np.isnan(rows[0].metrics.ci["coverage"][0])


def test_each_score_is_a_step_when_fitted_and_when_judged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    z, y = random_problem(600, 4, seed=0)
    cal, test = as_outputs(y[:300], logits=z[:300]), as_outputs(y[300:], logits=z[300:])
    with caplog.at_level(logging.DEBUG, logger="calibkit.workflows.conformal"):
        conformal_sets(cal, test, ["lac", "aps"], alpha=0.1, resampling=Resampling(n_boot=20))
    events = [e for r in caplog.records if r.levelno == logging.DEBUG if (e := progress_of(r))]
    assert [(e.step, e.total, e.text) for e in events] == [
        (0, 4, ""),
        (1, 4, "lac fitted"),
        (2, 4, "aps fitted"),
        (3, 4, "lac judged"),
        (4, 4, "aps judged"),
    ]
