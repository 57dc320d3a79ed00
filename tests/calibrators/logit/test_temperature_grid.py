"""Tests of temperature scaling by grid search on ECE, and the ECE-vs-temperature curve."""

from __future__ import annotations

import math

import numpy as np
import pytest

from calibkit.calibrators import TemperatureScalingECE, ece_temperature_curve
from calibkit.calibrators.logit.temperature_grid import ece_grid_minimum
from calibkit.core.errors import InputError
from calibkit.metrics import ece
from tests.calibrators.problems import random_problem


# ----- the ECE grid search --------------------------------------------------------------------
def test_grid_search_returns_the_grid_point_of_minimal_ece() -> None:
    z, y = random_problem(400, 6, temperature=1.5, seed=10)
    cal = TemperatureScalingECE(t_min=0.5, t_max=3.0, t_step=0.05).fit(z, y)
    grid = cal.grid()
    brute = np.array([ece(y, logits=z / t) for t in grid])
    assert cal.temperature_ in grid
    assert cal.calibration_ece_ == pytest.approx(brute.min(), abs=1e-12)
    assert cal.temperature_ == grid[np.flatnonzero(brute <= brute.min() + 1e-12)[0]]


@pytest.mark.parametrize(("n", "k", "scale"), [(300, 2, 3.0), (300, 10, 3.0), (200, 60, 8.0)])
def test_curve_matches_metrics_ece(n: int, k: int, scale: float) -> None:
    # a dense grid (default spacing) so that the Taylor-series windows are exercised
    z, y = random_problem(n, k, scale=scale, seed=k)
    grid = 0.001 * np.arange(1, 5001)
    curve = ece_temperature_curve(z, y, grid)
    picks = np.r_[0:60, 60:5000:37]
    brute = np.array([ece(y, logits=z / grid[i]) for i in picks])
    np.testing.assert_allclose(curve[picks], brute, rtol=0, atol=1e-12)


def test_curve_keeps_the_order_and_handles_duplicates() -> None:
    z, y = random_problem(200, 5, seed=11)
    temps = np.array([2.0, 0.5, 2.0, 1.0, 0.01, 7.0])
    curve = ece_temperature_curve(z, y, temps)
    brute = [ece(y, logits=z / t) for t in temps]
    np.testing.assert_allclose(curve, brute, rtol=0, atol=1e-12)


@pytest.mark.parametrize("temps", [[], [1.0, 0.0], [1.0, -2.0], [math.nan], "warm"])
def test_curve_rejects_bad_temperatures(temps: object) -> None:
    z, y = random_problem(50, 3, seed=12)
    with pytest.raises(InputError) as info:
        ece_temperature_curve(z, y, temps)
    assert info.value.argument == "temperatures"
    with pytest.raises(InputError) as info:
        ece_grid_minimum(z, y, temps)
    assert info.value.argument == "temperatures"


@pytest.mark.parametrize("seed", range(12))
def test_grid_minimum_is_the_minimum_of_the_whole_curve(seed: int) -> None:
    # over- and underconfident problems, few and many classes and samples, shuffled grids
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(20, 3000)), int(rng.integers(2, 40))
    temperature = float(rng.choice([0.5, 1.0, 2.0, 4.0]))
    z, y = random_problem(
        n, k, temperature=temperature, scale=float(rng.uniform(0.5, 8)), seed=seed
    )
    grid = np.round(np.arange(1, 1001) * 0.01, 2)
    if seed % 3 == 0:
        grid = rng.permutation(grid)
    n_bins = int(rng.integers(5, 30)) if seed % 4 == 0 else 15
    curve = ece_temperature_curve(z, y, grid, n_bins)
    i, value = ece_grid_minimum(z, y, grid, n_bins)
    assert value == pytest.approx(curve.min(), abs=1e-12)
    assert i == int(np.flatnonzero(curve <= curve.min() + 1e-12).min())


def test_grid_minimum_with_constant_stretches_and_a_single_temperature() -> None:
    z = np.array([[2.0, 2.0], [1.0, 0.0], [0.0, 3.0]])  # a tie: confidence 1/2 at every T
    y = np.array([0, 0, 1])
    for grid in ([1.0], [0.5, 1.0, 2.0], [5.0, 0.1]):
        curve = ece_temperature_curve(z, y, grid)
        i, value = ece_grid_minimum(z, y, grid)
        assert value == pytest.approx(curve.min(), abs=1e-12)
        assert i == int(np.argmin(curve))
