"""Per-bin intervals (against scipy) and the CORP curve with its consistency band."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binomtest

from calibkit.core.binning import bin_stats
from calibkit.core.errors import InputError
from calibkit.metrics.reliability_bands import (
    bin_intervals,
    corp_reliability,
    isotonic_fit,
    proportion_interval,
)

CASES = [(0, 1), (1, 1), (0, 7), (3, 10), (7, 7), (12, 40), (999, 1000), (250, 1000)]


@pytest.mark.parametrize("method", ["wilson", "clopper-pearson"])
@pytest.mark.parametrize("level", [0.95, 0.8])
def test_intervals_equal_scipy_binomtest(method: str, level: float) -> None:
    k = np.array([c[0] for c in CASES], dtype=float)
    n = np.array([c[1] for c in CASES], dtype=float)
    lo, hi = proportion_interval(k, n, method, level)  # type: ignore[arg-type]
    scipy_method = "exact" if method == "clopper-pearson" else "wilson"
    for (kk, nn), a, b in zip(CASES, lo, hi, strict=True):
        ci = binomtest(kk, nn).proportion_ci(confidence_level=level, method=scipy_method)
        # scipy finds Clopper-Pearson's bounds by root finding, we by beta quantiles
        assert a == pytest.approx(ci.low, abs=1e-9)
        assert b == pytest.approx(ci.high, abs=1e-9)


def test_bin_intervals_leave_empty_bins_empty() -> None:
    stats = bin_stats(np.array([0.05, 0.08, 0.95]), np.array([1.0, 0.0, 1.0]), 5)
    iv = bin_intervals(stats, "clopper-pearson")
    assert np.isnan(iv.lower[1:4]).all()
    assert np.isnan(iv.upper[1:4]).all()
    ci = binomtest(1, 2).proportion_ci(method="exact")
    assert (iv.lower[0], iv.upper[0]) == (pytest.approx(ci.low), pytest.approx(ci.high))
    with pytest.raises(InputError, match="method"):
        bin_intervals(stats, "wald")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="level"):
        bin_intervals(stats, level=1.0)


def test_isotonic_fit_by_hand_and_against_sklearn() -> None:
    # PAV by hand: 0, (1, 0) pooled to 0.5, (1, 1, 0) -> ... with ties at 0.5 pooled first
    conf = np.array([0.1, 0.3, 0.5, 0.5, 0.7, 0.9])
    y = np.array([0.0, 1.0, 1.0, 0.0, 0.0, 1.0])
    # 0.3 (1) > 0.5-run mean (0.5) > 0.7 (0): pooled to (1 + 1 + 0 + 0) / 4 = 0.5
    assert isotonic_fit(conf, y, conf).tolist() == [0.0, 0.5, 0.5, 0.5, 0.5, 1.0]
    from sklearn.isotonic import isotonic_regression

    rng = np.random.default_rng(0)
    s = np.sort(rng.uniform(size=300))  # distinct, sorted: the plain PAV applies
    out = (rng.uniform(size=300) < s**2).astype(float)
    reference = isotonic_regression(out, y_min=0.0, y_max=1.0)
    assert np.max(np.abs(isotonic_fit(s[::-1], out[::-1], s) - reference)) < 1e-12


def test_band_covers_the_diagonal_and_the_calibrated_curve_but_not_overconfidence() -> None:
    rng = np.random.default_rng(5)
    conf = rng.uniform(0.3, 1.0, 3000)
    y = (rng.uniform(size=conf.size) < conf).astype(int)
    rel = corp_reliability(y, conf, mode="positive_class", n_resamples=100, seed=1)
    inside = (rel.lower <= rel.grid) & (rel.grid <= rel.upper)
    assert inside.mean() > 0.9  # the band is built under calibration: around the diagonal
    curve_inside = (rel.lower <= rel.curve) & (rel.curve <= rel.upper)
    assert curve_inside.mean() > 0.75  # a 90% pointwise band: most points of a true curve
    again = corp_reliability(y, conf, mode="positive_class", n_resamples=100, seed=1)
    assert np.array_equal(rel.upper, again.upper)  # seeded
    y_over = (rng.uniform(size=conf.size) < 0.5 + (conf - 0.5) / 2).astype(int)
    over = corp_reliability(y_over, conf, mode="positive_class", n_resamples=100, seed=1)
    outside = (over.curve < over.lower) | (over.curve > over.upper)
    assert outside.mean() > 0.5
