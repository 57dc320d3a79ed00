"""Tests of the linear calibrators: vector, matrix, MS-ODIR and Dirichlet (ODIR) scaling."""

from __future__ import annotations

import logging
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import check_grad, minimize
from scipy.special import log_softmax, logsumexp
from sklearn.model_selection import StratifiedKFold

from calibkit.calibrators import (
    Calibrator,
    DirichletCalibration,
    MatrixScaling,
    MatrixScalingODIR,
    TemperatureScaling,
    VectorScaling,
    create_calibrator,
)
from calibkit.calibrators.logit import linear_solver as lin
from calibkit.calibrators.logit.linear import DEFAULT_LAMBDA_GRID, TS_STRENGTH
from calibkit.core.errors import InputError, NotFittedError
from calibkit.core.progress import progress_of
from calibkit.metrics import ece, nll
from tests.calibrators.problems import CIFAR100, load_logits, needs_cifar100, seeded_split

ALL = [VectorScaling, MatrixScaling, MatrixScalingODIR, DirichletCalibration]
ODIR = [MatrixScalingODIR, DirichletCalibration]


def _sample_labels(rng: np.random.Generator, logits: np.ndarray) -> np.ndarray:
    """One label per row drawn from ``softmax(logits)``."""
    cdf = np.cumsum(np.exp(log_softmax(logits, axis=1)), axis=1)
    return np.minimum((rng.random(len(logits))[:, None] > cdf).sum(axis=1), logits.shape[1] - 1)


