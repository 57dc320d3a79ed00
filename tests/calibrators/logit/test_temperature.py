"""Tests of temperature scaling (NLL fit) and its grid-search variant (ECE)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.optimize import minimize_scalar
from scipy.special import logsumexp

from calibkit.calibrators import TemperatureScaling, TemperatureScalingECE
from calibkit.calibrators.logit.temperature import fit_inverse_temperature, nll_derivatives
from calibkit.core.errors import BoundWarning, InputError
from calibkit.metrics import nll
from tests.calibrators.problems import random_problem


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


# ----- the NLL fit ----------------------------------------------------------------------------
@pytest.mark.parametrize("method", [TemperatureScaling, TemperatureScalingECE])
def test_keeps_the_argmax(method: type) -> None:
    z, y = random_problem(500, 7, seed=1)
    cal = method().fit(z, y)
    assert np.array_equal(cal.predict_proba(z).argmax(axis=1), z.argmax(axis=1))
    np.testing.assert_allclose(cal.transform(z), z / cal.temperature_, rtol=1e-15)


def test_recovers_a_known_temperature() -> None:
    z, y = random_problem(20_000, 10, temperature=2.0, seed=2)
    t = TemperatureScaling().fit(z, y).temperature_
    assert abs(t / 2.0 - 1) < 0.01


@pytest.mark.parametrize(("n", "k"), [(3000, 3), (2000, 31), (2000, 32), (500, 300)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matches_bounded_brent(n: int, k: int, dtype: type) -> None:
    # narrow (k < 32, class-major) and wide layouts, both precisions
    z, y = random_problem(n, k, temperature=1.7, seed=k)
    z = z.astype(dtype)
    t = TemperatureScaling().fit(z, y).temperature_
    assert abs(t / _brent_temperature(z, y, 0.1, 10.0) - 1) < 1e-6


def test_matches_bounded_brent_from_a_subsample_start() -> None:
    # more than 2**20 logits and 4 * 2048 rows: the solve starts from a subsample's optimum
    z, y = random_problem(8200, 130, temperature=0.7, seed=3)
    z = z.astype(np.float32)
    t = TemperatureScaling().fit(z, y).temperature_
    assert abs(t / _brent_temperature(z, y, 0.1, 10.0) - 1) < 1e-6


@pytest.mark.parametrize(
    ("t_min", "t_max", "expected"), [(0.1, 1.5, 1.5), (3.0, 10.0, 3.0), (2.5, 2.6, 2.5)]
)
def test_optimum_outside_the_bounds_gives_the_bound(
    t_min: float, t_max: float, expected: float
) -> None:
    z, y = random_problem(3000, 5, temperature=2.0, seed=4)  # optimum near 2
    side = "upper" if expected == t_max else "lower"
    with pytest.warns(BoundWarning, match=f"T reached its {side} bound"):
        assert TemperatureScaling(t_min=t_min, t_max=t_max).fit(z, y).temperature_ == expected


def test_extreme_optima_hit_the_default_bounds() -> None:
    rng = np.random.default_rng(5)
    z = rng.standard_normal((400, 4))
    always_right = z.argmax(axis=1)  # NLL decreases as T -> 0
    with pytest.warns(BoundWarning, match="lower bound t_min = 0.1;"):
        ts = TemperatureScaling().fit(z, always_right)
    assert ts.temperature_ == pytest.approx(0.1, rel=0)
    unrelated = rng.integers(0, 4, size=400)
    unrelated[:4] = np.arange(4)
    z_sharp = z * 50  # labels unrelated to very confident logits: T as large as allowed
    with pytest.warns(BoundWarning, match="upper bound t_max = 10;"):
        ts = TemperatureScaling().fit(z_sharp, unrelated)
    assert ts.temperature_ == pytest.approx(10.0, rel=0)


@pytest.mark.parametrize("seed", range(6))
def test_calibration_nll_never_above_the_identity(seed: int) -> None:
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 40))
    z, y = random_problem(int(rng.integers(20, 2000)), k, temperature=float(rng.uniform(0.3, 3)))
    z = z * rng.uniform(0.1, 5)
    ts = TemperatureScaling().fit(z.astype(np.float32), y)
    assert nll(y, logits=ts.transform(z)) <= nll(y, logits=z) + 1e-12


def test_constant_logits_give_the_identity() -> None:
    z = np.zeros((10, 3))
    y = np.array([0, 1, 2, 0, 1, 2, 0, 1, 2, 0])
    ts = TemperatureScaling().fit(z, y)
    assert ts.temperature_ == 1.0
    np.testing.assert_allclose(ts.predict_proba(z), 1 / 3)


def test_float32_and_float64_logits_agree() -> None:
    z, y = random_problem(3000, 20, seed=6)
    t32 = TemperatureScaling().fit(z.astype(np.float32), y).temperature_
    t64 = TemperatureScaling().fit(z.astype(np.float32).astype(np.float64), y).temperature_
    assert abs(t32 / t64 - 1) < 1e-6
    grid32 = TemperatureScalingECE(t_step=0.01).fit(z.astype(np.float32), y)
    grid64 = TemperatureScalingECE(t_step=0.01).fit(z.astype(np.float32).astype(np.float64), y)
    assert grid32.temperature_ == grid64.temperature_


@pytest.mark.parametrize("method", [TemperatureScaling, TemperatureScalingECE])
def test_torch_tensor_inputs(method: type) -> None:
    z, y = random_problem(600, 6, seed=7)
    z32 = z.astype(np.float32)
    from_numpy = method().fit(z32, y)
    from_torch = method().fit(torch.from_numpy(z32), torch.from_numpy(y))
    assert from_torch.temperature_ == from_numpy.temperature_
    np.testing.assert_array_equal(
        from_torch.predict_proba(torch.from_numpy(z32)), from_numpy.predict_proba(z32)
    )


def test_nll_derivatives_match_finite_differences() -> None:
    z, y = random_problem(800, 9, seed=8)
    beta, eps = 0.6, 1e-5
    f, g, h = nll_derivatives(z, y, beta)
    assert f == pytest.approx(_mean_nll(z, y, 1 / beta), rel=1e-13)
    f_up, g_up, _ = nll_derivatives(z, y, beta + eps)
    f_down, g_down, _ = nll_derivatives(z, y, beta - eps)
    assert g == pytest.approx((f_up - f_down) / (2 * eps), rel=1e-7)
    assert h == pytest.approx((g_up - g_down) / (2 * eps), rel=1e-7)


def test_fit_inverse_temperature_is_interior_optimum() -> None:
    z, y = random_problem(1000, 5, seed=9)
    b = fit_inverse_temperature(z, y, 0.1, 10.0)
    assert abs(nll_derivatives(z, y, b)[1]) < 1e-9


@pytest.mark.parametrize(
    ("params", "argument"),
    [
        ({"t_min": 2.0, "t_max": 1.0}, "t_max"),
        ({"t_min": 1.0, "t_max": 1.0}, "t_max"),
        ({"t_min": -0.1}, "t_min"),
        ({"t_min": 0.0}, "t_min"),
        ({"t_max": -3.0}, "t_max"),
        ({"t_min": math.nan}, "t_min"),
        ({"t_max": math.inf}, "t_max"),
        ({"t_min": "0.1"}, "t_min"),
        ({"t_max": True}, "t_max"),
    ],
)
@pytest.mark.parametrize("method", [TemperatureScaling, TemperatureScalingECE])
def test_bad_parameters_name_the_argument(method: type, params: dict, argument: str) -> None:
    with pytest.raises(InputError) as info:
        method(**params)
    assert info.value.argument == argument


@pytest.mark.parametrize(
    ("params", "argument"),
    [
        ({"t_step": 0.0}, "t_step"),
        ({"t_step": -0.01}, "t_step"),
        ({"t_step": math.nan}, "t_step"),
        ({"t_step": 1e-9}, "t_step"),  # 5e9 grid points
        ({"n_bins": 0}, "n_bins"),
    ],
)
def test_bad_grid_parameters_name_the_argument(params: dict, argument: str) -> None:
    with pytest.raises(InputError) as info:
        TemperatureScalingECE(**params)
    assert info.value.argument == argument
