"""The solver behind the linear calibrators: a penalised multinomial-logistic fit of
``x -> W x + b`` with exact float64 gradients, L-BFGS, per-class preconditioning, warm-started
regularisation paths and k-fold cross-validation (see :mod:`calibkit.calibrators.logit.linear` for
the methods and their objectives).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from calibkit.calibrators.base import F64
from calibkit.calibrators.logit.temperature import (
    fit_inverse_temperature,
    fit_weighted_inverse_temperature,
)
from calibkit.core.outputs import log_softmax64
from calibkit.core.progress import Phase

I64 = npt.NDArray[np.int64]
log = logging.getLogger(__name__)
#: What a regularisation path is indexed by: penalties, or vector scaling's strengths.
P = TypeVar("P")


# ----- objective ---------------------------------------------------------------------------
def softmax_nll_grad(scores: F64, labels: I64, weights: F64 | None = None) -> tuple[float, F64]:
    """Mean NLL of ``softmax(scores)`` and its gradient in ``scores`` (overwrites ``scores``).

    ``weights`` (of mean 1) weigh the rows; ``None``: all 1.

    >>> loss, grad = softmax_nll_grad(np.array([[0.0, 0.0]]), np.array([1]))
    >>> round(loss, 6), grad.tolist()
    (0.693147, [[0.5, -0.5]])
    """
    n = scores.shape[0]
    rows = np.arange(n)
    scores -= scores.max(axis=1, keepdims=True)
    if weights is not None:
        picked_w = float(weights @ scores[rows, labels])
        np.exp(scores, out=scores)
        total = scores.sum(axis=1)
        scores *= (weights / (n * total))[:, None]
        scores[rows, labels] -= weights / n
        return (float(weights @ np.log(total)) - picked_w) / n, scores
    picked = float(scores[rows, labels].sum())
    np.exp(scores, out=scores)
    total = scores.sum(axis=1)
    loss = (float(np.log(total).sum()) - picked) / n
    scores *= (1.0 / (n * total))[:, None]
    scores[rows, labels] -= 1.0 / n
    return loss, scores


def odir_coefficients(k: int, reg_lambda: float, reg_mu: float, diagonal: bool = False) -> F64:
    """Per-entry weights of the ODIR penalty on ``[W | b]`` (a (K, K+1) array).

    ``diagonal=True``: the diagonal of ``W`` weighs as much as each off-diagonal entry
    (the penalty towards the temperature-scaling map, which pins the whole ``W``).

    >>> odir_coefficients(2, 2.0, 4.0).tolist(), odir_coefficients(2, 2.0, 4.0, True)[0].tolist()
    ([[0.0, 1.0, 2.0], [1.0, 0.0, 2.0]], [1.0, 1.0, 2.0])
    """
    coef = np.full((k, k + 1), reg_lambda / (k * (k - 1)) if k > 1 else 0.0)
    if not diagonal:
        coef[np.arange(k), np.arange(k)] = 0.0
    coef[:, k] = reg_mu / k
    return coef


def temperature_map(k: int, inverse_temperature: float) -> F64:
    """``[I / T | 0]``, the (K, K+1) map of temperature scaling (``I`` at ``T = 1``)."""
    return np.eye(k, k + 1) * inverse_temperature


def fit_inverse_temperature_of(design: Design) -> float:
    """The inverse temperature ``1 / T`` of temperature scaling fitted by NLL on the
    design's features (``T`` in [0.1, 10], the defaults of ``TemperatureScaling``)."""
    x, y = np.ascontiguousarray(design.x1[:, :-1]), design.labels
    if design.weights is None:
        return float(fit_inverse_temperature(x, y, 0.1, 10.0))
    return float(fit_weighted_inverse_temperature(x, y, design.weights, 0.1, 10.0))


