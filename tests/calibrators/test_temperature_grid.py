"""Tests of temperature scaling by grid search on ECE, and the ECE-vs-temperature curve."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from scipy.special import logsumexp

from calibkit.calibrators import TemperatureScalingECE, ece_temperature_curve
from calibkit.errors import InputError
from calibkit.metrics import ece


def _problem(
    n: int, k: int, temperature: float = 2.0, scale: float = 3.0, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Float64 logits N(0, scale^2) and labels drawn from softmax(logits / temperature)."""
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, k)) * scale
    p = np.exp((z - z.max(axis=1, keepdims=True)) / temperature)
    cdf = np.cumsum(p, axis=1)
    u = rng.uniform(size=(n, 1)) * cdf[:, -1:]
    return z, np.minimum((cdf < u).sum(axis=1), k - 1)


def _mean_nll(z: np.ndarray, y: np.ndarray, t: float) -> float:
    s = np.asarray(z, dtype=np.float64) / t
    return float(np.mean(logsumexp(s, axis=1) - s[np.arange(len(y)), y]))


def _brent_temperature(z: np.ndarray, y: np.ndarray, t_min: float, t_max: float) -> float:
    """The reference optimum: scipy's bounded Brent on the full-array float64 NLL in log T."""
    res = minimize_scalar(
        lambda log_t: _mean_nll(z, y, math.exp(log_t)),
        bounds=(math.log(t_min), math.log(t_max)),
        method="bounded",
        options={"xatol": 1e-11},
    )
    return math.exp(res.x)


# ----- the ECE grid search --------------------------------------------------------------------
def test_grid_search_returns_the_grid_point_of_minimal_ece() -> None:
    z, y = _problem(400, 6, temperature=1.5, seed=10)
    cal = TemperatureScalingECE(t_min=0.5, t_max=3.0, t_step=0.05).fit(z, y)
    grid = cal.grid()
    brute = np.array([ece(y, logits=z / t) for t in grid])
    assert cal.temperature_ in grid
    assert cal.calibration_ece_ == pytest.approx(brute.min(), abs=1e-12)
    assert cal.temperature_ == grid[np.flatnonzero(brute <= brute.min() + 1e-12)[0]]


@pytest.mark.parametrize(("n", "k", "scale"), [(300, 2, 3.0), (300, 10, 3.0), (200, 60, 8.0)])
def test_curve_matches_metrics_ece(n: int, k: int, scale: float) -> None:
    # a dense grid (default spacing) so that the Taylor-series windows are exercised
    z, y = _problem(n, k, scale=scale, seed=k)
    grid = 0.001 * np.arange(1, 5001)
    curve = ece_temperature_curve(z, y, grid)
    picks = np.r_[0:60, 60:5000:37]
    brute = np.array([ece(y, logits=z / grid[i]) for i in picks])
    np.testing.assert_allclose(curve[picks], brute, rtol=0, atol=1e-12)


def test_curve_keeps_the_order_and_handles_duplicates() -> None:
    z, y = _problem(200, 5, seed=11)
    temps = np.array([2.0, 0.5, 2.0, 1.0, 0.01, 7.0])
    curve = ece_temperature_curve(z, y, temps)
    brute = [ece(y, logits=z / t) for t in temps]
    np.testing.assert_allclose(curve, brute, rtol=0, atol=1e-12)


@pytest.mark.parametrize("temps", [[], [1.0, 0.0], [1.0, -2.0], [math.nan], "warm"])
def test_curve_rejects_bad_temperatures(temps: object) -> None:
    z, y = _problem(50, 3, seed=12)
    with pytest.raises(InputError) as info:
        ece_temperature_curve(z, y, temps)
    assert info.value.argument == "temperatures"