def _affine_problem(
    n: int, a: np.ndarray, c: np.ndarray, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """True logits ``t``, labels drawn from ``softmax(t)`` and observed logits ``a t + c``."""
    rng = np.random.default_rng(seed)
    t = rng.normal(size=(n, a.shape[0])) * 1.5
    return t, _sample_labels(rng, t), t @ a.T + c


def _mean_nll(logits: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(logsumexp(logits, axis=1) - logits[np.arange(len(y)), y]))


def _features(cls: type[Calibrator], z: np.ndarray) -> np.ndarray:
    return log_softmax(z, axis=1) if cls is DirichletCalibration else z


def _brute_force(
    x: np.ndarray,
    y: np.ndarray,
    *,
    diagonal: bool = False,
    lam: float = 0.0,
    mu: float = 0.0,
    l2: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Minimiser of NLL + penalty written directly in torch (autograd gradients), from 0."""
    k = x.shape[1]
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    off = 1.0 - torch.eye(k, dtype=torch.float64)

    def split(theta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        w = torch.diag(theta[:k]) if diagonal else theta[: k * k].reshape(k, k)
        return w, theta[-k:]

    def fun(theta_np: np.ndarray) -> tuple[float, np.ndarray]:
        theta = torch.tensor(theta_np, requires_grad=True)
        w, b = split(theta)
        loss = torch.nn.functional.cross_entropy(xt @ w.T + b, yt)
        loss = loss + lam * ((w * off) ** 2).sum() / (k * (k - 1)) + mu * (b**2).sum() / k
        loss = loss + l2 * (w**2).sum() / k**2
        loss.backward()
        return float(loss.detach()), theta.grad.numpy().copy()  # type: ignore[union-attr]

    size = (k if diagonal else k * k) + k
    res = minimize(fun, np.zeros(size), jac=True, method="BFGS", options={"gtol": 1e-11})
    w, b = split(torch.from_numpy(res.x))
    return w.numpy(), b.numpy()


# ----- the objective and its pieces ---------------------------------------------------------
def test_softmax_nll_grad_hand_and_reference() -> None:
    loss, grad = lin.softmax_nll_grad(np.array([[np.log(3.0), 0.0]]), np.array([0]))
    assert loss == pytest.approx(np.log(4 / 3), abs=1e-15)  # p = (3/4, 1/4)
    np.testing.assert_allclose(grad, [[-0.25, 0.25]], atol=1e-15)
    rng = np.random.default_rng(0)
    s = rng.normal(size=(50, 6)) * 30  # large scores: the max shift must keep this finite
    y = rng.integers(0, 6, 50)
    t = torch.tensor(s, requires_grad=True)
    ref = torch.nn.functional.cross_entropy(t, torch.from_numpy(y))
    ref.backward()
    loss, grad = lin.softmax_nll_grad(s.copy(), y)
    assert loss == pytest.approx(float(ref.detach()), rel=1e-13)
    np.testing.assert_allclose(grad, t.grad.numpy(), atol=1e-15)  # type: ignore[union-attr]


def test_odir_coefficients_hand() -> None:
    coef = lin.odir_coefficients(3, reg_lambda=6.0, reg_mu=3.0)
    # lam / (K (K - 1)) = 1 off the diagonal, 0 on it, mu / K = 1 on the bias column
    np.testing.assert_array_equal(coef, [[0, 1, 1, 1], [1, 0, 1, 1], [1, 1, 0, 1]])


def test_curvature_is_the_hessian_block_at_identity() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(40, 3)) * 0.5  # moderate probabilities: no row is left out
    y = rng.integers(0, 3, 40)
    design = lin.Design(x, y)
    blocks = lin.curvature(design)

    def f(wb: torch.Tensor) -> torch.Tensor:
        z = torch.from_numpy(design.x1) @ wb.reshape(3, 4).T
        return torch.nn.functional.cross_entropy(z, torch.from_numpy(y))

    eye = torch.from_numpy(lin.identity_map(3)).reshape(-1)
    hess = torch.autograd.functional.hessian(f, eye).numpy().reshape(3, 4, 3, 4)
    for j in range(3):
        np.testing.assert_allclose(blocks[j], hess[j, :, j, :], rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("shared", [False, True])
def test_preconditioner_whitens(shared: bool) -> None:
    rng = np.random.default_rng(2)
    m = rng.normal(size=(3, 4, 4))
    curv = m @ m.transpose(0, 2, 1) + np.eye(4)
    coef = lin.odir_coefficients(3, 2.0, 1.0)
    a = lin.preconditioner(curv[0] if shared else curv, coef)
    h = (
        curv[0] + np.diag(2 * coef.mean(axis=0))
        if shared
        else curv + 2 * coef[:, :, None] * np.eye(4)
    )
    whitened = a @ h @ np.swapaxes(a, -1, -2)
    np.testing.assert_allclose(whitened, np.broadcast_to(np.eye(4), whitened.shape), atol=1e-5)


def test_full_objective_gradient_matches_finite_differences() -> None:
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(30, 3)), rng.integers(0, 3, 30)
    design = lin.Design(x, y)
    pen = lin.Penalty.make(lin.odir_coefficients(3, 5.0, 2.0), lin.curvature(design))
    start = lin.identity_map(3) + rng.normal(size=(3, 4)) * 0.1
    fun = lin.full_objective(design, pen, start)
    assert fun(np.zeros(12))[0] == pytest.approx(design.nll(start) + pen(start), rel=1e-14)
    u0 = rng.normal(size=12) * 0.1
    err = check_grad(lambda u: fun(u)[0], lambda u: fun(u)[1], u0, epsilon=1e-7)
    assert err < 1e-6 * max(1.0, float(np.linalg.norm(fun(u0)[1])))


# ----- identity, recovery and the never-worse guarantee -----------------------------------
def test_identity_parameters_give_the_identity_map() -> None:
    z = np.random.default_rng(4).normal(size=(20, 4)) * 3
    vec = VectorScaling()
    vec.n_classes_, vec.weights_, vec.bias_ = 4, np.ones(4), np.zeros(4)
    np.testing.assert_array_equal(vec.transform(z), z)
    full = MatrixScaling()
    full.n_classes_, full.weights_, full.bias_ = 4, np.eye(4), np.zeros(4)
    np.testing.assert_array_equal(full.transform(z), z)
    dirichlet = DirichletCalibration()
    dirichlet.n_classes_, dirichlet.weights_, dirichlet.bias_ = 4, np.eye(4), np.zeros(4)
    np.testing.assert_allclose(dirichlet.predict_proba(z), np.exp(log_softmax(z, 1)), atol=1e-15)


def test_vector_scaling_leaves_calibrated_logits_nearly_alone() -> None:
    rng = np.random.default_rng(5)
    z = rng.normal(size=(20000, 4)) * 2
    vec = VectorScaling().fit(z, _sample_labels(rng, z))
    np.testing.assert_allclose(vec.weights_, 1.0, atol=0.06)
    np.testing.assert_allclose(vec.bias_ - vec.bias_.mean(), 0.0, atol=0.06)


A_DIAG = np.diag([2.5, 0.5, 1.5, 3.0])
# constant row sums, so log_softmax's per-row shift stays a per-row shift under A^-1
A_FULL = np.array(
    [[2.0, 0.3, -0.2, 0.4], [0.1, 2.2, 0.1, 0.1], [-0.3, 0.4, 2.1, 0.3], [0.2, 0.0, 0.1, 2.2]]
)
C = np.array([0.5, -0.3, 0.0, 0.8])


@pytest.mark.parametrize(
    ("cls", "a"),
    [
        (VectorScaling, A_DIAG),
        (MatrixScaling, A_FULL),
        (MatrixScalingODIR, A_FULL),
        (DirichletCalibration, A_FULL),
    ],
)
def test_recovers_a_known_affine_miscalibration(cls: type[Calibrator], a: np.ndarray) -> None:
    _, y_fit, z_fit = _affine_problem(8000, a, C, seed=6)
    t_new, y_new, z_new = _affine_problem(8000, a, C, seed=7)
    cal = cls().fit(z_fit, y_fit)
    ideal, raw = _mean_nll(t_new, y_new), _mean_nll(z_new, y_new)
    got = nll(y_new, cal.predict_proba(z_new))
    assert raw > ideal + 0.1  # the miscalibration is real
    assert got < ideal + 0.003


@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    k=st.integers(2, 5),
    scale=st.sampled_from([0.1, 1.0, 10.0]),
    method=st.sampled_from(["vector", "matrix", "ms_odir", "dirichlet"]),
)
def test_fit_never_above_the_identity_nll(seed: int, k: int, scale: float, method: str) -> None:
    rng = np.random.default_rng(seed)
    n = 12 * k
    z = rng.normal(size=(n, k)) * scale
    y = np.concatenate([np.arange(k), np.arange(k), rng.integers(0, k, n - 2 * k)])
    params = (
        {"n_folds": 2, "lambda_grid": [0.1, 10.0]} if method in ("ms_odir", "dirichlet") else {}
    )
    cal = create_calibrator(method, **params).fit(z, y)
    before = nll(y, logits=z)
    assert nll(y, cal.predict_proba(z)) <= before * (1 + 1e-9)


def test_path_solutions_never_above_identity_objective() -> None:
    rng = np.random.default_rng(8)
    z = rng.normal(size=(300, 4)) * 4
    y = rng.integers(0, 4, 300)  # labels unrelated to z: the identity is a poor start
    design = lin.Design(z, y)
    curv = lin.curvature(design)
    pens = [lin.Penalty.make(lin.odir_coefficients(4, lam, lam), curv) for lam in (1e4, 1.0, 0.0)]
    path = lin.fit_path(design, pens, 5, 1e-9)
    for pen, wb in zip(pens, path, strict=True):
        assert design.nll(wb) + pen(wb) <= design.nll(lin.identity_map(4))


# ----- agreement with a brute-force minimiser ----------------------------------------------
@pytest.fixture(scope="module")
def tiny() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(9)
    z = rng.normal(size=(90, 3)) * 2 + np.array([0.5, 0.0, -0.5])
    return z, _sample_labels(rng, z @ np.array([[0.6, 0.3, 0], [0, 0.8, 0], [0.2, 0, 0.5]]).T)


@pytest.mark.parametrize("cls", ODIR)
def test_odir_matches_brute_force(cls: type[Calibrator], tiny: tuple) -> None:
    z, y = tiny
    cal = cls(reg_lambda=3.0, reg_mu=0.5, shrink="none").fit(z, y)
    w, b = _brute_force(_features(cls, z), y, lam=3.0, mu=0.5)
    np.testing.assert_allclose(cal.weights_, w, atol=2e-5)
    np.testing.assert_allclose(cal.bias_, b, atol=2e-5)
    assert (cal.reg_lambda_, cal.reg_mu_) == (3.0, 0.5)


def test_wide_problem_uses_the_shared_preconditioner_and_matches_brute_force() -> None:
    rng = np.random.default_rng(15)
    z, y = rng.normal(size=(10, 6)) * 2, np.arange(10) % 6  # (K+1)^2 = 49 > 4 N = 40
    assert lin.curvature(lin.Design(z, y)).shape == (7, 7)
    cal = MatrixScalingODIR(reg_lambda=2.0, shrink="none").fit(z, y)
    w, b = _brute_force(z, y, lam=2.0, mu=2.0)
    np.testing.assert_allclose(cal.weights_, w, atol=2e-5)
    np.testing.assert_allclose(cal.bias_, b, atol=2e-5)


@pytest.mark.parametrize(("cls", "kw"), [(VectorScaling, {}), (MatrixScaling, {"reg_l2": 2.0})])
def test_vector_and_matrix_match_brute_force(cls: type[Calibrator], kw: dict, tiny: tuple) -> None:
    z, y = tiny
    cal = cls(**kw, shrink="none").fit(z, y)
    w, b = _brute_force(z, y, diagonal=cls is VectorScaling, l2=kw.get("reg_l2", 0.0))
    # probabilities and W are identified; b only up to a constant (softmax's shift)
    np.testing.assert_allclose(cal.predict_proba(z), np.exp(log_softmax(z @ w.T + b, 1)), atol=1e-6)
    np.testing.assert_allclose(cal.weights_, np.diag(w) if cls is VectorScaling else w, atol=1e-5)
    np.testing.assert_allclose(cal.bias_ - cal.bias_.mean(), b - b.mean(), atol=1e-5)


def test_cross_validation_matches_brute_force(tiny: tuple) -> None:
    z, y = tiny
    grid = [0.5, 20.0]
    cal = DirichletCalibration(lambda_grid=grid, n_folds=3, seed=4, cv_max_iter=1000, shrink="none")
    cal.fit(z, y)
    x = log_softmax(z, axis=1)
    folds = StratifiedKFold(n_splits=3, shuffle=True, random_state=4).split(z, y)
    total = np.zeros(2)
    for train, test in folds:
        for i, lam in enumerate(grid):
            w, b = _brute_force(x[train], y[train], lam=lam, mu=lam)
            total[i] += _mean_nll(x[test] @ w.T + b, y[test]) * len(test)
    np.testing.assert_array_equal(cal.cv_lambdas_, grid)
    np.testing.assert_allclose(cal.cv_nll_, total / len(y), rtol=1e-6)
    assert cal.reg_lambda_ == grid[int(np.argmin(total))] == cal.reg_mu_


def test_cv_is_seeded_and_mu_can_be_fixed() -> None:
    rng = np.random.default_rng(10)
    z = rng.normal(size=(200, 3)) * 3
    y = _sample_labels(rng, z / 2)
    first = MatrixScalingODIR(lambda_grid=[1.0, 100.0], reg_mu=7.0).fit(z, y)
    second = MatrixScalingODIR(lambda_grid=[1.0, 100.0], reg_mu=7.0).fit(z, y)
    np.testing.assert_array_equal(first.weights_, second.weights_)
    np.testing.assert_array_equal(first.cv_nll_, second.cv_nll_)
    assert first.reg_mu_ == 7.0
    assert first.reg_lambda_ in (1.0, 100.0)


# ----- persistence, errors and parameters -------------------------------------------------
@pytest.mark.parametrize("cls", ALL)
def test_save_load_round_trip_is_bit_exact(cls: type[Calibrator], tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    z = rng.normal(size=(150, 3)) * 2
    y = _sample_labels(rng, z)
    cal = cls(**({"lambda_grid": [1.0, 10.0]} if cls in ODIR else {})).fit(z, y)
    cal.save(tmp_path / "cal.json")
    back = Calibrator.load(tmp_path / "cal.json")
    assert type(back) is cls
    assert back.get_params() == cal.get_params()
    for key, value in cal.fitted_state().items():
        np.testing.assert_array_equal(getattr(back, key), value)
    np.testing.assert_array_equal(back.predict_proba(z), cal.predict_proba(z))
    np.testing.assert_array_equal(back.transform(z), cal.transform(z))


@pytest.mark.parametrize("cls", ALL)
def test_errors_before_fit(cls: type[Calibrator], tmp_path: Path) -> None:
    cal = cls()
    with pytest.raises(NotFittedError):
        cal.predict_proba(np.zeros((2, 3)))
    with pytest.raises(NotFittedError):
        cal.transform(np.zeros((2, 3)))
    with pytest.raises(NotFittedError):
        cal.save(tmp_path / "x.json")


@pytest.mark.parametrize(
    ("cls", "kw", "argument"),
    [
        (MatrixScalingODIR, {"reg_lambda": -1.0}, "reg_lambda"),
        (DirichletCalibration, {"reg_mu": -0.1}, "reg_mu"),
        (DirichletCalibration, {"lambda_grid": []}, "lambda_grid"),
        (DirichletCalibration, {"lambda_grid": [1.0, -1.0]}, "lambda_grid"),
        (DirichletCalibration, {"lambda_grid": ["a"]}, "lambda_grid"),
        (DirichletCalibration, {"lambda_grid": "1e-2"}, "lambda_grid"),
        (DirichletCalibration, {"lambda_grid": [[1.0, 2.0]]}, "lambda_grid"),
        (DirichletCalibration, {"lambda_grid": [1.0, np.nan]}, "lambda_grid"),
        (DirichletCalibration, {"n_folds": 1}, "n_folds"),
        (DirichletCalibration, {"n_folds": True}, "n_folds"),
        (MatrixScalingODIR, {"cv_max_iter": 0}, "cv_max_iter"),
        (MatrixScaling, {"reg_l2": -2.0}, "reg_l2"),
        (MatrixScaling, {"max_iter": 0}, "max_iter"),
        (VectorScaling, {"tol": 0.0}, "tol"),
        (VectorScaling, {"max_iter": 2.5}, "max_iter"),
    ],
)
def test_bad_parameters(cls: type[Calibrator], kw: dict, argument: str) -> None:
    with pytest.raises(InputError) as info:
        cls(**kw)
    assert info.value.argument == argument
    assert argument in str(info.value)


def test_fewer_rows_than_folds_in_a_class_cross_validate_on_fewer_folds() -> None:
    """A class of 2 rows: 2 folds instead of 3, the same fit as asking for 2 (it used to be
    refused, so that at 100 classes and 300 samples nothing could be fitted); a class of
    one row: no cross-validation, the strongest penalty of the grid (the temperature-scaling
    map; without shrinkage, the grid's largest value)."""
    z = np.random.default_rng(12).normal(size=(30, 3))
    y = np.array([0, 1] * 14 + [2, 2])  # class 2 has only 2 samples
    three = DirichletCalibration(n_folds=3).fit(z, y)
    two = DirichletCalibration(n_folds=2).fit(z, y)
    np.testing.assert_array_equal(three.predict_proba(z), two.predict_proba(z))
    assert three.reg_lambda_ == two.reg_lambda_
    y[-1] = 0  # class 2 once
    one = DirichletCalibration(n_folds=3).fit(z, y)
    assert one.reg_lambda_ == TS_STRENGTH
    assert one.cv_nll_.size == 0
    unshrunk = DirichletCalibration(n_folds=3, shrink="none").fit(z, y)
    assert unshrunk.reg_lambda_ == max(unshrunk.lambda_grid)


def test_wrong_width_at_predict_time() -> None:
    rng = np.random.default_rng(13)
    cal = VectorScaling().fit(rng.normal(size=(20, 3)), np.arange(20) % 3)
    with pytest.raises(InputError, match="3 columns"):
        cal.predict_proba(np.zeros((2, 4)))


def test_registry_names() -> None:
    for name, cls in [
        ("vector", VectorScaling),
        ("matrix", MatrixScaling),
        ("ms_odir", MatrixScalingODIR),
        ("dirichlet", DirichletCalibration),
    ]:
        assert type(create_calibrator(name)) is cls
        assert cls.maps_logits


def test_memory_is_linear_in_n_times_k() -> None:
    rng = np.random.default_rng(14)
    n, k = 4000, 60
    z = rng.normal(size=(n, k)) * 3
    y = _sample_labels(rng, z)
    tracemalloc.start()
    MatrixScalingODIR(lambda_grid=[10.0, 1000.0], n_folds=2, max_iter=20).fit(z, y)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 16 * n * k * 8  # an (N, K, K) array alone would be 60 times N K


# ----- real data --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cifar100() -> dict[str, np.ndarray]:
    """CIFAR-100 predictions (K = 100) split into seeded halves: fit on one, test on the other."""
    z, y = load_logits(CIFAR100)
    fit, test = seeded_split(len(y), 5000)
    ts = TemperatureScaling().fit(z[fit], y[fit]).predict_proba(z[test])
    return {"z": z, "y": y, "fit": fit, "test": test, "ts": ts}


@pytest.mark.shared_data
@needs_cifar100
@pytest.mark.parametrize("method", ["ms_odir", "dirichlet"])
def test_cifar100_odir_beats_uncalibrated_and_matches_temperature(
    method: str, cifar100: dict[str, np.ndarray]
) -> None:
    z, y, fit, test = cifar100["z"], cifar100["y"], cifar100["fit"], cifar100["test"]
    probs = create_calibrator(method).fit(z[fit], y[fit]).predict_proba(z[test])
    # measured: uncalibrated NLL 0.9576 / ECE 0.0565, temperature 0.9509 / 0.0425,
    # both ODIR methods 0.9246 / 0.0412 (lambda = 1000)
    assert ece(y[test], probs) < ece(y[test], logits=z[test])
    assert nll(y[test], probs) <= 1.03 * nll(y[test], cifar100["ts"])


def test_the_penalty_search_reports_each_penalty_of_each_fold(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A bar step per penalty and fold, from the folds' threads (at 100 classes the search
    of a matrix-family fit takes minutes)."""
    rng = np.random.default_rng(0)
    z = rng.normal(size=(120, 3)) * 2
    y = np.arange(120) % 3
    with caplog.at_level(logging.DEBUG, logger="calibkit.calibrators.logit.linear_solver"):
        create_calibrator("ms_odir", shrink="none", n_folds=3).fit(z, y)
    events = [e for r in caplog.records if (e := progress_of(r))]
    n_pens = len(DEFAULT_LAMBDA_GRID)  # unshrunk: the ODIR grid alone
    assert sorted(e.step for e in events) == list(range(3 * n_pens + 1))
    assert {e.total for e in events} == {3 * n_pens}
    assert events[0].label == f"penalty search ({n_pens} penalties x 3 folds, 3 classes)"
