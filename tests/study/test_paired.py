"""Seed-paired differences against temperature scaling."""

from __future__ import annotations

import math

import pytest

from calibkit.study.paired import paired_differences, paired_table


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
