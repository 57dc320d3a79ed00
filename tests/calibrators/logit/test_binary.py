"""Tests of Platt scaling and beta calibration."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import check_grad
from sklearn.linear_model import LogisticRegression

from calibkit.calibrators import BetaCalibration, Calibrator, PlattScaling
from calibkit.calibrators.logit.binary import logistic_nll
from calibkit.core.errors import InputError, NotFittedError
from calibkit.metrics import ece, nll
from tests.calibrators.problems import CIFAR10, cat_vs_dog, load_logits, needs_cifar10, seeded_split

BINARY = [PlattScaling, BetaCalibration]


def _logits_from_p(p: np.ndarray) -> np.ndarray:
    """Two-column logits whose softmax has ``P(y = 1) = p``."""
    return np.column_stack([np.log1p(-p), np.log(p)])


def _beta_problem(n: int, a: float, b: float, c: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Scores p ~ Beta(2, 3) and labels from sigmoid(a ln p - b ln(1 - p) + c)."""
    rng = np.random.default_rng(seed)
    p = rng.beta(2.0, 3.0, size=n)
    t = a * np.log(p) - b * np.log1p(-p) + c
    y = (rng.uniform(size=n) < 1.0 / (1.0 + np.exp(-t))).astype(np.int64)
    return p, y


def _unpenalised_lr(x: np.ndarray, y: np.ndarray) -> LogisticRegression:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000).fit(x, y)


# ----- hand-computed values ---------------------------------------------------------------
def test_platt_hand_computed() -> None:
    # s = -1: 1 of 4 positive, s = +1: 3 of 4 -> saturated fit sigmoid(+-a + b) = 1/4, 3/4
    s = np.array([-1.0] * 4 + [1.0] * 4)
    y = np.array([1, 0, 0, 0, 1, 1, 1, 0])
    platt = PlattScaling().fit(np.column_stack([np.zeros(8), s]), y)
    assert platt.slope_ == pytest.approx(np.log(3), abs=1e-7)
    assert platt.intercept_ == pytest.approx(0.0, abs=1e-7)
    # the logit difference is what matters, not the logits themselves
    out = platt.predict_proba(np.array([[5.0, 4.0], [2.0, 3.0]]))
    np.testing.assert_allclose(out, [[0.75, 0.25], [0.25, 0.75]], atol=1e-7)


def test_beta_hand_computed() -> None:
    # symmetric frequencies 1/10, 1/2, 9/10 at p = .2, .5, .8 -> a = b = ln 9 / ln 4, c = 0
    p = np.repeat([0.2, 0.5, 0.8], 10)
    y = np.concatenate([np.eye(10, dtype=np.int64)[0], np.arange(10) < 5, np.arange(10) < 9])
    beta = BetaCalibration().fit(_logits_from_p(p), y)
    assert beta.a_ == pytest.approx(np.log(9) / np.log(4), abs=1e-6)
    assert beta.b_ == pytest.approx(np.log(9) / np.log(4), abs=1e-6)
    assert beta.c_ == pytest.approx(0.0, abs=1e-6)
    out = beta.predict_proba(_logits_from_p(np.array([0.2, 0.5, 0.8])))
    np.testing.assert_allclose(out[:, 1], [0.1, 0.5, 0.9], atol=1e-6)


def test_logistic_gradient_is_exact() -> None:
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(50, 2)), (rng.uniform(size=50) < 0.4).astype(np.float64)
    w = np.array([0.3, -1.2, 0.5])
    err = check_grad(lambda v: logistic_nll(v, x, y)[0], lambda v: logistic_nll(v, x, y)[1], w)
    assert err < 1e-6


# ----- references -------------------------------------------------------------------------
def test_platt_matches_unpenalised_logistic_regression() -> None:
    rng = np.random.default_rng(1)
    s = rng.normal(size=2000) * 3
    y = (rng.uniform(size=2000) < 1 / (1 + np.exp(-(0.5 * s + 0.3)))).astype(np.int64)
    platt = PlattScaling().fit(np.column_stack([np.zeros(2000), s]), y)
    ref = _unpenalised_lr(s[:, None], y)
    assert platt.slope_ == pytest.approx(ref.coef_[0, 0], abs=1e-6)
    assert platt.intercept_ == pytest.approx(ref.intercept_[0], abs=1e-6)


def test_beta_matches_logistic_regression_on_log_features_and_netcal() -> None:
    p, y = _beta_problem(3000, a=1.4, b=0.8, c=0.3, seed=2)
    beta = BetaCalibration().fit(_logits_from_p(p), y)
    ref = _unpenalised_lr(np.column_stack([np.log(p), -np.log1p(-p)]), y)
    np.testing.assert_allclose([beta.a_, beta.b_], ref.coef_[0], atol=1e-6)
    assert beta.c_ == pytest.approx(ref.intercept_[0], abs=1e-6)
    netcal_scaling = pytest.importorskip("netcal.scaling")
    theirs = netcal_scaling.BetaCalibration(method="mle").fit(p, y).transform(p)
    np.testing.assert_allclose(beta.predict_proba(_logits_from_p(p))[:, 1], theirs, atol=1e-3)


