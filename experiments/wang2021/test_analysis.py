"""The loss-study analysis: Welch test, Wang et al.'s tables, the finding, calibration size."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from calibkit.calibrators import create_calibrator
from calibkit.core.errors import InputError
from calibkit.metrics import ece
from calibkit.reporting.render import markdown_table
from calibkit.study.report.paired import (
    welch_test,
)
from experiments.wang2021.analysis import (
    DOWN,
    UP,
    calibration_size_curve,
    finding,
    table1,
    table2,
)

METHODS = {
    "ce": ("cross_entropy", 0.0),
    "ls_0.01": ("label_smoothing", 0.01),
    "ls_0.05": ("label_smoothing", 0.05),
    "focal_1": ("focal", 1.0),
    "focal_3": ("focal", 3.0),
    "inverse_focal_2": ("inverse_focal", 2.0),
}
NOISE = np.array([-0.002, -0.001, 0.0, 0.001, 0.002])
SHUFFLED = np.array([0.001, -0.002, 0.002, 0.0, -0.001])
#: label -> calibrator -> ECE over 5 seeds (fractions). Raw: Focal 3 lowest; after TS:
#: LS clearly above CE, Focal 3 clearly below, Focal 1 within noise; after HB: CE lowest.
ECES = {
    "ce": {"none": 0.05 + NOISE, "temperature_ece": 0.010 + NOISE, "histogram": 0.008 + NOISE},
    "ls_0.01": {"none": 0.03 + NOISE, "temperature_ece": 0.020 + NOISE, "histogram": 0.02 + NOISE},
    "ls_0.05": {"none": 0.02 + NOISE, "temperature_ece": 0.030 + NOISE, "histogram": 0.03 + NOISE},
    "focal_1": {
        "none": 0.04 + NOISE,
        "temperature_ece": 0.0102 + SHUFFLED,
        "histogram": 0.012 + NOISE,
    },
    "focal_3": {"none": 0.01 + NOISE, "temperature_ece": 0.005 + NOISE, "histogram": 0.02 + NOISE},
    "inverse_focal_2": {
        "none": 0.08 + NOISE,
        "temperature_ece": 0.015 + NOISE,
        "histogram": 0.009 + 5 * SHUFFLED,
    },
}
ACCURACY = {"ce": 0.90, "ls_0.01": 0.91, "ls_0.05": 0.905, "focal_1": 0.89}


def study_rows() -> list[dict[str, Any]]:
    rows = []
    for label, by_cal in ECES.items():
        for cal, values in by_cal.items():
            for seed, value in enumerate(values):
                temperature = {"none": 1.0, "temperature_ece": 1.5 + 0.1 * seed}.get(cal, math.nan)
                rows.append(
                    {
                        "model": label,
                        "seed": seed,
                        "calibrator": cal,
                        "ece": float(value),
                        "accuracy": ACCURACY.get(label, 0.88) + 0.001 * seed,
                        "temperature": temperature,
                    }
                )
    return rows


# ----- table1 ------------------------------------------------------------------------------
def test_table1_picks_the_lowest_mean_ece_per_method() -> None:
    table = table1(study_rows(), METHODS)
    assert table.header == ["Method", "Best coefficient", "ECE (%)", "Accuracy (%)"]
    got = {row[0].text: row[1].text for row in table.rows}
    assert got == {"CE": "–", "Label smoothing": "0.05", "Focal": "3", "Inverse focal": "2"}
    ls = next(r for r in table.rows if r[0].text == "Label smoothing")
    assert ls[2].text == "2.00 ± 0.16"
    assert ls[3].text == "90.70 ± 0.16"
    bold_ece = [r[0].text for r in table.rows if r[2].best]
    assert bold_ece == ["Focal"]
    assert [r[0].text for r in table.rows if r[3].best] == ["Label smoothing"]


def test_table1_ties_go_to_the_smaller_coefficient() -> None:
    rows = [r for r in study_rows() if r["model"] != "ls_0.05"]
    rows += [{**r, "model": "ls_0.05"} for r in rows if r["model"] == "ls_0.01"]
    table = table1(rows, METHODS)
    assert next(r[1].text for r in table.rows if r[0].text == "Label smoothing") == "0.01"


# ----- table2 ------------------------------------------------------------------------------
def _cells(label: str) -> dict[str, Any]:
    table = table2(study_rows(), METHODS)
    order = list(METHODS)
    return dict(zip(table.header, table.rows[order.index(label)], strict=True))


def test_table2_layout_and_title() -> None:
    table = table2(study_rows(), METHODS)
    assert table.header == [
        "Method",
        "Coefficient",
        "ECE without post-hoc (%)",
        "ECE after TS (%)",
        "T (TS)",
        "ECE after HB (%)",
    ]
    assert [(r[0].text, r[1].text) for r in table.rows] == [
        ("CE", "–"),
        ("Label smoothing", "0.01"),
        ("Label smoothing", "0.05"),
        ("Focal", "1"),
        ("Focal", "3"),
        ("Inverse focal", "2"),
    ]
    assert "Welch" in table.title
    assert "p < 0.05" in table.title
    assert _cells("ce")["T (TS)"].text == "1.700 ± 0.158"
    assert "↑" in markdown_table(table)


def test_table2_markers_against_ce() -> None:
    ts = "ECE after TS (%)"
    assert _cells("ls_0.01")[ts].text == f"2.00 ± 0.16 {UP}"
    assert _cells("ls_0.05")[ts].text.endswith(UP)
    assert _cells("focal_3")[ts].text == f"0.50 ± 0.16 {DOWN}"
    assert _cells("focal_1")[ts].text == "1.02 ± 0.16"  # within noise: no marker
    assert _cells("ce")[ts].text == "1.00 ± 0.16"  # the reference is never marked
    hb = "ECE after HB (%)"
    assert _cells("inverse_focal_2")[hb].text == "0.90 ± 0.79"  # noisy: not significant
    raw = "ECE without post-hoc (%)"
    assert _cells("inverse_focal_2")[raw].text.endswith(UP)
    assert _cells("focal_3")[raw].text.endswith(DOWN)


def test_table2_markers_follow_the_alpha() -> None:
    _, p = welch_test(ECES["focal_1"]["temperature_ece"], ECES["ce"]["temperature_ece"])
    loose = table2(study_rows(), METHODS, alpha=min(1.0, 2 * p))
    assert loose.rows[3][3].text.endswith(UP)


def test_table2_bold_is_the_lowest_mean_per_column() -> None:
    table = table2(study_rows(), METHODS)
    for col, expected in ((2, "3"), (3, "3"), (5, "–")):
        assert [r[1].text for r in table.rows if r[col].best] == [expected]
    assert not any(r[4].best for r in table.rows)  # temperatures are not ranked


def test_table2_needs_a_cross_entropy_model() -> None:
    methods = {k: v for k, v in METHODS.items() if k != "ce"}
    with pytest.raises(InputError, match="cross_entropy"):
        table2(study_rows(), methods)


# ----- finding -----------------------------------------------------------------------------
def test_finding_names_the_winners() -> None:
    text = finding(study_rows(), METHODS)
    raw, ts, hb = (text.split(f"{w}, ")[1] for w in ("Without post-hoc", "After TS", "After HB"))
    assert raw.startswith("the lowest mean ECE is Focal 3 (1.00 ± 0.16%); CE has 5.00 ± 0.16%")
    assert ts.startswith("the lowest mean ECE is Focal 3 (0.50 ± 0.16%)")
    assert "1 of 5 other models are significantly lower than CE (Focal 3) and 3 significantly" in ts
    assert hb.startswith("CE has the lowest mean ECE (0.80 ± 0.16%)")
    assert "0 of 5 other models are significantly lower than CE and 4 significantly higher" in hb
    assert "Inverse focal 2: 0.90% (rank 2 of 6)." in hb
    assert "Inverse focal 2: 8.00% (rank 6 of 6)." in raw
    assert "Welch" in text


# ----- calibration_size_curve -------------------------------------------------------------
def _logits(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    z = 3.0 * (1.5 * np.eye(3)[y] + rng.normal(0.0, 1.0, (n, 3)))
    return z, y


CALIBRATORS: dict[str, dict[str, Any]] = {
    "none": {},
    "temperature_ece": {"t_min": 0.05, "t_max": 5.0, "t_step": 0.05},
    "histogram": {"n_bins": 10, "smoothing": 0.0},
}


def test_calibration_size_curve_shapes_and_determinism() -> None:
    (cz, cy), (tz, ty) = _logits(200, 1), _logits(400, 2)
    sizes = [20, 60, 200]
    a = calibration_size_curve(cz, cy, tz, ty, sizes, CALIBRATORS, seed=3, n_repeats=3)
    b = calibration_size_curve(cz, cy, tz, ty, sizes, CALIBRATORS, seed=3, n_repeats=3)
    c = calibration_size_curve(cz, cy, tz, ty, sizes, CALIBRATORS, seed=4, n_repeats=3)
    assert set(a) == set(CALIBRATORS)
    for name in CALIBRATORS:
        assert a[name].shape == (3, 2)
        np.testing.assert_array_equal(a[name], b[name])
        assert a[name][-1, 1] == 0.0  # the full size: every repeat is the same fit
    assert not np.array_equal(a["histogram"][:2], c["histogram"][:2])
    assert np.all(a["histogram"][:2, 1] > 0)
    np.testing.assert_allclose(a["none"][:, 0], ece(ty, logits=tz))
    alone = calibration_size_curve(cz, cy, tz, ty, [60], CALIBRATORS, seed=3, n_repeats=3)
    np.testing.assert_array_equal(alone["histogram"][0], a["histogram"][1])


def test_calibration_size_curve_full_size_is_the_whole_fit() -> None:
    (cz, cy), (tz, ty) = _logits(150, 5), _logits(300, 6)
    out = calibration_size_curve(cz, cy, tz, ty, [150], CALIBRATORS, seed=0, n_repeats=1)
    for name in ("temperature_ece", "histogram"):
        cal = create_calibrator(name, **CALIBRATORS[name]).fit(cz, cy)
        assert out[name][0, 0] == ece(ty, cal.predict_proba(tz))
        assert out[name][0, 1] == 0.0


@pytest.mark.parametrize("sizes", [[], [1], [151], [10.0]])
def test_calibration_size_curve_rejects_bad_sizes(sizes: list[Any]) -> None:
    (cz, cy), (tz, ty) = _logits(150, 5), _logits(30, 6)
    with pytest.raises(InputError, match="sizes"):
        calibration_size_curve(cz, cy, tz, ty, sizes, CALIBRATORS, seed=0)
