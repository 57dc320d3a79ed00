"""Seed-paired differences against temperature scaling."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from calibkit.study.report.paired import paired_differences, paired_table, welch_test


def rows(pairs: list[tuple[float, float]], other: str = "other") -> list[dict[str, object]]:
    return [
        {"model": "m", "seed": s, "calibrator": c, "ece": e, "nll": 0.5 + e}
        for s, pair in enumerate(pairs)
        for c, e in zip(("temperature", other), pair, strict=True)
    ]


def test_paired_t_test_by_hand() -> None:
    """d = (1, 1, 1.5) points: t = 7 on 2 degrees of freedom, where the t distribution's
    CDF is 1/2 + t / (2 sqrt(t^2 + 2)), so p = 1 - 7 / sqrt(51)."""
    d = paired_differences(rows([(0.02, 0.03), (0.04, 0.05), (0.03, 0.045)]), "m", "ece")
    got = d["other"]
    assert got.mean == pytest.approx(0.035 / 3)
    assert got.std == pytest.approx(
        math.sqrt(((0.01 - 0.035 / 3) ** 2 * 2 + (0.015 - 0.035 / 3) ** 2) / 2)
    )
    assert got.p == pytest.approx(1 - 7 / math.sqrt(51), rel=1e-9)
    assert (got.n, got.verdict) == (3, "worse")


def test_better_same_and_undefined() -> None:
    better = paired_differences(rows([(0.03, 0.02), (0.05, 0.04), (0.045, 0.03)]), "m", "ece")
    assert better["other"].verdict == "better"
    noisy = paired_differences(rows([(0.03, 0.04), (0.05, 0.04), (0.04, 0.045)]), "m", "ece")
    assert noisy["other"].p > 0.05
    assert noisy["other"].verdict == "same"
    equal = paired_differences(rows([(0.03, 0.03), (0.05, 0.05)]), "m", "ece")
    assert math.isnan(equal["other"].p)
    assert equal["other"].verdict == "same"
    constant = paired_differences(rows([(0.03, 0.04), (0.05, 0.06)]), "m", "ece")
    assert constant["other"].p == 0.0
    assert constant["other"].verdict == "worse"


def test_only_seeds_both_have_and_no_reference() -> None:
    data = rows([(0.02, 0.03), (0.04, 0.05), (0.03, 0.045)])
    data = [r for r in data if not (r["seed"] == 2 and r["calibrator"] == "other")]
    assert paired_differences(data, "m", "ece")["other"].n == 2
    assert paired_table([r for r in data if r["calibrator"] != "temperature"], "m") is None
    table = paired_table(data, "m")
    assert table is not None
    assert table.title.endswith("(n = 2)")
    assert [c.text for c in table.rows[0]][:4] == ["other", "+1.00 ± 0.00", "0.000", "worse"]


# ----- welch_test --------------------------------------------------------------------------
def test_welch_matches_scipy() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.normal(0.0, 1.0, 7), rng.normal(0.8, 2.0, 5)
    res = stats.ttest_ind(a, b, equal_var=False)
    t, p = welch_test(a, b)
    assert t == pytest.approx(float(res.statistic), rel=1e-12)
    assert p == pytest.approx(float(res.pvalue), rel=1e-12)
    assert welch_test([1.0, 2.0, math.nan, 3.0], [2.0, 4.0, 7.0]) == welch_test(
        [1, 2, 3], [2, 4, 7]
    )


@pytest.mark.parametrize(
    ("a", "b"),
    [([1.0], [1.0, 2.0, 3.0]), ([], []), ([2.0, 2.0, 2.0], [3.0, 3.0]), ([1.0, math.nan], [1, 2])],
)
def test_welch_undefined_is_nan(a: list[float], b: list[float]) -> None:
    t, p = welch_test(a, b)
    assert math.isnan(t)
    assert math.isnan(p)


def test_welch_one_constant_side_is_defined() -> None:
    _, p = welch_test([2.0, 2.0, 2.0], [1.0, 2.0, 3.5])
    assert 0.0 < p < 1.0
