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
from functools import partial
from typing import TYPE_CHECKING, TypeVar

import numpy as np
import numpy.typing as npt

from calibkit.calibrators.base import F64
from calibkit.calibrators.logit.temperature import (
    fit_inverse_temperature,
    fit_weighted_inverse_temperature,
)
from calibkit.core.outputs import log_softmax64
from calibkit.core.progress import Phase

if TYPE_CHECKING:
    import torch

    from calibkit.calibrators.logit.linear_device import OnDevice

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
    design's features (``T`` in [0.1, 10], the defaults of ``TemperatureScaling``): each
    fold's centre in the penalty search."""
    x, y, w = design.x_rows, design.labels, design.weights
    if w is None:
        return fit_inverse_temperature(x, y, 0.1, 10.0)
    return fit_weighted_inverse_temperature(x, y, w, 0.1, 10.0)


class Design:
    """Calibration features ``[x, 1]`` with their labels.

    ``x1`` is float64, (N, K+1), in Fortran order: the two products of each objective
    evaluation, :meth:`scores` and ``grad.T @ x1``, run about a third faster that way. It
    is made on first use (the diagonal fits read ``x_rows``, the features in C order), as
    is the identity map's NLL.

    Parameters
    ----------
    x : ndarray of float64, shape (N, K)
        The features (logits or log-probabilities).
    labels : ndarray of int64, shape (N,)
        The class of each row.
    weights : ndarray of float64, shape (N,), optional
        The weight of each row (rescaled to mean 1); ``None``: all rows weigh 1.
    device : torch.device, optional
        Where the objective's products run (float64 torch there:
        :mod:`~calibkit.calibrators.logit.linear_device`); ``None``: numpy on this CPU.

    Examples
    --------
    >>> d = Design(np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([0, 1]))
    >>> d.n_classes, d.x1.tolist()
    (2, [[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
    """

    def __init__(
        self,
        x: F64,
        labels: I64,
        weights: F64 | None = None,
        device: torch.device | None = None,
    ) -> None:
        n = x.shape[0]
        self.weights = None if weights is None else weights * (n / weights.sum())
        #: The features ``x`` in C order (the diagonal fits read row chunks of them).
        self.x_rows = np.ascontiguousarray(x, dtype=np.float64)
        self.labels = labels
        self.device = device
        self._x1: F64 | None = None
        self._identity_nll: F64 | None = None
        self._on_device: OnDevice | None = None

    @property
    def on_device(self) -> OnDevice | None:
        """The design on its device (made on first use), or ``None`` without one."""
        if self.device is None:
            return None
        if self._on_device is None:
            from calibkit.calibrators.logit.linear_device import OnDevice

            self._on_device = OnDevice(self.x_rows, self.labels, self.weights, self.device)
        return self._on_device

    @property
    def x1(self) -> F64:
        """``[x, 1]`` in Fortran order, made on first use (only the full maps need it)."""
        if self._x1 is None:
            n, k = self.x_rows.shape
            self._x1 = np.empty((n, k + 1), order="F")
            self._x1[:, :k] = self.x_rows
            self._x1[:, k] = 1.0
        return self._x1

    @property
    def identity_nll(self) -> F64:
        """NLL of each sample under the identity map (computed on first use)."""
        if self._identity_nll is None:
            n = self.labels.shape[0]
            self._identity_nll = -log_softmax64(self.x_rows)[np.arange(n), self.labels]
        return self._identity_nll

    @property
    def n_classes(self) -> int:
        return int(self.x_rows.shape[1])

    def subset(self, rows: I64) -> Design:
        weights = None if self.weights is None else self.weights[rows]
        return Design(self.x_rows[rows], self.labels[rows], weights, self.device)

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
        if (on := self.on_device) is not None:
            from calibkit.calibrators.logit.linear_device import nll

            return nll(on, wb)
        return softmax_nll_grad(self.scores(wb), self.labels, self.weights)[0]


def identity_map(k: int) -> F64:
    """``[I | 0]``, the (K, K+1) identity map."""
    return np.eye(k, k + 1)


#: Entries of the row outer products per chunk of :func:`curvature` (16 MB at most, and
#: never more than the design holds: the memory stays linear in N K).
CURVATURE_CHUNK = 1 << 21


