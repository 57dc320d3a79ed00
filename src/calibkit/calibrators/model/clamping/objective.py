"""The Neural Clamping objective and its exact minimum over the temperature.

Tang, Chen & Ho (TMLR 2024, eq. 9) learn ``delta`` and ``T`` by minimising

    mean_i FL_gamma(f(x_i + delta) / T, y_i) + lam * ||delta||_2^2,

with ``FL_gamma = -(1 - p_y)^gamma log p_y`` the focal loss of
:func:`calibkit.losses.focal_loss` (``gamma = 0``: the negative log-likelihood). The SGD
passes use :func:`objective` (float32 torch); the exact temperature step and the default
``lam`` use :func:`focal_loss_np`, the same loss in float64 numpy (the penalty does not
depend on ``T``).

>>> z = torch.tensor([[2.0, 0.0], [0.0, 1.0]])
>>> round(float(objective(z, torch.tensor([0, 1]), torch.zeros(3), 0.0, 1.0)), 4)
0.2201
>>> round(focal_loss_np(z.double().numpy(), np.array([0, 1]), 0.0), 4)
0.2201
"""

from __future__ import annotations

import math

import numpy as np
import torch  # noqa: F401  (the doctests)
from torch import Tensor

from calibkit.losses import focal_loss

#: Range of the temperature searched by :func:`fit_focal_temperature`.
T_BOUNDS = (0.01, 100.0)
#: The default ``lam``: this fraction of the focal loss at the initial ``delta`` and T = 1.
LAM_FRACTION = 0.1


def objective(logits: Tensor, labels: Tensor, delta: Tensor, gamma: float, lam: float) -> Tensor:
    """Mean focal loss of ``logits`` (already divided by T) plus ``lam * ||delta||^2``.

    Parameters
    ----------
    logits : Tensor
        Calibrated logits ``f(x + delta) / T``, shape ``(N, K)``.
    labels : Tensor
        Class indices, int64 ``(N,)``.
    delta : Tensor
        The input perturbation (any shape).
    gamma : float
        The focal exponent, >= 0.
    lam : float
        Weight of the squared L2 norm of ``delta``.

    Returns
    -------
    Tensor
        A scalar, differentiable in ``logits`` and ``delta``.

    Examples
    --------
    >>> z = torch.zeros(2, 2)
    >>> round(float(objective(z, torch.tensor([0, 1]), torch.ones(2), 1.0, 0.5)), 4)
    1.3466
    """
    return focal_loss(logits, labels, gamma) + lam * delta.pow(2).sum()


def focal_loss_np(logits: np.ndarray, labels: np.ndarray, gamma: float) -> float:
    """Mean focal loss ``-(1 - p_y)^gamma log p_y`` of ``softmax(logits)`` in float64 numpy.

    Parameters
    ----------
    logits : np.ndarray
        Logits ``(N, K)``.
    labels : np.ndarray
        Class indices ``(N,)``.
    gamma : float
        The focal exponent, >= 0 (0: the mean negative log-likelihood).

    Returns
    -------
    float
        The mean loss.

    Examples
    --------
    >>> round(focal_loss_np(np.zeros((1, 2)), np.array([0]), 1.0), 4)  # 0.5 * log 2
    0.3466
    """
    from scipy.special import log_softmax  # lazy: scipy costs a quarter second at import

    logp = log_softmax(np.asarray(logits, dtype=np.float64), axis=1)
    lp = logp[np.arange(labels.shape[0]), labels]
    weight = np.maximum(-np.expm1(lp), 0.0) ** gamma if gamma else 1.0
    return float(-np.mean(weight * lp))


def default_lam(logits: np.ndarray, labels: np.ndarray, gamma: float) -> float:
    """``LAM_FRACTION`` times the focal loss of ``logits`` (the initial ``delta``, T = 1)."""
    return LAM_FRACTION * focal_loss_np(logits, labels, gamma)


def penalised_loss_np(
    logits: np.ndarray, labels: np.ndarray, delta: Tensor, gamma: float, lam: float
) -> float:
    """The objective in float64: focal loss of ``logits`` plus ``lam * ||delta||^2``."""
    return focal_loss_np(logits, labels, gamma) + lam * float(delta.double().pow(2).sum())


def fit_focal_temperature(logits: np.ndarray, labels: np.ndarray, gamma: float) -> float:
    """``log T`` minimising the mean focal loss of ``softmax(logits / T)`` (T in T_BOUNDS).

    A grid of 81 temperatures, log-spaced, picks the best bracket (the focal loss need not
    be unimodal in T for gamma > 0), then scipy's bounded Brent refines ``log T`` in it to
    ``1e-10``. With ``gamma = 0`` this is temperature scaling by NLL.

    Parameters
    ----------
    logits : np.ndarray
        Uncalibrated logits ``(N, K)``.
    labels : np.ndarray
        Class indices ``(N,)``.
    gamma : float
        The focal exponent, >= 0.

    Returns
    -------
    float
        ``log T``.

    Examples
    --------
    >>> z = np.array([[4.0, 0.0], [0.0, 4.0], [4.0, 0.0], [4.0, 0.0]])
    >>> fit_focal_temperature(z, np.array([0, 1, 1, 0]), 0.0) > 0  # overconfident: T > 1
    True
    """
    z = np.asarray(logits, dtype=np.float64)
    y = np.asarray(labels, dtype=np.int64)
    lo, hi = math.log(T_BOUNDS[0]), math.log(T_BOUNDS[1])
    grid = np.linspace(lo, hi, 81)
    values = [focal_loss_np(z / math.exp(g), y, gamma) for g in grid]
    i = int(np.argmin(values))
    a, b = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    from scipy.optimize import minimize_scalar  # lazy: scipy costs a quarter second at import

    res = minimize_scalar(
        lambda g: focal_loss_np(z / math.exp(g), y, gamma),
        bounds=(float(a), float(b)),
        method="bounded",
        options={"xatol": 1e-10},
    )
    return float(res.x) if res.fun <= values[i] else float(grid[i])
