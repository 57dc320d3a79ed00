"""Tests of spline calibration: a hand-checked fit, the spline basis, invariants."""

from __future__ import annotations

import numpy as np
import pytest

from calibkit.calibrators import SplineCalibration
from calibkit.calibrators.logit.spline import natural_spline_basis, spline_slopes
from tests.calibrators.problems import random_problem, softmax


def test_two_knots_hand_computed() -> None:
    # c = .5 .6 .7 .8 .9, correct 0 1 0 1 1 (K = 2: the top class is class 1):
    # h = (cumsum(a) - cumsum(c)) / 5 = -.1 -.02 -.16 -.12 -.1 at u = 0 .25 .5 .75 1;
    # least-squares slope = sum (u - .5)(h + .1) / sum (u - .5)^2 = -.025 / .625 = -.04
    c = np.array([0.5, 0.6, 0.7, 0.8, 0.9])
    s = SplineCalibration(n_knots=2).fit(np.log(np.column_stack([1 - c, c])), [0, 1, 0, 1, 1])
    np.testing.assert_allclose(s.confidences_, c)
    # c - 0.04, clipped below at 1/K = 0.5
    np.testing.assert_allclose(s.recalibrated_, [0.5, 0.56, 0.66, 0.76, 0.86])
    p = s.predict_proba(np.log([[0.35, 0.65], [0.45, 0.55]]))
    # 0.65: halfway between .6 -> .56 and .7 -> .66; 0.55: between .5 -> .5 and .6 -> .56
    np.testing.assert_allclose(p[:, 1], [0.61, 0.53])


def test_natural_spline_reproduces_a_natural_spline() -> None:
    knots = np.linspace(0, 1, 6)
    u = np.linspace(0, 1, 200)
    coef = np.array([0.3, -1.0, 2.0, -0.5, 1.5, 0.7])
    h = natural_spline_basis(u, knots) @ coef
    expected = natural_spline_basis(u, knots, derivative=True) @ coef
    np.testing.assert_allclose(spline_slopes(u, h, 6), expected, atol=1e-9)


def test_basis_derivative_is_the_derivative() -> None:
    knots = np.linspace(0, 1, 5)
    u = np.linspace(0.01, 0.99, 50)
    step = 1e-6
    numeric = (natural_spline_basis(u + step, knots) - natural_spline_basis(u - step, knots)) / (
        2 * step
    )
    np.testing.assert_allclose(natural_spline_basis(u, knots, True), numeric, atol=1e-6)


def test_basis_is_linear_beyond_the_last_knot() -> None:
    knots = np.linspace(0, 1, 4)
    second = np.diff(natural_spline_basis(np.array([1.0, 1.5, 2.0]), knots), 2, axis=0)
    np.testing.assert_allclose(second, 0.0, atol=1e-12)


@pytest.mark.parametrize("k", [2, 5, 20])
def test_invariants(k: int) -> None:
    z, y = random_problem(2000, k, seed=k)
    s = SplineCalibration().fit(z[:1000], y[:1000])
    p = s.predict_proba(z[1000:])
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    assert p.min() > 0.0
    # not monotone by construction (raw confidence plus a smooth slope), but nearly: the
    # wiggles stay below 0.01 and the map rises over the range
    assert np.diff(s.recalibrated_).min() > -0.01
    assert s.recalibrated_[-1] > s.recalibrated_[0]
    # the top class stays the maximum exactly where c' >= r / (1 - c + r) (module doc of
    # histogram binning): check both directions
    q = softmax(z[1000:])
    top = q.argmax(axis=1)
    rows = np.arange(1000)
    c, new = q[rows, top], p[rows, top]
    r = np.sort(q, axis=1)[:, -2]
    kept = new >= p.max(axis=1) - 1e-12  # the top class is a (possibly tied) maximum
    np.testing.assert_array_equal(kept, new >= r / (1 - c + r) - 1e-12)
    # the other classes keep their proportions
    ratio = np.where(np.arange(k) == top[:, None], np.nan, p / q)
    spread = np.nanmax(ratio, axis=1) - np.nanmin(ratio, axis=1)
    assert np.all(spread < 1e-9)


def test_lowers_the_confidence_of_overconfident_logits() -> None:
    z, y = random_problem(4000, 5, seed=1, temperature=2.5)
    s = SplineCalibration().fit(z[:2000], y[:2000])
    before = softmax(z[2000:]).max(axis=1).mean()
    after = s.predict_proba(z[2000:]).max(axis=1).mean()
    accuracy = (z[2000:].argmax(axis=1) == y[2000:]).mean()
    assert after < before
    assert abs(after - accuracy) < abs(before - accuracy)