def curvature(design: Design, floor: float = 1e-3, inverse_temperature: float = 1.0) -> F64:
    """Approximate diagonal blocks of the NLL Hessian at the identity (or at the
    temperature-scaling map of ``inverse_temperature``), one per class row.

    Block ``j`` is ``mean_i v_ij [x_i, 1][x_i, 1]^T`` with ``v_ij = p_ij (1 - p_ij)``,
    summed over the rows where ``v_ij`` exceeds ``floor`` (default a thousandth) times its
    maximum (the rest adds little). When ``(K+1)^2 > 4 N`` (the blocks would take over four
    times the design's memory), one (K+1, K+1) matrix weighted by ``mean_j v_ij`` stands in
    for all of them. On the design's device, the same there.
    """
    if (on := design.on_device) is not None:
        from calibkit.calibrators.logit import linear_device

        return linear_device.curvature(on, floor, inverse_temperature, CURVATURE_CHUNK)
    x1 = np.ascontiguousarray(design.x1)  # row gathers are faster in C order
    n, k1 = x1.shape
    p = np.exp(log_softmax64(x1[:, :-1] * inverse_temperature))
    var = p * (1.0 - p)
    if k1 * k1 > 4 * n:
        return np.asarray((x1.T * var.mean(axis=1)) @ x1 / n)
    var[var <= floor * var.max(axis=0)] = 0.0  # rows that add little to a class's block
    upper = np.triu_indices(k1)
    acc = np.zeros((k1 - 1, upper[0].size))
    step = max(1, min(CURVATURE_CHUNK, n * k1) // (k1 * k1))
    for lo in range(0, n, step):  # every class's block from one product per row chunk
        xc = x1[lo : lo + step]
        acc += var[lo : lo + step].T @ (xc[:, upper[0]] * xc[:, upper[1]])
    blocks = np.empty((k1 - 1, k1, k1))
    blocks[:, upper[0], upper[1]] = acc
    blocks[:, upper[1], upper[0]] = acc
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

    Returns the solution and its NLL; its objective is never above the start's. On the
    design's device, the objective and its L-BFGS run there
    (:func:`~calibkit.calibrators.logit.linear_device.fit_full`).
    """
    k = design.n_classes
    if (on := design.on_device) is not None:
        from calibkit.calibrators.logit import linear_device

        wb, fun = linear_device.fit_full(on, pen.coef, pen.factor, pen.centre, start, max_iter, tol)
    else:
        u, fun = _lbfgs(full_objective(design, pen, start), k * (k + 1), max_iter, tol)
        wb = start + _rows_times(u.reshape(k, k + 1), pen.factor)
    if fun > start_nll + pen(start):  # L-BFGS only goes down
        return start.copy(), start_nll
    return wb, fun - pen(wb)


#: Elements per row chunk of the diagonal fits' passes (a chunk and its temporaries stay
#: in a 2 MB L2 cache).
DIAGONAL_CHUNK = 1 << 15


def _row_chunks(n: int, k: int) -> range:
    return range(0, n, max(1, DIAGONAL_CHUNK // k))


def diagonal_pass(
    x: F64, labels: I64, weights: F64 | None, w: F64, b: F64
) -> tuple[float, F64, F64]:
    """Mean NLL of ``softmax(x * w + b)`` and its gradients in ``w`` and ``b``, in one pass
    over row chunks of ``x`` (C order; ``weights``: of the rows, mean 1, or ``None``).

    >>> x = np.array([[1.0, 0.0]])
    >>> loss, gw, gb = diagonal_pass(x, np.array([0]), None, np.ones(2), np.zeros(2))
    >>> round(loss, 6), gw.round(6).tolist(), gb.round(6).tolist()
    (0.313262, [-0.268941, 0.0], [-0.268941, 0.268941])
    """
    n, k = x.shape
    gw, gb, loss = np.zeros(k), np.zeros(k), 0.0
    step = max(1, DIAGONAL_CHUNK // k)
    for lo in _row_chunks(n, k):
        xc, yc = x[lo : lo + step], labels[lo : lo + step]
        rows = np.arange(xc.shape[0])
        s = xc * w
        s += b
        s -= s.max(axis=1, keepdims=True)
        picked = s[rows, yc]
        np.exp(s, out=s)
        total = s.sum(axis=1)
        log_total = np.log(total)
        scale = 1.0 / (n * total)
        if weights is None:
            loss += float(log_total.sum() - picked.sum())
            s *= scale[:, None]
            s[rows, yc] -= 1.0 / n
        else:
            wc = weights[lo : lo + step]
            loss += float(wc @ (log_total - picked))
            s *= (scale * wc)[:, None]
            s[rows, yc] -= wc / n
        gw += np.einsum("ij,ij->j", s, xc)
        gb += s.sum(axis=0)
    return loss / n, gw, gb


def diagonal_curvature(x: F64, weights: F64 | None, w: F64, b: F64) -> F64:
    """The 2 x 2 diagonal blocks of the Hessian of :func:`diagonal_pass`'s NLL in each
    ``(w_j, b_j)`` at ``(w, b)``, a (3, K) array of their entries ``h00, h10, h11``
    (``mean_i v_ij [x_ij, 1][x_ij, 1]^T``, ``v_ij = p_ij (1 - p_ij)``)."""
    n, k = x.shape
    h = np.zeros((3, k))
    step = max(1, DIAGONAL_CHUNK // k)
    for lo in _row_chunks(n, k):
        xc = x[lo : lo + step]
        s = xc * w
        s += b
        s -= s.max(axis=1, keepdims=True)
        np.exp(s, out=s)
        s /= s.sum(axis=1, keepdims=True)
        s *= 1.0 - s
        if weights is not None:
            s *= weights[lo : lo + step, None]
        h[2] += s.sum(axis=0)
        s *= xc
        h[1] += s.sum(axis=0)
        h[0] += np.einsum("ij,ij->j", s, xc)
    return np.asarray(h / n, dtype=np.float64)


def _diagonal_factor(design: Design, theta: F64, pen: F64) -> F64:
    """The inverse Cholesky factors of the 2 x 2 blocks ``(w_j, b_j)`` of vector scaling's
    Hessian at ``theta = [w, b]`` plus the penalty's curvature ``2 pen``: a (3, K) array of
    their entries ``a00, a10, a11`` (``a01 = 0``), so that ``A_j H_j A_j^T = I``.

    The coupling between classes (``-p_ij p_ik``) is left out: it is small where many
    classes share the probability, and L-BFGS learns what remains.
    """
    k = design.n_classes
    if (on := design.on_device) is not None:
        from calibkit.calibrators.logit import linear_device

        h00, h10, h11 = linear_device.diagonal_curvature(on, theta[:k], theta[k:])
    else:
        h00, h10, h11 = diagonal_curvature(design.x_rows, design.weights, theta[:k], theta[k:])
    h00, h11 = h00 + 2.0 * pen[:k], h11 + 2.0 * pen[k:]
    floor = 1e-6 * float(np.mean(h00) + np.mean(h11)) / 2.0 + 1e-12  # flat directions
    h00, h11 = h00 + floor, h11 + floor
    l00 = np.sqrt(h00)
    l10 = h10 / l00
    l11 = np.sqrt(np.maximum(h11 - l10 * l10, floor))
    return np.stack([1.0 / l00, -l10 / (l00 * l11), 1.0 / l11])


def fit_diagonal(
    design: Design,
    max_iter: int,
    tol: float,
    coef: F64 | None = None,
    inverse_temperature: float = 1.0,
    start: F64 | None = None,
) -> tuple[F64, F64]:
    """Vector scaling: minimise the NLL of ``softmax(x * w + b)`` plus
    ``sum(coef * ([w, b] - [c, 0]) ** 2)`` when ``coef`` (2K weights) is given (``c``:
    ``inverse_temperature``, default 1), from ``start`` (``[w, b]``; default ``[c, 0]``).

    Each class's ``(w_j, b_j)`` is whitened by the inverse Cholesky factor of its 2 x 2
    block of the Hessian at the start (:func:`_diagonal_factor`); the fit never ends above
    the start's objective.

    >>> z = np.array([[2.0, 0.0], [0.0, 2.0], [2.0, 0.0], [0.0, 2.0], [1.0, 0.0]])
    >>> d = Design(z, np.array([0, 1, 0, 0, 1]))
    >>> w, b = fit_diagonal(d, 500, 1e-12, np.full(4, 1e12), 0.5)
    >>> bool(np.abs(w - 0.5).max() < 1e-9), bool(np.abs(b).max() < 1e-9)
    (True, True)
    """
    k = design.n_classes
    x, y, weights = design.x_rows, design.labels, design.weights
    centre = np.concatenate([np.full(k, inverse_temperature), np.zeros(k)])
    theta0 = centre if start is None else np.asarray(start, dtype=np.float64)
    pen = np.zeros(2 * k) if coef is None else coef
    a00, a10, a11 = _diagonal_factor(design, theta0, pen)
    nll_grads: Callable[[F64, F64], tuple[float, F64, F64]]
    if (on := design.on_device) is not None:
        from calibkit.calibrators.logit import linear_device

        nll_grads = partial(linear_device.diagonal_pass, on)
    else:
        nll_grads = partial(diagonal_pass, x, y, weights)

    def theta_of(u: F64) -> F64:
        u0, u1 = u[:k], u[k:]
        return np.asarray(theta0 + np.concatenate([u0 * a00 + u1 * a10, u1 * a11]))

    first: list[float] = []

    def objective(u: F64) -> tuple[float, F64]:
        theta = theta_of(u)
        loss, gw, gb = nll_grads(theta[:k], theta[k:])
        d = theta - centre
        gw += 2.0 * pen[:k] * d[:k]
        gb += 2.0 * pen[k:] * d[k:]
        value = loss + float(pen @ (d * d))
        if not first:
            first.append(value)
        return value, np.concatenate([gw * a00, gw * a10 + gb * a11])

    u, fun = _lbfgs(objective, 2 * k, max_iter, tol)
    if fun > first[0]:  # L-BFGS only goes down
        u = np.zeros_like(u)
    theta = theta_of(u)
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
    each solution as a (K, K+1) map ``[diag(w) | b]`` (``step``: called after each).

    ``strengths`` go from the strongest down, each fit warm-started at the previous
    solution (whose objective under the weaker penalty is at most the TS map's, so no fit
    ends above it); the problems are convex, so this changes the path only within the
    optimiser's tolerance (and, for fits stopped after a few iterations, brings them closer
    to their optimum)."""
    k = design.n_classes
    c = fit_inverse_temperature_of(design)
    out, theta = [], None
    for s in strengths:
        w, b = fit_diagonal(design, max_iter, tol, np.full(2 * k, s / k), c, theta)
        theta = np.concatenate([w, b])
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
