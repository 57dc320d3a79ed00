"""Tests of centred isotonic regression (hand-computed points, never probability 0)."""

from __future__ import annotations

import numpy as np
import pytest

from calibkit.calibrators import Calibrator, CentredIsotonicCalibrator, IsotonicCalibrator
from calibkit.calibrators.logit.centred_isotonic import centred_points
from tests.calibrators.problems import random_problem


def test_centred_points_hand_computed() -> None:
    # isotonic fit of 0 1 0 1 at .1 .2 .3 .4 is 0, .5, .5, 1: the middle level set's centre
    # is (.2 + .3) / 2
    x, y = centred_points(np.array([0.4, 0.1, 0.3, 0.2]), np.array([1.0, 0.0, 0.0, 1.0]))
    np.testing.assert_allclose(x, [0.1, 0.25, 0.4])
    np.testing.assert_allclose(y, [0.0, 0.5, 1.0])


def test_weighted_centre() -> None:
    # weights 1 and 3 on the pooled level set: centre (0.2 + 3 * 0.3) / 4, value 1/4
    x, y = centred_points(np.array([0.2, 0.3]), np.array([1.0, 0.0]), weights=np.array([1.0, 3.0]))
    np.testing.assert_allclose(x, [0.275])
    np.testing.assert_allclose(y, [0.25])


def test_hand_computed_binary_with_ends_cleared() -> None:
    # p1 = .1 .2 .6 .7 .8 with y = 0 1 0 1 1: level sets {.1} -> 0, {.2, .6} -> 1/2,
    # {.7, .8} -> 1; eps = 1 / (2 * 6); the map interpolates between the centres
    z = np.log([[0.9, 0.1], [0.8, 0.2], [0.4, 0.6], [0.3, 0.7], [0.2, 0.8]])
    cir = CentredIsotonicCalibrator().fit(z, [0, 1, 0, 1, 1])
    np.testing.assert_allclose(cir.x_thresholds_[0], [0.1, 0.4, 0.75])
    np.testing.assert_allclose(cir.y_thresholds_[0], [1 / 12, 0.5, 11 / 12])
    # 0.25 is halfway between 0.1 and 0.4: (1/12 + 1/2) / 2
    p = cir.predict_proba(np.log([[0.75, 0.25], [0.95, 0.05], [0.01, 0.99]]))
    np.testing.assert_allclose(p[:, 1], [(1 / 12 + 0.5) / 2, 1 / 12, 11 / 12])
    np.testing.assert_allclose(p.sum(axis=1), 1.0)


def test_never_zero_where_isotonic_is() -> None:
    z, y = random_problem(600, 5, seed=2, scale=5.0)
    cal, test = slice(0, 300), slice(300, 600)
    iso = IsotonicCalibrator(smoothing=0).fit(z[cal], y[cal]).predict_proba(z[test])
    cir = CentredIsotonicCalibrator().fit(z[cal], y[cal]).predict_proba(z[test])
    assert iso.min() == 0.0  # the problem isotonic regression has without smoothing
    assert cir.min() > 0.0
    np.testing.assert_allclose(cir.sum(axis=1), 1.0)


def test_maps_are_strictly_increasing() -> None:
    z, y = random_problem(500, 4, seed=4)
    cir = CentredIsotonicCalibrator().fit(z, y)
    for x, v in zip(cir.x_thresholds_, cir.y_thresholds_, strict=True):
        assert np.all(np.diff(x) > 0)
        assert np.all(np.diff(v) > 0)
        assert v[0] > 0.0
        assert v[-1] < 1.0


@pytest.mark.parametrize("k", [3, 6])
def test_level_set_values_are_isotonic_values(k: int) -> None:
    # away from the ends the centred points carry the isotonic fit's values
    z, y = random_problem(400, k, seed=k)
    iso = IsotonicCalibrator().fit(z, y)
    cir = CentredIsotonicCalibrator().fit(z, y)
    for i in range(k):
        inner = cir.y_thresholds_[i][1:-1]
        assert set(np.round(inner, 12)) <= set(np.round(iso.y_thresholds_[i], 12))


def test_saturated_probabilities_give_finite_thresholds() -> None:
    """Logits so large that many probabilities are exactly 1.0: scikit-learn's merged
    thresholds ended just below 1.0, and its default out-of-bounds rule made 79 of 124
    centred values NaN (NaN predictions for 266 of 400 rows, and a file that did not load)."""
    z, y = random_problem(400, 4, seed=2)
    cir = CentredIsotonicCalibrator().fit(z * 30, y)
    assert all(np.isfinite(t).all() for t in cir.y_thresholds_)
    assert np.isfinite(cir.predict_proba(z * 30)).all()
    Calibrator.from_json(cir.to_json())  # the state passes the load checks
