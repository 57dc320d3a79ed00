"""The work the linear fits share: one temperature-scaling fit per distinct input, warm
starts along the penalty paths, and the diagonal fits' chunked passes."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import check_grad
from scipy.special import log_softmax

from calibkit.calibrators import create_calibrator
from calibkit.calibrators.logit import linear_solver as lin
from calibkit.calibrators.logit import temperature as ts
from calibkit.calibrators.logit.temperature_smoothed import smoothed_log_probs


def _problem(n: int, k: int, seed: int = 0, t: float = 2.0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 3
    cdf = np.cumsum(np.exp(log_softmax(z / t, axis=1)), axis=1)
    y = np.minimum((rng.random(n)[:, None] > cdf).sum(axis=1), k - 1)
    return z, y


@pytest.fixture
def fits(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the temperature-scaling fits actually run (the cache emptied first)."""
    ts.clear_temperature_cache()
    calls: list[int] = []
    real = ts.fit_inverse_temperature

    def counted(*args: object, **kw: object) -> float:
        calls.append(1)
        return real(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(ts, "fit_inverse_temperature", counted)
    return calls


def test_the_shared_fit_is_a_fresh_fit(fits: list[int]) -> None:
    z, y = _problem(3000, 5)
    fresh = ts.fit_inverse_temperature(z, y, 0.1, 10.0)
    first = ts.shared_inverse_temperature(z, y, None, 0.1, 10.0)
    again = ts.shared_inverse_temperature(z.copy(), y.copy(), None, 0.1, 10.0)
    assert abs(first - fresh) <= 1e-8 * fresh
    assert again == first
    assert len(fits) == 2  # the direct call and the first shared one; the copy hit
    assert abs(1.0 / first - 2.0) < 0.2  # the temperature the labels were drawn at


def test_a_different_input_is_another_fit(fits: list[int]) -> None:
    z, y = _problem(500, 4)
    b = ts.shared_inverse_temperature(z, y, None, 0.1, 10.0)
    z2 = z.copy()
    z2[0, 0] += 1.0  # one entry
    y2 = y.copy()
    y2[0] = (y2[0] + 1) % 4  # one label
    ts.shared_inverse_temperature(z2, y, None, 0.1, 10.0)
    ts.shared_inverse_temperature(z, y2, None, 0.1, 10.0)
    ts.shared_inverse_temperature(z, y, None, 0.2, 10.0)  # other bounds
    weighted = ts.shared_inverse_temperature(z, y, np.ones(500), 0.1, 10.0)
    assert len(fits) == 4  # the weighted fit is Brent's search, not counted
    assert abs(weighted - b) < 1e-6 * b


def test_one_ts_fit_serves_every_method_on_the_same_data(fits: list[int]) -> None:
    z, y = _problem(2000, 4)
    t = create_calibrator("temperature").fit(z, y).temperature_
    assert len(fits) == 1
    sms = create_calibrator("sms").fit(z, y)
    odir = create_calibrator("ms_odir", reg_lambda=1.0).fit(z, y)  # no search
    create_calibrator("vector", shrink="none").fit(z, y)
    assert len(fits) == 1  # the same logits: no second fit
    assert sms.temperature_ == t
    assert odir.centre_temperature_ == t


def test_vector_scalings_folds_share_the_temperature_fits(fits: list[int]) -> None:
    z, y = _problem(1500, 3)
    create_calibrator("vector").fit(z, y)
    once = len(fits)  # the whole set and each of the five folds' training parts
    assert once == 6
    create_calibrator("matrix").fit(z, y)
    assert len(fits) == once  # the same folds: every fold's TS reused


def test_the_cache_is_bounded(fits: list[int]) -> None:
    z, y = _problem(200, 3)
    for i in range(ts.CACHE_SIZE + 5):
        ts.shared_inverse_temperature(z + i, y, None, 0.1, 10.0)
    ts.shared_inverse_temperature(z, y, None, 0.1, 10.0)  # the oldest was dropped
    assert len(fits) == ts.CACHE_SIZE + 6


def test_diagonal_pass_gradient_and_curvature() -> None:
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(300, 5)), rng.integers(0, 5, 300)
    weights = rng.random(300) + 0.5
    for w in (None, weights * 300 / weights.sum()):
        theta = rng.normal(size=10) * 0.3 + np.r_[np.ones(5), np.zeros(5)]

        def f(t: np.ndarray, w: np.ndarray | None = w) -> float:
            return lin.diagonal_pass(x, y, w, t[:5], t[5:])[0]

        def g(t: np.ndarray, w: np.ndarray | None = w) -> np.ndarray:
            return np.concatenate(lin.diagonal_pass(x, y, w, t[:5], t[5:])[1:])

        assert check_grad(f, g, theta) < 1e-6
        ref = lin.softmax_nll_grad(x * theta[:5] + theta[5:], y, w)[0]
        assert abs(f(theta) - ref) < 1e-12
        h = lin.diagonal_curvature(x, w, theta[:5], theta[5:])
        eps = 1e-5
        for j in (0, 3):  # d(grad_w_j)/dw_j, d(grad_b_j)/dw_j, d(grad_b_j)/db_j
            e = np.zeros(10)
            e[j] = eps
            col = (g(theta + e) - g(theta - e)) / (2 * eps)
            e = np.zeros(10)
            e[5 + j] = eps
            col_b = (g(theta + e) - g(theta - e)) / (2 * eps)
            assert np.allclose([h[0, j], h[1, j], h[2, j]], [col[j], col[5 + j], col_b[5 + j]])


