"""The linear solver's heavy products on a torch device, in float64: what
:mod:`calibkit.calibrators.logit.linear_solver` computes with numpy, for a
:class:`~calibkit.calibrators.logit.linear_solver.Design` given a ``device``.

A full map's objective costs two (N, K+1) x (K+1, K) products per evaluation: at a thousand
classes and tens of thousands of rows that is 10^11 multiply-adds, seconds on two CPU cores
and milliseconds on a GPU. Its L-BFGS runs there too (:func:`minimize`: at a million
variables scipy's L-BFGS-B alone takes 0.16 s per iteration on two CPU cores, 4x torch's
L-BFGS on the same cores: ``benchmarks/bench_linear_device.py --optimiser``). The
diagonal fits (2K variables) keep scipy's L-BFGS-B and send their few parameters to the
device per evaluation; the preconditioners, the temperature fits and the regularisation
search stay on the CPU. Each product is the numpy path's, term for term, so the two agree
to rounding; the full fits' optimiser differs, so their maps agree to its tolerance
(``tests/calibrators/logit/test_linear_device.py``).

Imported only when a fit names a device: importing the calibrators does not import torch.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from calibkit.calibrators.base import F64

__all__ = [
    "OnDevice",
    "curvature",
    "diagonal_curvature",
    "diagonal_pass",
    "fit_full",
    "full_objective",
    "minimize",
    "nll",
]

#: Entries of the row outer products per chunk of :func:`curvature` on a GPU (512 MB): few
#: large products rather than the CPU's cache-sized ones.
GPU_CURVATURE_CHUNK = 1 << 26


def _tensor(a: F64, device: torch.device) -> torch.Tensor:
    return torch.as_tensor(np.asarray(a, dtype=np.float64)).to(device)


def _numpy(t: torch.Tensor) -> F64:
    return np.asarray(t.detach().cpu().numpy(), dtype=np.float64)


class OnDevice:
    """A design's arrays on ``device``: ``x1 = [x, 1]`` (N, K+1), ``x`` (a view of its
    first K columns), the labels and the row weights (mean 1, or ``None``).

    >>> d = OnDevice(np.array([[1.0, 0.0]]), np.array([0]), None, torch.device("cpu"))
    >>> d.x1.tolist(), d.x.shape
    ([[1.0, 0.0, 1.0]], torch.Size([1, 2]))
    """

    def __init__(
        self, x: F64, labels: np.ndarray, weights: F64 | None, device: torch.device
    ) -> None:
        n, k = x.shape
        self.device = device
        self.x1 = torch.ones((n, k + 1), dtype=torch.float64, device=device)
        self.x1[:, :k] = _tensor(x, device)
        self.x = self.x1[:, :k]
        self.labels = torch.as_tensor(labels, dtype=torch.int64).to(device)
        self.weights = None if weights is None else _tensor(weights, device)
        self.rows = torch.arange(n, device=device)

    def nll_grad(self, scores: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean NLL of ``softmax(scores)`` (a 0-d tensor) and its gradient in ``scores``
        (as :func:`~calibkit.calibrators.logit.linear_solver.softmax_nll_grad`)."""
        n = scores.shape[0]
        log_p = torch.log_softmax(scores, dim=1)
        picked = log_p[self.rows, self.labels]
        grad = log_p.exp_()
        grad[self.rows, self.labels] -= 1.0
        if self.weights is None:
            return -picked.sum() / n, grad.mul_(1.0 / n)
        return -(self.weights @ picked) / n, grad.mul_((self.weights / n)[:, None])

    def nll(self, scores: torch.Tensor) -> float:
        """Mean NLL of ``softmax(scores)``."""
        log_p = torch.log_softmax(scores, dim=1)[self.rows, self.labels]
        total = log_p.sum() if self.weights is None else self.weights @ log_p
        return -float(total) / scores.shape[0]


