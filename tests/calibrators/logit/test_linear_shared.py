"""The work within a linear fit: one temperature-scaling fit per set, warm starts along
the penalty paths, and the diagonal fits' chunked passes."""

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


def test_no_fit_is_kept_between_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue #45, item 4: no process-wide store of fitted temperatures keyed by the data;
    each fit fits its own TS (once on the whole set, once per fold) and passes it on."""
    calls: list[int] = []
    real = lin.fit_inverse_temperature

    def counted(*args: object, **kw: object) -> float:
        calls.append(1)
        return real(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(lin, "fit_inverse_temperature", counted)
    monkeypatch.setattr(ts, "fit_inverse_temperature", counted)
    z, y = _problem(1500, 3)
    create_calibrator("vector").fit(z, y)
    assert len(calls) == 6  # the whole set and each of the five folds' training parts
    create_calibrator("vector").fit(z, y)
    assert len(calls) == 12  # the same data again: fitted again, nothing kept
    assert not hasattr(ts, "shared_inverse_temperature")


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
