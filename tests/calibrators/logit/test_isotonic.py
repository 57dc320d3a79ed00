"""Tests of one-vs-rest isotonic calibration."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sklearn.isotonic import IsotonicRegression

from calibkit.calibrators import Calibrator, IsotonicCalibrator
from calibkit.calibrators.logit.histogram import renormalise_or_keep
from calibkit.core.errors import InputError, NotFittedError
from calibkit.metrics import ece
from tests.calibrators.problems import (
    CIFAR10,
    cat_vs_dog,
    load_logits,
    needs_cifar10,
    random_problem,
    seeded_split,
    softmax,
)


def test_three_class_hand_computed() -> None:
    probs = np.array([[0.6, 0.3, 0.1], [0.5, 0.2, 0.3], [0.2, 0.7, 0.1], [0.1, 0.1, 0.8]])
    iso = IsotonicCalibrator(smoothing=0).fit(np.log(probs), [1, 0, 1, 2])
    # class 0: p0 = .1 .2 .5 .6 with y0 = 0 0 1 0 -> PAV pools (.5, .6) to 0.5
    np.testing.assert_allclose(iso.x_thresholds_[0], [0.1, 0.2, 0.5, 0.6])
    np.testing.assert_allclose(iso.y_thresholds_[0], [0.0, 0.0, 0.5, 0.5])
    # class 1: p1 = .1 .2 .3 .7 with y1 = 0 0 1 1 (already monotone)
    np.testing.assert_allclose(iso.y_thresholds_[1][[0, -1]], [0.0, 1.0])
    # row (0.55, 0.25, 0.2): class 0 -> 0.5, class 1 -> 0.5 (between .2 -> 0 and .3 -> 1),
    # class 2: p2 = .1 .1 .3 .8 with y2 = 0 0 0 1 -> (.2 - .1) / (.3 - .1) * 0 = 0
    out = iso.predict_proba(np.log([[0.55, 0.25, 0.2]]))
    np.testing.assert_allclose(out, [[0.5, 0.5, 0.0]], atol=1e-12)


def test_matches_sklearn_isotonic_regression_per_class() -> None:
    z, y = random_problem(800, 4, seed=1)
    p = softmax(z)
    iso = IsotonicCalibrator(smoothing=0).fit(z, y)
    z_new, _ = random_problem(400, 4, seed=2)
    p_new = softmax(z_new)
    ref = np.column_stack(
        [
            IsotonicRegression(out_of_bounds="clip").fit(p[:, k], y == k).predict(p_new[:, k])
            for k in range(4)
        ]
    )
    ref /= ref.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(iso.predict_proba(z_new), ref, rtol=1e-12, atol=1e-15)


def test_binary_matches_sklearn_on_the_positive_class() -> None:
    z, y = random_problem(500, 2, seed=3)
    p1 = softmax(z)[:, 1]
    iso = IsotonicCalibrator(smoothing=0).fit(z, y)
    assert len(iso.x_thresholds_) == 1
    ref = IsotonicRegression(out_of_bounds="clip").fit(p1, y).predict(np.array([0.0, 0.3, 1.0]))
    z_new = np.column_stack([np.zeros(3), np.log([1e-300, 0.3 / 0.7, 1e300])])
    out = iso.predict_proba(z_new)
    np.testing.assert_allclose(out[:, 1], ref, atol=1e-12)
    np.testing.assert_array_equal(out[:, 0], 1.0 - out[:, 1])


def test_rows_mapped_to_all_zeros_keep_the_uncalibrated_probabilities() -> None:
    z, y = random_problem(200, 3, seed=4)
    iso = IsotonicCalibrator(smoothing=0).fit(z, y)
    iso.y_thresholds_ = [np.zeros_like(t) for t in iso.y_thresholds_]  # every class -> 0
    z_new, _ = random_problem(5, 3, seed=5)
    np.testing.assert_allclose(iso.predict_proba(z_new), softmax(z_new), rtol=1e-12)
    q = np.array([[0.0, 0.0], [1.0, 3.0]])
    np.testing.assert_array_equal(
        renormalise_or_keep(q, np.full((2, 2), 0.5)), [[0.5, 0.5], [0.25, 0.75]]
    )


def test_calibration_map_is_monotone_and_probabilities_valid(tmp_path: Path) -> None:
    z, y = random_problem(600, 5, seed=6)
    iso = IsotonicCalibrator().fit(z, y)
    for x, t in zip(iso.x_thresholds_, iso.y_thresholds_, strict=True):
        assert np.all(np.diff(x) > 0)
        assert np.all(np.diff(t) >= 0)
        assert t.min() >= 0
        assert t.max() <= 1
    z_new, _ = random_problem(300, 5, seed=7)
    out = iso.predict_proba(z_new)
    assert out.dtype == np.float64
    assert np.all(out >= 0)
    np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-12)
    iso.save(tmp_path / "iso.json")
    back = Calibrator.load(tmp_path / "iso.json")
    assert isinstance(back, IsotonicCalibrator)
    np.testing.assert_array_equal(back.predict_proba(z_new), out)


def test_errors() -> None:
    with pytest.raises(NotFittedError):
        IsotonicCalibrator().predict_proba(np.zeros((2, 3)))
    z, y = random_problem(50, 3, seed=8)
    with pytest.raises(InputError, match="3 columns"):
        IsotonicCalibrator().fit(z, y).predict_proba(np.zeros((2, 4)))
    with pytest.raises(InputError, match="labels"):
        IsotonicCalibrator().fit(z, np.zeros(50, dtype=int))


@pytest.mark.shared_data
@needs_cifar10
def test_cifar10_test_ece_goes_down() -> None:
    z, y = load_logits(CIFAR10)
    cal, test = seeded_split(len(y), 5000)
    out = IsotonicCalibrator().fit(z[cal], y[cal]).predict_proba(z[test])
    assert ece(y[test], probs=out) < ece(y[test], logits=z[test])
    zb, yb = cat_vs_dog(z, y)
    cal, test = seeded_split(len(yb))
    out = IsotonicCalibrator().fit(zb[cal], yb[cal]).predict_proba(zb[test])
    assert ece(yb[test], probs=out) < ece(yb[test], logits=zb[test])