def _rows_times(u: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
    """Row ``j`` of ``u`` times ``a[j]`` (or times ``a`` when it is shared)."""
    return u @ a if a.ndim == 2 else torch.matmul(u[:, None, :], a)[:, 0, :]


def nll(d: OnDevice, wb: F64) -> float:
    """Mean NLL of ``softmax([x, 1] @ wb.T)``."""
    return d.nll(d.x1 @ _tensor(wb, d.device).T)


def full_objective(
    d: OnDevice,
    coef: torch.Tensor,
    factor: torch.Tensor,
    centre: torch.Tensor | None,
    start: torch.Tensor,
) -> Callable[[torch.Tensor], tuple[float, torch.Tensor]]:
    """NLL + ``sum(coef * (wb - centre) ** 2)`` at ``wb = start + U A`` (rows of ``U`` times
    ``factor``) and its exact gradient in ``U``, as a function of the flattened ``U``
    (:func:`~calibkit.calibrators.logit.linear_solver.full_objective` on the device)."""
    k = start.shape[0]
    factor_t = factor.transpose(-1, -2).contiguous()

    def objective(u: torch.Tensor) -> tuple[float, torch.Tensor]:
        wb = start + _rows_times(u.reshape(k, k + 1), factor)
        loss, dz = d.nll_grad(d.x1 @ wb.T)
        off = wb if centre is None else wb - centre
        weighted = coef * off
        grad = dz.T @ d.x1 + 2.0 * weighted
        value = float(loss) + float((weighted * off).sum())
        return value, _rows_times(grad, factor_t).reshape(-1)

    return objective


def minimize(
    objective: Callable[[torch.Tensor], tuple[float, torch.Tensor]],
    n: int,
    max_iter: int,
    tol: float,
    device: torch.device,
) -> tuple[torch.Tensor, float]:
    """L-BFGS from ``0`` (``n`` variables) on the device: the final point and its objective.

    :class:`torch.optim.LBFGS` with a strong-Wolfe line search and 20 corrections, as
    scipy's L-BFGS-B (no bounds) is run on the CPU, whose own work at a full map's million
    variables outweighs the objective on a GPU (see the module docstring). ``tol`` bounds
    the change of the objective and of the step, ``max_iter`` the iterations (and
    ``2 max_iter`` the evaluations).
    """
    u = torch.zeros(n, dtype=torch.float64, device=device, requires_grad=True)
    opt = torch.optim.LBFGS(
        [u],
        lr=1.0,
        max_iter=max_iter,
        max_eval=2 * max_iter,
        tolerance_grad=1e-12,
        tolerance_change=tol,
        history_size=20,
        line_search_fn="strong_wolfe",
    )

    def closure() -> float:
        value, u.grad = objective(u.detach())
        return value

    opt.step(closure)
    final = u.detach()
    return final, objective(final)[0]


def fit_full(
    d: OnDevice, coef: F64, factor: F64, centre: F64 | None, start: F64, max_iter: int, tol: float
) -> tuple[F64, float]:
    """Minimise NLL + ``sum(coef * (wb - centre) ** 2)`` over ``wb = start + U A`` on the
    device: the solution ``wb`` and its objective (see
    :func:`~calibkit.calibrators.logit.linear_solver.fit_full`, which calls it)."""
    dev, k = d.device, start.shape[0]
    factor_t, start_t = _tensor(factor, dev), _tensor(start, dev)
    centre_t = None if centre is None else _tensor(centre, dev)
    objective = full_objective(d, _tensor(coef, dev), factor_t, centre_t, start_t)
    u, fun = minimize(objective, k * (k + 1), max_iter, tol, dev)
    return _numpy(start_t + _rows_times(u.reshape(k, k + 1), factor_t)), fun


def curvature(d: OnDevice, floor: float, inverse_temperature: float, chunk: int) -> F64:
    """:func:`~calibkit.calibrators.logit.linear_solver.curvature` on the device
    (``chunk``: entries of the row outer products per product, raised on a GPU)."""
    x1 = d.x1
    n, k1 = x1.shape
    var = torch.softmax(d.x * inverse_temperature, dim=1)
    var.mul_(1.0 - var)
    if k1 * k1 > 4 * n:
        return _numpy((x1.T * var.mean(dim=1)) @ x1 / n)
    var[var <= floor * var.max(dim=0).values] = 0.0
    upper = torch.triu_indices(k1, k1, device=d.device)
    acc = torch.zeros((k1 - 1, upper.shape[1]), dtype=torch.float64, device=d.device)
    if d.device.type != "cpu":
        chunk = max(chunk, GPU_CURVATURE_CHUNK)
    step = max(1, min(chunk, n * k1) // (k1 * k1))
    for lo in range(0, n, step):
        xc = x1[lo : lo + step]
        acc += var[lo : lo + step].T @ (xc[:, upper[0]] * xc[:, upper[1]])
    blocks = torch.empty((k1 - 1, k1, k1), dtype=torch.float64, device=d.device)
    blocks[:, upper[0], upper[1]] = acc
    blocks[:, upper[1], upper[0]] = acc
    return _numpy(blocks / n)


def diagonal_pass(d: OnDevice, w: F64, b: F64) -> tuple[float, F64, F64]:
    """Mean NLL of ``softmax(x * w + b)`` and its gradients in ``w`` and ``b``
    (:func:`~calibkit.calibrators.logit.linear_solver.diagonal_pass` on the device)."""
    loss, grad = d.nll_grad(d.x * _tensor(w, d.device) + _tensor(b, d.device))
    gb = grad.sum(dim=0)
    gw = grad.mul_(d.x).sum(dim=0)
    return float(loss), _numpy(gw), _numpy(gb)


def diagonal_curvature(d: OnDevice, w: F64, b: F64) -> F64:
    """The (3, K) entries ``h00, h10, h11`` of the 2 x 2 Hessian blocks of
    :func:`diagonal_pass`'s NLL
    (:func:`~calibkit.calibrators.logit.linear_solver.diagonal_curvature` on the device)."""
    v = torch.softmax(d.x * _tensor(w, d.device) + _tensor(b, d.device), dim=1)
    v.mul_(1.0 - v)
    if d.weights is not None:
        v.mul_(d.weights[:, None])
    h11 = v.sum(dim=0)
    v.mul_(d.x)
    h10 = v.sum(dim=0)
    h00 = v.mul_(d.x).sum(dim=0)
    return _numpy(torch.stack([h00, h10, h11]) / d.x.shape[0])
