"""Bias-corrected temperature scaling (BCTS): ``softmax(z / T + b)``, one ``T``, a bias per class.

Alexandari, Kundaje & Shrikumar (ICML 2020, "Maximum likelihood with bias-corrected
calibration is hard-to-beat at label shift adaptation") add a per-class bias to
temperature scaling: the bias corrects the systematic per-class offsets that temperature
scaling cannot, and that prior adaptation (EM on the calibrated posteriors, see
:mod:`calibkit.calibrators.priors.label_shift`) is sensitive to. It sits between temperature
scaling (``b = 0``) and vector scaling (a weight per class).

The NLL is convex in ``(beta, b)`` with ``beta = 1 / T`` (the scores ``beta z + b`` are
linear in them), so L-BFGS from ``beta = 1, b = 0`` reaches the optimum; ``beta`` is kept in
``[1 / t_max, 1 / t_min]``. The bias is stored centred (mean 0): softmax ignores a constant.
A calibration set without some class is refused, as for vector scaling (its bias would
go to minus infinity).

>>> rng = np.random.default_rng(0)
>>> z = rng.normal(size=(4000, 3)) * 2
>>> true = z / 2 + np.array([0.5, 0.0, -0.5])
>>> y = (rng.random(4000)[:, None] > np.cumsum(np.exp(log_softmax64(true)), 1)).sum(1)
>>> bcts = BiasCorrectedTemperatureScaling().fit(z, y)
>>> round(bcts.temperature_, 1), bool(np.allclose(bcts.bias_, [0.5, 0.0, -0.5], atol=0.1))
(2.0, True)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import numpy as np

from calibkit.calibrators.base import F64, MAX_COEFFICIENT, Calibrator
from calibkit.calibrators.logit.temperature import (
    T_MAX_DOC,
    T_MIN_DOC,
    TEMPERATURE,
    check_temperature_bounds,
    warn_at_bound,
)
from calibkit.core.fitted_state import Array
from calibkit.core.outputs import ClassifierOutputs, log_softmax64
from calibkit.core.params import param
from calibkit.core.validation import POSITIVE, Constraints, Integer

if TYPE_CHECKING:
    from calibkit.calibrators.modules import Affine


def _nll_grad(scores: F64, labels: np.ndarray, weights: F64 | None) -> tuple[float, F64]:
    """Mean (weighted) NLL of ``softmax(scores)`` and its gradient in ``scores``."""
    n = scores.shape[0]
    w = np.ones(n) if weights is None else weights
    logp = log_softmax64(scores)
    rows = np.arange(n)
    grad = np.exp(logp) * (w / n)[:, None]
    grad[rows, labels] -= w / n
    return float(-(w @ logp[rows, labels]) / n), grad


class BiasCorrectedTemperatureScaling(Calibrator):
    """BCTS: ``softmax(z / T + b)`` fitted by NLL (see the module docstring).

    Attributes
    ----------
    temperature_ : float
        The fitted ``T``.
    bias_ : ndarray of shape (n_classes,)
        The fitted ``b`` (mean 0).

    Examples
    --------
    {fit_example}

    >>> z = np.array([[2.0, 0.0], [0.0, 2.0], [2.0, 0.0], [0.0, 2.0], [1.0, 0.0]])
    >>> m = BiasCorrectedTemperatureScaling().fit(z, [0, 1, 0, 0, 1])
    >>> m.bias_.shape, abs(float(m.bias_.sum())) < 1e-12
    ((2,), True)
    """

    maps_logits = True
    accepts_sample_weight = True
    needs_every_class = True
    state_constraints: ClassVar[Constraints] = {
        "temperature_": TEMPERATURE,
        "bias_": Array(shape=("k",), low=-MAX_COEFFICIENT, high=MAX_COEFFICIENT),
    }
    t_min: float = param(default=0.05, check=POSITIVE, doc=T_MIN_DOC)
    t_max: float = param(default=20.0, check=POSITIVE, doc=T_MAX_DOC)
    max_iter: int = param(
        default=1000, check=Integer(1, 1_000_000), doc="L-BFGS iterations at most."
    )
    tol: float = param(
        default=1e-12, check=POSITIVE, doc="L-BFGS's relative tolerance on the objective."
    )

    def _check_params(self) -> None:
        check_temperature_bounds(self.t_min, self.t_max)

    def _fit(self, out: ClassifierOutputs, weights: F64 | None = None) -> None:
        from scipy.optimize import minimize  # lazy: scipy costs a quarter second at import

        z = np.asarray(out.as_logits(), dtype=np.float64)
        z = z - z.max(axis=1, keepdims=True)  # softmax ignores it; keeps the scores small
        y, k = out.labels, out.n_classes
        w = None if weights is None else weights * (z.shape[0] / weights.sum())
        # scale the variables by the square root of the diagonal curvature at the start
        p = np.exp(log_softmax64(z))
        var = p * (1.0 - p)
        curv = np.concatenate([[np.einsum("ij,ij->", var, z * z)], var.sum(axis=0)])
        curv /= z.shape[0]
        scale = 1.0 / np.sqrt(curv + 1e-6 * curv.mean() + 1e-12)

        def objective(u: F64) -> tuple[float, F64]:
            theta = u * scale
            loss, dz = _nll_grad(theta[0] * z + theta[1:], y, w)
            grad = np.concatenate([[np.einsum("ij,ij->", dz, z)], dz.sum(axis=0)])
            return loss, grad * scale

        bounds = [(1.0 / self.t_max / scale[0], 1.0 / self.t_min / scale[0])]
        start = np.zeros(k + 1)
        start[0] = np.clip(1.0, 1.0 / self.t_max, 1.0 / self.t_min) / scale[0]
        res = minimize(
            objective,
            start,
            jac=True,
            method="L-BFGS-B",
            bounds=bounds + [(None, None)] * k,
            options={"maxiter": self.max_iter, "maxcor": 20, "ftol": self.tol, "gtol": 1e-12},
        )
        theta = np.asarray(res.x, dtype=np.float64) * scale
        if float(res.fun) > objective(start)[0]:  # L-BFGS only goes down
            theta = start * scale
        beta = float(np.clip(theta[0], 1.0 / self.t_max, 1.0 / self.t_min))
        self.temperature_ = 1.0 / beta
        warn_at_bound(self.name, self.temperature_, self.t_min, self.t_max, stacklevel=3)
        bias = np.clip(theta[1:] - theta[1:].mean(), -MAX_COEFFICIENT, MAX_COEFFICIENT)
        self.bias_ = np.ascontiguousarray(bias - bias.mean())

    def _transform(self, logits: F64) -> F64:
        return np.asarray(logits * (1.0 / self.temperature_) + self.bias_)  # as the module

    def _module(self) -> Affine:
        from calibkit.calibrators.modules import Affine  # torch: only when exported

        return Affine(np.full(self.n_classes_, 1.0 / self.temperature_), self.bias_)
