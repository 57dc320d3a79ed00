"""Tests of smoothed temperature scaling and the structured vector / matrix scalings."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import log_softmax, logsumexp

from calibkit.calibrators import (
    MatrixScaling,
    SmoothedTemperatureScaling,
    StructuredMatrixScaling,
    StructuredMatrixScalingCV,
    StructuredVectorScaling,
    TemperatureScaling,
    VectorScaling,
    create_calibrator,
)
from calibkit.calibrators.logit.structured import structured_coefficients
from calibkit.calibrators.logit.temperature_smoothed import smoothed_log_probs
from calibkit.core.errors import InputError
from tests.calibrators.problems import random_problem, softmax

STRUCTURED = [StructuredVectorScaling, StructuredMatrixScaling, StructuredMatrixScalingCV]


# ----- smoothed temperature scaling ---------------------------------------------------------
def test_smoothed_temperature_hand_computed() -> None:
    # T = 1 (bounds pin it), eps = 1 / (3 + 1): q = 0.75 softmax(z) + 0.25 / 2
    z = np.array([[math.log(3.0), 0.0], [0.0, 0.0], [0.0, 0.0]])
    ts = SmoothedTemperatureScaling(t_min=1.0, t_max=1.0 + 1e-12).fit(z, [0, 1, 0])
    assert ts.smoothing_ == 0.25
    np.testing.assert_allclose(ts.predict_proba(z[:1]), [[0.6875, 0.3125]], rtol=0, atol=1e-9)


def test_smoothing_zero_is_temperature_scaling() -> None:
    z, y = random_problem(500, 5, seed=1)
    plain = TemperatureScaling().fit(z, y)
    smoothed = SmoothedTemperatureScaling(smoothing=0.0).fit(z, y)
    assert smoothed.temperature_ == plain.temperature_
    np.testing.assert_allclose(
        smoothed.predict_proba(z), plain.predict_proba(z), rtol=0, atol=1e-15
    )


def test_smoothing_keeps_the_argmax_and_bounds_every_probability() -> None:
    z, y = random_problem(400, 7, seed=2, scale=20.0)
    ts = SmoothedTemperatureScaling().fit(z, y)
    p = ts.predict_proba(z)
    assert ts.smoothing_ == 1 / 401
    np.testing.assert_array_equal(p.argmax(axis=1), z.argmax(axis=1))
    assert p.min() >= ts.smoothing_ / 7 * (1 - 1e-12)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    # the worst label costs at most log(K / eps)
    assert -np.log(p).max() <= math.log(7 / ts.smoothing_) + 1e-9


def test_smoothed_log_probs_never_underflow() -> None:
    out = smoothed_log_probs(np.array([[0.0, -1e6, -1e6]]), 1.0, 0.3)
    np.testing.assert_allclose(out, np.log([[0.7 + 0.1, 0.1, 0.1]]), rtol=1e-12)


# ----- structured scalings: the objective ---------------------------------------------------
def _reference_fit(x: np.ndarray, y: np.ndarray, coef: np.ndarray) -> np.ndarray:
    """The penalised NLL minimised by scipy's BFGS on ``[W | b]`` directly (a small K)."""
    n, k = x.shape
    x1 = np.hstack([x, np.ones((n, 1))])
    centre = np.eye(k, k + 1)

    def objective(theta: np.ndarray) -> float:
        wb = theta.reshape(k, k + 1)
        s = x1 @ wb.T
        return float(np.mean(logsumexp(s, axis=1) - s[np.arange(n), y])) + float(
            (coef * (wb - centre) ** 2).sum()
        )

    res = minimize(objective, centre.ravel(), method="BFGS", options={"gtol": 1e-10})
    return np.asarray(res.x).reshape(k, k + 1)


def test_sms_minimises_its_documented_objective() -> None:
    z, y = random_problem(300, 3, seed=4)
    sms = StructuredMatrixScaling(reg_intercept=0.5, reg_diagonal=2.0, reg_off_diagonal=0.3)
    sms.fit(z, y)
    x = smoothed_log_probs(z, sms.temperature_, sms.smoothing_)
    coef = structured_coefficients(3, 300.0, 0.5, 2.0, 0.3)
    ref = _reference_fit(x, y, coef)
    np.testing.assert_allclose(sms.weights_, ref[:, :3], rtol=0, atol=1e-4)
    np.testing.assert_allclose(sms.bias_, ref[:, 3], rtol=0, atol=1e-4)