class Design:
    """Calibration features ``[x, 1]`` with their labels.

    ``x1`` is float64, (N, K+1), in Fortran order: the two products of each objective
    evaluation, :meth:`scores` and ``grad.T @ x1``, run about a third faster that way.

    Parameters
    ----------
    x : ndarray of float64, shape (N, K)
        The features (logits or log-probabilities).
    labels : ndarray of int64, shape (N,)
        The class of each row.
    weights : ndarray of float64, shape (N,), optional
        The weight of each row (rescaled to mean 1); ``None``: all rows weigh 1.

    Examples
    --------
    >>> d = Design(np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([0, 1]))
    >>> d.n_classes, d.x1.tolist()
    (2, [[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
    """

    def __init__(self, x: F64, labels: I64, weights: F64 | None = None) -> None:
        n, k = x.shape
        self.weights = None if weights is None else weights * (n / weights.sum())
        self.x1 = np.empty((n, k + 1), order="F")
        self.x1[:, :k] = x
        self.x1[:, k] = 1.0
        self.labels = labels
        #: NLL of each sample under the identity map.
        self.identity_nll = -log_softmax64(x)[np.arange(n), labels]

    @property
    def n_classes(self) -> int:
        return int(self.x1.shape[1] - 1)

    def subset(self, rows: I64) -> Design:
        weights = None if self.weights is None else self.weights[rows]
        return Design(self.x1[rows, :-1], self.labels[rows], weights)

    def mean_identity_nll(self) -> float:
        """The (weighted) mean NLL of the identity map."""
        if self.weights is None:
            return float(self.identity_nll.mean())
        return float(self.weights @ self.identity_nll) / float(self.identity_nll.shape[0])

    def weight_of(self, rows: I64) -> float:
        """The total weight of ``rows`` (their number without weights)."""
        return rows.shape[0] if self.weights is None else float(self.weights[rows].sum())

    def scores(self, wb: F64) -> F64:
        """``[x, 1] @ wb.T``, (N, K) in Fortran order."""
        return np.asarray((wb @ self.x1.T).T)

    def nll(self, wb: F64) -> float:
        """Mean NLL of ``softmax([x, 1] @ wb.T)``."""
        return softmax_nll_grad(self.scores(wb), self.labels, self.weights)[0]


def identity_map(k: int) -> F64:
    """``[I | 0]``, the (K, K+1) identity map."""
    return np.eye(k, k + 1)


def curvature(design: Design, floor: float = 1e-3, inverse_temperature: float = 1.0) -> F64:
    """Approximate diagonal blocks of the NLL Hessian at the identity (or at the
    temperature-scaling map of ``inverse_temperature``), one per class row.

    Block ``j`` is ``mean_i v_ij [x_i, 1][x_i, 1]^T`` with ``v_ij = p_ij (1 - p_ij)``,
    summed over the rows where ``v_ij`` exceeds ``floor`` (default a thousandth) times its
    maximum (the rest adds little). When ``(K+1)^2 > 4 N`` (the blocks would take over four
    times the design's memory), one (K+1, K+1) matrix weighted by ``mean_j v_ij`` stands in
    for all of them.
    """
    x1 = np.ascontiguousarray(design.x1)  # row gathers are faster in C order
    n, k1 = x1.shape
    p = np.exp(log_softmax64(x1[:, :-1] * inverse_temperature))
    var = p * (1.0 - p)
    if k1 * k1 > 4 * n:
        return np.asarray((x1.T * var.mean(axis=1)) @ x1 / n)
    blocks = np.empty((k1 - 1, k1, k1))
    for j in range(k1 - 1):  # one (K+1, n_j) x (n_j, K+1) product per class
        rows = np.flatnonzero(var[:, j] > floor * var[:, j].max())
        blocks[j] = (x1[rows].T * var[rows, j]) @ x1[rows]
    blocks /= n
    return blocks


def preconditioner(curv: F64, coef: F64) -> F64:
    """Inverse Cholesky factors ``A`` of ``H = curv + 2 diag(coef)``, so ``A H A^T = I``."""
    h = curv.copy()
    idx = np.arange(h.shape[-1])
    h[..., idx, idx] += 2.0 * (coef if h.ndim == 3 else coef.mean(axis=0))
    scale = float(np.mean(h[..., idx, idx]))
    h[..., idx, idx] += 1e-6 * scale + 1e-12  # floor for flat directions
    try:
        chol = np.linalg.cholesky(h)
    except np.linalg.LinAlgError:  # not finite: no preconditioning
        return np.eye(h.shape[-1])
    from scipy.linalg import solve_triangular  # lazy: scipy costs a quarter second at import

    eye = np.broadcast_to(np.eye(h.shape[-1]), h.shape)
    return np.ascontiguousarray(solve_triangular(chol, eye, lower=True))