def test_chunked_passes_do_not_depend_on_the_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(2)
    x, y = rng.normal(size=(1000, 7)), rng.integers(0, 7, 1000)
    w, b = rng.normal(size=7), rng.normal(size=7)
    whole = lin.diagonal_pass(x, y, None, w, b)
    monkeypatch.setattr(lin, "DIAGONAL_CHUNK", 50)  # 7 rows a chunk
    chunked = lin.diagonal_pass(x, y, None, w, b)
    assert abs(whole[0] - chunked[0]) < 1e-12
    assert np.allclose(whole[1], chunked[1], rtol=0, atol=1e-12)


def test_smoothed_log_probs_are_the_formula() -> None:
    rng = np.random.default_rng(3)
    z = (rng.normal(size=(5000, 30)) * 4).astype(np.float32)
    got = smoothed_log_probs(z, 1.7, 0.01)
    ref = np.log(0.99 * np.exp(log_softmax(z.astype(np.float64) / 1.7, axis=1)) + 0.01 / 30)
    assert np.allclose(got, ref, rtol=0, atol=1e-12)


def test_a_warm_started_path_reaches_the_cold_solutions() -> None:
    z, y = _problem(2000, 6)
    d = lin.Design(z, y)
    c = lin.fit_inverse_temperature_of(d)
    strengths = [1e4, 10.0, 0.1, 0.0]
    warm = lin.diagonal_path(d, strengths, 500, 1e-12)
    for s, got in zip(strengths, warm, strict=True):
        w, b = lin.fit_diagonal(d, 500, 1e-12, np.full(12, s / 6), c)  # from the TS map
        cold = np.column_stack([np.diag(w), b])
        p_warm = np.exp(log_softmax(z @ got[:, :-1].T + got[:, -1], axis=1))
        p_cold = np.exp(log_softmax(z @ cold[:, :-1].T + cold[:, -1], axis=1))
        assert np.abs(p_warm - p_cold).max() < 1e-5


def test_vector_scaling_from_the_ts_map_reaches_the_identity_starts_optimum() -> None:
    z, y = _problem(2000, 5)
    d = lin.Design(z, y)
    c = lin.fit_inverse_temperature_of(d)
    w0, b0 = lin.fit_diagonal(d, 1000, 1e-14)  # from the identity
    w1, b1 = lin.fit_diagonal(d, 1000, 1e-14, start=np.r_[np.full(5, c), np.zeros(5)])
    p0 = np.exp(log_softmax(z * w0 + b0, axis=1))
    p1 = np.exp(log_softmax(z * w1 + b1, axis=1))
    assert np.abs(p0 - p1).max() < 1e-5
    assert np.allclose(w0, w1, atol=1e-4)  # b is fixed up to a shift only