def test_without_penalty_and_smoothing_sms_is_matrix_scaling_of_the_ts_log_probs() -> None:
    z, y = random_problem(600, 4, seed=5)
    kw = {"reg_intercept": 0.0, "reg_diagonal": 0.0, "reg_off_diagonal": 0.0, "smoothing": 0.0}
    sms = StructuredMatrixScaling(**kw).fit(z, y)
    x = log_softmax(z / sms.temperature_, axis=1)
    ms = MatrixScaling(shrink="none").fit(x, y)  # the plain method
    np.testing.assert_allclose(sms.predict_proba(z), ms.predict_proba(x), rtol=0, atol=1e-6)
    svs = StructuredVectorScaling(**kw).fit(z, y)
    vs = VectorScaling(shrink="none").fit(x, y)
    np.testing.assert_allclose(svs.predict_proba(z), vs.predict_proba(x), rtol=0, atol=1e-6)


@pytest.mark.parametrize("cls", [StructuredVectorScaling, StructuredMatrixScaling])
def test_a_huge_penalty_gives_smoothed_temperature_scaling(cls: type) -> None:
    z, y = random_problem(400, 4, seed=6)
    big = {"reg_intercept": 1e9, "reg_diagonal": 1e9, "reg_off_diagonal": 1e9}
    cal = cls(**big).fit(z, y)
    ts = SmoothedTemperatureScaling().fit(z, y)
    np.testing.assert_allclose(cal.predict_proba(z), ts.predict_proba(z), rtol=0, atol=1e-6)


def test_sms_cv_chooses_the_scale_of_lowest_held_out_nll() -> None:
    z, y = random_problem(500, 3, seed=7)
    cal = StructuredMatrixScalingCV(scale_grid=[1.0, 0.01, 0.1]).fit(z, y)
    assert cal.cv_scales_.tolist() == [0.01, 0.1, 1.0]
    assert cal.reg_scale_ == cal.cv_scales_[np.argmin(cal.cv_nll_)]
    fixed = StructuredMatrixScaling(
        reg_intercept=cal.reg_scale_, reg_diagonal=cal.reg_scale_, reg_off_diagonal=cal.reg_scale_
    ).fit(z, y)
    np.testing.assert_allclose(cal.predict_proba(z), fixed.predict_proba(z), rtol=0, atol=1e-6)


def test_sms_cv_cross_validates_on_as_many_folds_as_the_smallest_class_has_rows() -> None:
    z, y = random_problem(30, 3, seed=8)
    y[:] = 0
    y[:3] = 1
    y[3:6] = 2
    five = StructuredMatrixScalingCV().fit(z, y)  # 3 rows in the smallest class: 3 folds
    three = StructuredMatrixScalingCV(n_folds=3).fit(z, y)
    np.testing.assert_array_equal(five.predict_proba(z), three.predict_proba(z))
    assert five.cv_nll_.size == len(five.scale_grid)


@pytest.mark.parametrize("cls", STRUCTURED)
def test_bad_parameters_are_named(cls: type) -> None:
    with pytest.raises(InputError, match="reg_diagonal"):
        cls(reg_diagonal=-1.0)
    with pytest.raises(InputError, match="smoothing"):
        cls(smoothing=1.0)
    with pytest.raises(InputError, match="t_max"):
        cls(t_min=2.0, t_max=1.0)


# ----- probmetrics as an independent reference ----------------------------------------------
@pytest.mark.parametrize(("ours", "theirs"), [("sms", "SMSCalibrator"), ("svs", "SVSCalibrator")])
def test_matches_probmetrics(ours: str, theirs: str) -> None:
    calibrators = pytest.importorskip("probmetrics.calibrators")
    z, y = random_problem(1000, 5, seed=9)
    p = softmax(z)
    ref = getattr(calibrators, theirs)(print_init_info=False).fit(p, y).predict_proba(p)
    cal = create_calibrator(ours).fit(z, y)
    # probmetrics works on float32 log-probabilities and stops BFGS at torchmin's defaults
    np.testing.assert_allclose(cal.predict_proba(z), ref, rtol=0, atol=2e-3)


def test_smoothed_temperature_matches_probmetrics_ts_mix() -> None:
    factory = pytest.importorskip("probmetrics.calibrators")
    z, y = random_problem(1000, 5, seed=10)
    p = softmax(z)
    ref = factory.get_calibrator("ts-mix").fit(p, y).predict_proba(p)  # probmetrics' factory
    cal = SmoothedTemperatureScaling().fit(z, y)
    np.testing.assert_allclose(cal.predict_proba(z), ref, rtol=0, atol=1e-5)