@dataclass(frozen=True)
class Penalty:
    """The quadratic penalty ``sum(coef * (wb - centre) ** 2)`` on ``[W | b]``, with its
    preconditioner.

    Attributes
    ----------
    coef : ndarray of float64
        The weight of each squared parameter.
    factor : ndarray of float64
        The diagonal preconditioner of the penalised problem.
    centre : ndarray of float64 or None
        The parameters the penalty pulls towards; ``None``: zero.

    Examples
    --------
    >>> p = Penalty(np.array([[1.0, 0.0]]), np.ones((1, 2)))
    >>> p(np.array([[3.0, 5.0]]))
    9.0
    >>> centred = Penalty(np.array([[1.0, 0.0]]), np.ones((1, 2)), np.array([[1.0, 0.0]]))
    >>> centred(np.array([[3.0, 5.0]]))
    4.0
    """

    coef: F64
    factor: F64
    centre: F64 | None = None

    @classmethod
    def make(cls, coef: F64, curv: F64, centre: F64 | None = None) -> Penalty:
        """The penalty ``coef`` (towards ``centre``) preconditioned for the curvature ``curv``."""
        return cls(coef, preconditioner(curv, coef), centre)

    def _offset(self, wb: F64) -> F64:
        return wb if self.centre is None else wb - self.centre

    def __call__(self, wb: F64) -> float:
        d = self._offset(wb)
        return float((self.coef * d * d).sum())

    def gradient(self, wb: F64) -> F64:
        """The penalty's gradient in ``wb``."""
        return 2.0 * self.coef * self._offset(wb)


def _rows_times(u: F64, a: F64) -> F64:
    """Row ``j`` of ``u`` times ``a[j]`` (or times ``a`` when it is shared)."""
    out = u @ a if a.ndim == 2 else np.matmul(u[:, None, :], a)[:, 0, :]
    return np.asarray(out, dtype=np.float64)


def _lbfgs(
    fun: Callable[[F64], tuple[float, F64]], n: int, max_iter: int, tol: float
) -> tuple[F64, float]:
    """L-BFGS from ``0`` (``n`` variables); the final point and its objective."""
    from scipy.optimize import minimize  # lazy: scipy costs a quarter second at import

    res = minimize(
        fun,
        np.zeros(n),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": max_iter, "maxcor": 20, "ftol": tol, "gtol": 1e-12},
    )
    return np.asarray(res.x, dtype=np.float64), float(res.fun)


def full_objective(design: Design, pen: Penalty, start: F64) -> Callable[[F64], tuple[float, F64]]:
    """NLL + ``pen`` at ``[W | b] = start + U A`` (rows times ``pen.factor``) and its
    exact gradient in ``U``, as a function of the flattened ``U``."""
    k, factor = design.n_classes, pen.factor
    factor_t = np.ascontiguousarray(np.swapaxes(factor, -1, -2))

    def objective(u: F64) -> tuple[float, F64]:
        wb = start + _rows_times(u.reshape(k, k + 1), factor)
        loss, dz = softmax_nll_grad(design.scores(wb), design.labels, design.weights)
        grad = dz.T @ design.x1 + pen.gradient(wb)
        return loss + pen(wb), _rows_times(grad, factor_t).ravel()

    return objective


def fit_full(
    design: Design, pen: Penalty, start: F64, start_nll: float, max_iter: int, tol: float
) -> tuple[F64, float]:
    """Minimise NLL + ``pen`` over ``wb = [W | b]`` from ``start`` (whose NLL is ``start_nll``).

    Returns the solution and its NLL; its objective is never above the start's.
    """
    k = design.n_classes
    u, fun = _lbfgs(full_objective(design, pen, start), k * (k + 1), max_iter, tol)
    wb = start + _rows_times(u.reshape(k, k + 1), pen.factor)
    if fun > start_nll + pen(start):  # L-BFGS only goes down
        return start.copy(), start_nll
    return wb, fun - pen(wb)


def fit_diagonal(
    design: Design,
    max_iter: int,
    tol: float,
    coef: F64 | None = None,
    inverse_temperature: float = 1.0,
) -> tuple[F64, F64]:
    """Vector scaling: minimise the NLL of ``softmax(x * w + b)`` from ``w = c, b = 0``
    (``c``: ``inverse_temperature``, default 1), plus ``sum(coef * ([w, b] - [c, 0]) ** 2)``
    when ``coef`` (2K weights) is given.

    Variables are scaled by the square root of the diagonal Hessian at the start.
    """
    k = design.n_classes
    x, y = design.x1[:, :k], design.labels
    c = inverse_temperature
    p = np.exp(log_softmax64(x * c))
    var = p * (1.0 - p)
    curv = np.concatenate([np.einsum("ij,ij->j", var, x * x), var.sum(axis=0)]) / y.shape[0]
    pen = np.zeros(2 * k) if coef is None else coef
    curv += 2.0 * pen
    scale = 1.0 / np.sqrt(curv + 1e-6 * curv.mean() + 1e-12)
    start = np.concatenate([np.full(k, c), np.zeros(k)])

    def objective(u: F64) -> tuple[float, F64]:
        d = u * scale
        loss, dz = softmax_nll_grad(x * (c + d[:k]) + d[k:], y, design.weights)
        grad = np.concatenate([np.einsum("ij,ij->j", dz, x), dz.sum(axis=0)]) + 2.0 * pen * d
        return loss + float(pen @ (d * d)), grad * scale

    u, fun = _lbfgs(objective, 2 * k, max_iter, tol)
    start_nll = design.mean_identity_nll() if c == 1.0 else design.nll(temperature_map(k, c))
    if fun > start_nll:  # L-BFGS only goes down
        u = np.zeros_like(u)
    theta = start + u * scale
    return theta[:k], theta[k:]