def test_beta_drops_a_negative_a_and_refits_on_the_other_feature() -> None:
    p, y = _beta_problem(3000, a=-0.6, b=2.0, c=0.0, seed=3)
    feats = np.column_stack([np.log(p), -np.log1p(-p)])
    assert _unpenalised_lr(feats, y).coef_[0, 0] < 0  # the unconstrained fit is not monotone
    beta = BetaCalibration().fit(_logits_from_p(p), y)
    ref = _unpenalised_lr(feats[:, [1]], y)
    assert beta.a_ == 0.0
    assert beta.b_ == pytest.approx(ref.coef_[0, 0], abs=1e-6)
    assert beta.c_ == pytest.approx(ref.intercept_[0], abs=1e-6)


def test_beta_keeps_only_the_intercept_when_both_features_are_anti_monotone() -> None:
    p, y = _beta_problem(3000, a=-0.8, b=-0.5, c=0.0, seed=4)
    beta = BetaCalibration().fit(_logits_from_p(p), y)
    assert (beta.a_, beta.b_) == (0.0, 0.0)
    assert beta.c_ == pytest.approx(np.log(y.mean() / (1 - y.mean())), abs=1e-12)
    np.testing.assert_allclose(beta.predict_proba(_logits_from_p(p[:3]))[:, 1], y.mean())


# ----- invariants ---------------------------------------------------------------------------
@pytest.mark.parametrize("cls", BINARY)
def test_calibration_nll_not_above_identity(cls: type[Calibrator]) -> None:
    for seed in range(5):
        p, y = _beta_problem(300, a=2.0, b=0.5, c=-0.5, seed=10 + seed)
        z = _logits_from_p(p)
        fitted = cls().fit(z, y)
        assert nll(y, probs=fitted.predict_proba(z)) <= nll(y, logits=z) + 1e-12


@pytest.mark.parametrize("cls", BINARY)
def test_valid_probabilities_and_bit_exact_save_load(cls: type[Calibrator], tmp_path: Path) -> None:
    p, y = _beta_problem(400, a=1.0, b=2.0, c=0.0, seed=5)
    fitted = cls().fit(_logits_from_p(p).astype(np.float32), y)
    z_new = np.random.default_rng(6).normal(size=(100, 2)) * 10
    out = fitted.predict_proba(z_new)
    assert out.dtype == np.float64
    assert np.all((out >= 0) & (out <= 1))
    np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-15)
    fitted.save(tmp_path / "c.json")
    back = Calibrator.load(tmp_path / "c.json")
    assert type(back) is cls
    np.testing.assert_array_equal(back.predict_proba(z_new), out)


@pytest.mark.parametrize("cls", BINARY)
def test_separable_data_gives_finite_parameters(cls: type[Calibrator]) -> None:
    p = np.array([0.1, 0.2, 0.3, 0.7, 0.8, 0.9])
    fitted = cls().fit(_logits_from_p(p), [0, 0, 0, 1, 1, 1])
    state = fitted.fitted_state()
    assert all(np.isfinite(v) for v in state.values())
    out = fitted.predict_proba(_logits_from_p(p))
    assert np.all(np.isfinite(out))
    np.testing.assert_array_equal(out.argmax(axis=1), [0, 0, 0, 1, 1, 1])


@pytest.mark.parametrize("cls", BINARY)
def test_errors(cls: type[Calibrator]) -> None:
    with pytest.raises(NotFittedError):
        cls().predict_proba(np.zeros((2, 2)))
    with pytest.raises(InputError, match="2 classes"):
        cls().fit(np.zeros((4, 3)), [0, 1, 2, 0])
    p, y = _beta_problem(50, a=1.0, b=1.0, c=0.0, seed=7)
    with pytest.raises(InputError, match="2 columns"):
        cls().fit(_logits_from_p(p), y).predict_proba(np.zeros((2, 3)))


# ----- real data ----------------------------------------------------------------------------
@pytest.mark.shared_data
@needs_cifar10
@pytest.mark.parametrize("cls", BINARY)
def test_cifar10_cat_vs_dog_test_ece_goes_down(cls: type[Calibrator]) -> None:
    z, y = cat_vs_dog(*load_logits(CIFAR10))
    cal, test = seeded_split(len(y))
    fitted = cls().fit(z[cal], y[cal])
    assert nll(y[cal], probs=fitted.predict_proba(z[cal])) <= nll(y[cal], logits=z[cal])
    assert ece(y[test], probs=fitted.predict_proba(z[test])) < ece(y[test], logits=z[test])


def test_platt_targets_are_platts_smoothed_labels() -> None:
    """Platt (1999), section 2.2: (N+ + 1) / (N+ + 2) and 1 / (N- + 2); by weight sums."""
    from calibkit.calibrators.logit.binary import platt_targets

    y = np.array([1.0, 1.0, 0.0, 1.0, 0.0])
    np.testing.assert_allclose(platt_targets(y), [0.8, 0.8, 0.25, 0.8, 0.25])
    w = np.array([2.0, 1.0, 0.5, 1.0, 1.5])  # N+ = 4, N- = 2
    np.testing.assert_allclose(platt_targets(y, w), [5 / 6, 5 / 6, 0.25, 5 / 6, 0.25])


def test_platt_targets_option_moves_the_fit_towards_the_prior() -> None:
    z = np.column_stack([np.zeros(6), np.array([-2.0, -1.0, 0.0, 1.0, 2.0, 3.0])])
    y = [0, 0, 0, 1, 1, 1]  # separable: the maximum-likelihood slope runs off
    ml = PlattScaling().fit(z, y)
    smoothed = PlattScaling(targets="platt").fit(z, y)
    assert PlattScaling().targets == "labels"
    assert 0 < smoothed.slope_ < 10 < ml.slope_