def fit_path(
    design: Design,
    pens: Sequence[Penalty],
    max_iter: int,
    tol: float,
    start: F64 | None = None,
    home: F64 | None = None,
    step: Callable[[], None] | None = None,
) -> list[F64]:
    """Fit ``[W | b]`` for each penalty in turn, warm-started along the path.

    Each fit starts at the previous solution (first: ``start``, default ``home``) or at
    ``home`` (default the identity; the temperature-scaling map when shrinking towards
    it), whichever has the lower objective under the new penalty, so none ends above
    ``home``'s objective. ``step`` is called after each fit (progress).
    """
    eye = identity_map(design.n_classes) if home is None else home
    id_nll = design.mean_identity_nll() if home is None else design.nll(home)
    wb, wb_nll = (eye, id_nll) if start is None else (start, design.nll(start))
    out = []
    for pen in pens:
        if id_nll + pen(eye) <= wb_nll + pen(wb):
            wb, wb_nll = eye, id_nll
        wb, wb_nll = fit_full(design, pen, wb, wb_nll, max_iter, tol)
        out.append(wb)
        if step is not None:
            step()
    return out


def shrunk_path(
    design: Design,
    pens: Sequence[Penalty],
    max_iter: int,
    tol: float,
    step: Callable[[], None] | None = None,
) -> list[F64]:
    """:func:`fit_path` with every penalty centred at the temperature-scaling map fitted on
    ``design`` (which is also where the path starts)."""
    home = temperature_map(design.n_classes, fit_inverse_temperature_of(design))
    pens = [replace(p, centre=home) for p in pens]
    return fit_path(design, pens, max_iter, tol, None, home, step)


def diagonal_path(
    design: Design,
    strengths: Sequence[float],
    max_iter: int,
    tol: float,
    step: Callable[[], None] | None = None,
) -> list[F64]:
    """Vector scaling shrunk towards the temperature-scaling map fitted on ``design``: for
    each strength ``s``, the weight ``s / K`` on every squared ``w_j - 1 / T`` and ``b_j``;
    each solution as a (K, K+1) map ``[diag(w) | b]`` (``step``: called after each)."""
    k = design.n_classes
    c = fit_inverse_temperature_of(design)
    out = []
    for s in strengths:
        w, b = fit_diagonal(design, max_iter, tol, np.full(2 * k, s / k), c)
        out.append(np.column_stack([np.diag(w), b]))
        if step is not None:
            step()
    return out


def cross_validate(
    design: Design,
    pens: Sequence[P],
    n_folds: int,
    seed: int,
    max_iter: int,
    tol: float,
    path: Callable[..., list[F64]] = fit_path,
) -> tuple[F64, list[F64]]:
    """Pooled held-out NLL of ``path`` (default :func:`fit_path`; called as ``path(design,
    pens, max_iter, tol, step=...)``) for each penalty (stratified k-fold), and the mean
    over folds of each penalty's solution. Folds run in parallel threads (BLAS and numpy
    release the GIL); the result does not depend on their number. Each fit of a fold is a
    step of the logged progress (:class:`~calibkit.core.progress.Phase`)."""
    y = design.labels
    from sklearn.model_selection import StratifiedKFold  # lazy: sklearn costs seconds at import

    folds = StratifiedKFold(n_splits=n_folds, shuffle=True, random_state=seed)
    k, n_pens = design.n_classes, len(pens)
    label = f"penalty search ({n_pens} penalties x {n_folds} folds, {k} classes)"
    phase = Phase(log, label, n_folds * n_pens)

    def run(fold: tuple[I64, I64]) -> tuple[list[float], list[F64]]:
        train, test = fold
        solutions = path(design.subset(train), pens, max_iter, tol, step=phase.step)
        held_out = design.subset(test)
        return [held_out.nll(wb) * design.weight_of(test) for wb in solutions], solutions

    with ThreadPoolExecutor(max_workers=max(1, min(n_folds, _n_cores()))) as pool:
        results = list(pool.map(run, folds.split(np.zeros(y.shape[0]), y)))
    total = np.sum([r[0] for r in results], axis=0) / y.shape[0]
    means = [np.mean([r[1][i] for r in results], axis=0) for i in range(len(pens))]
    return np.asarray(total, dtype=np.float64), means


def _n_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
