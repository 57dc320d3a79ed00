"""Structured matrix and vector scaling (Berta, Holzmüller, Jordan & Bach, AISTATS 2026).

Both are linear maps fitted by penalised NLL on the log-probabilities of smoothed
temperature scaling (:mod:`calibkit.calibrators.logit.temperature_smoothed`):

1. fit ``T`` by NLL and set ``eps`` (default ``1 / (n + 1)``);
2. features ``x = log((1 - eps) softmax(z / T) + eps / K)``, every entry at least
   ``log(eps / K)`` (no feature is near ``-inf``, which is what makes a full ``W`` on
   probability-only files stable);
3. fit ``softmax(W x + b)`` from the identity by L-BFGS (the solver of
   :mod:`calibkit.calibrators.logit.linear_solver`), minimising the mean NLL plus a ridge
   penalty that pulls the map towards the identity, one weight per structure:

   ``a_b * sum_j b_j ** 2 + a_d * sum_j (W_jj - 1) ** 2 + a_o * sum_{i != j} W_ij ** 2``,

   with ``a_b = reg_intercept * K / n``, ``a_d = reg_diagonal * K / n`` and
   ``a_o = reg_off_diagonal * K (K - 1) / n`` (``n`` rows, or their total weight).

``"sms"`` (structured matrix scaling) fits all of ``W``; ``"svs"`` (structured vector
scaling) only its diagonal. The weights grow with the number of parameters of each
structure and shrink with ``n``: the ``K (K - 1)`` off-diagonal entries are held close to 0
unless the data insist, unlike ODIR's ``lam / (K (K - 1))`` per entry
(:mod:`calibkit.calibrators.logit.linear`), which needs a cross-validated ``lam``. All
weights 0 with ``smoothing=0`` is plain matrix (vector) scaling of the temperature-scaled
log-probabilities; very large weights give smoothed temperature scaling.

The probmetrics package implements the same objective (ridge penalty, ``rho = tau = 1``,
its default) with a BFGS solver in torch; ``benchmarks/bench_linear.py`` compares the two.

>>> rng = np.random.default_rng(0)
>>> z = rng.normal(size=(2000, 4)) * 3
>>> p = np.exp(z / 2) / np.exp(z / 2).sum(axis=1, keepdims=True)
>>> y = (rng.random(2000)[:, None] > np.cumsum(p, axis=1)).sum(axis=1)
>>> sms = StructuredMatrixScaling().fit(z, y)
>>> bool(1.8 < sms.temperature_ < 2.2), sms.weights_.shape
(True, (4, 4))
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from calibkit.calibrators.base import F64
from calibkit.calibrators.logit.linear import (
    CV_MAX_ITER_DOC,
    FULL_MATRIX,
    LINEAR_DEVICE,
    LINEAR_DEVICE_DOC,
    MAX_ITER,
    MAX_ITER_DOC,
    N_FOLDS,
    N_FOLDS_DOC,
    PENALTY,
    PER_CLASS,
    SEED_DOC,
    TOL,
    TOL_DOC,
    _Linear,
    usable_folds,
)
from calibkit.calibrators.logit.linear_solver import (
    Penalty,
    cross_validate,
    curvature,
    fit_diagonal,
    fit_path,
    identity_map,
)
from calibkit.calibrators.logit.temperature import (
    T_MAX_DOC,
    T_MIN_DOC,
    check_log_temperature,
    check_temperature_bounds,
    nll_inverse_temperature,
)
from calibkit.calibrators.logit.temperature_smoothed import (
    SMOOTHED_STATE,
    SMOOTHING,
    SMOOTHING_DOC,
    default_smoothing,
    smoothed_log_probs,
)
from calibkit.core.fitted_state import Array
from calibkit.core.outputs import ClassifierOutputs
from calibkit.core.params import param
from calibkit.core.validation import POSITIVE, SEED, Constraints, ListOf

if TYPE_CHECKING:
    from calibkit.calibrators.modules import SmoothedAffine


def structured_coefficients(
    k: int, n: float, reg_intercept: float, reg_diagonal: float, reg_off_diagonal: float
) -> F64:
    """The per-entry penalty weights on ``[W | b]`` (a (K, K+1) array), as the module says.

    >>> structured_coefficients(2, 4.0, 1.0, 2.0, 3.0).tolist()
    [[1.0, 1.5, 0.5], [1.5, 1.0, 0.5]]
    """
    coef = np.full((k, k + 1), reg_off_diagonal * k * (k - 1) / n)
    coef[np.arange(k), np.arange(k)] = reg_diagonal * k / n
    coef[:, k] = reg_intercept * k / n
    return coef


#: A cross-validation: the grid of scales, the folds, the seed and the iterations per fit.
CrossValidation = tuple[Sequence[float], int, int, int]


class _Structured(_Linear):
    """Shared parts: the smoothed temperature stage, the features and the parameters."""

    #: The map acts on (smoothed) log-probabilities: logits and probabilities alike.
    shift_invariant = True
    reg_intercept: float = param(
        default=1.0,
        check=PENALTY,
        doc="Penalty weight of the intercepts, times ``K / n`` (see the module docstring).",
    )
    reg_diagonal: float = param(
        default=1.0,
        check=PENALTY,
        doc="Penalty weight of ``W``'s diagonal, times ``K / n`` (see the module docstring).",
    )
    reg_off_diagonal: float = param(
        default=1.0,
        check=PENALTY,
        doc="Penalty weight of ``W``'s off-diagonal, times ``K (K - 1) / n`` (see the module "
        "docstring); structured vector scaling (diagonal ``W``) takes and ignores it.",
    )
    smoothing: float | None = param(default=None, check=SMOOTHING, doc=SMOOTHING_DOC)
    t_min: float = param(default=0.1, check=POSITIVE, doc=T_MIN_DOC)
    t_max: float = param(default=10.0, check=POSITIVE, doc=T_MAX_DOC)
    max_iter: int = param(default=500, check=MAX_ITER, doc=MAX_ITER_DOC)
    tol: float = param(default=1e-12, check=TOL, doc=TOL_DOC)
    device: str | None = param(default=None, check=LINEAR_DEVICE, doc=LINEAR_DEVICE_DOC)

    def _check_params(self) -> None:
        check_temperature_bounds(self.t_min, self.t_max)

    def _features(self, logits: F64) -> F64:
        return smoothed_log_probs(logits, self.temperature_, self.smoothing_)

    def _fit_temperature(self, out: ClassifierOutputs, weights: F64 | None) -> float:
        """Fit ``T`` and ``eps`` (stored); the number (or total weight) of rows."""
        b = nll_inverse_temperature(out, weights, self.t_min, self.t_max)
        self.log_temperature_ = -math.log(b)
        self.temperature_ = 1.0 / b
        n = out.labels.shape[0]
        eps = self.smoothing
        self.smoothing_ = default_smoothing(n, weights) if eps is None else eps
        return float(n if weights is None else weights.sum())

    def _coefficients(self, k: int, n: float) -> F64:
        regs = (self.reg_intercept, self.reg_diagonal, self.reg_off_diagonal)
        return structured_coefficients(k, n, *regs)

    def _check_state(self) -> None:
        check_log_temperature(self.log_temperature_, self.temperature_, self.t_min, self.t_max)

    def _module(self) -> SmoothedAffine:
        from calibkit.calibrators.modules import SmoothedAffine  # torch: only when exported

        return SmoothedAffine(self.weights_, self.bias_, self.temperature_, self.smoothing_)


class StructuredVectorScaling(_Structured):
    """Structured vector scaling: diagonal ``W`` on smoothed TS log-probabilities.

    {refuses_absent_class}

    Attributes
    ----------
    temperature_, log_temperature_, smoothing_ : float
        The temperature stage.
    weights_, bias_ : ndarray of shape (n_classes,)

    Examples
    --------
    {fit_example}

    >>> StructuredVectorScaling(reg_diagonal=10.0).reg_diagonal
    10.0
    """

    state_constraints: ClassVar[Constraints] = {
        **SMOOTHED_STATE,
        "weights_": PER_CLASS,
        "bias_": PER_CLASS,
    }

    def _fit(self, out: ClassifierOutputs, weights: F64 | None = None) -> None:
        n = self._fit_temperature(out, weights)
        design = self._design(out, weights)
        k = design.n_classes
        coef = self._coefficients(k, n)
        diag = np.concatenate([coef[np.arange(k), np.arange(k)], coef[:, k]])
        self.weights_, self.bias_ = fit_diagonal(design, self.max_iter, self.tol, diag)


class StructuredMatrixScaling(_Structured):
    """Structured matrix scaling: full ``W`` on smoothed TS log-probabilities.

    {refuses_absent_class}

    Attributes
    ----------
    temperature_, log_temperature_, smoothing_ : float
        The temperature stage.
    weights_ : ndarray of shape (n_classes, n_classes)
    bias_ : ndarray of shape (n_classes,)

    Examples
    --------
    {fit_example}

    >>> StructuredMatrixScaling(reg_off_diagonal=0.1).get_params()["reg_off_diagonal"]
    0.1
    """

    state_constraints: ClassVar[Constraints] = {
        **SMOOTHED_STATE,
        "weights_": FULL_MATRIX,
        "bias_": PER_CLASS,
    }

    def _fit(self, out: ClassifierOutputs, weights: F64 | None = None) -> None:
        self._fit_scaled(out, weights, None)

    def _fit_scaled(
        self, out: ClassifierOutputs, weights: F64 | None, cv: CrossValidation | None
    ) -> None:
        """Fit with the weights times the scale chosen by cross-validation ``cv`` (``None``:
        times 1, nothing more stored)."""
        n = self._fit_temperature(out, weights)
        design = self._design(out, weights)
        k = design.n_classes
        # the smoothed features make most rows count: a coarser floor halves the cost of the
        # preconditioner for the same number of iterations (CIFAR-100: 17 -> 18)
        coef, curv, eye = self._coefficients(k, n), curvature(design, 1e-2), identity_map(k)
        scales = np.array([1.0]) if cv is None else np.unique(cv[0])[::-1]
        pens = [Penalty.make(coef * s, curv, eye) for s in scales]
        best, start, grid = 0, None, (np.empty(0), np.empty(0))
        folds = 1 if cv is None else usable_folds(cv[1], out.labels)
        if cv is not None and scales.size > 1 and folds > 1:
            nll, means = cross_validate(design, pens, folds, cv[2], cv[3], self.tol)
            best = int(np.argmin(nll))  # first minimum: the strongest penalty among ties
            grid, start = (scales[::-1].copy(), nll[::-1].copy()), means[best]
        if cv is not None:
            self.cv_scales_, self.cv_nll_ = grid
        self._store(fit_path(design, [pens[best]], self.max_iter, self.tol, start)[0])
        if cv is not None:
            self.reg_scale_ = float(scales[best])


#: The default grid of ``"sms_cv"``'s penalty scales.
DEFAULT_SCALE_GRID: tuple[float, ...] = (0.003, 0.01, 0.03, 0.1, 0.3, 1.0)


class StructuredMatrixScalingCV(StructuredMatrixScaling):
    """:class:`StructuredMatrixScaling` with all three penalty weights times a scale ``s``
    chosen by cross-validation.

    {refuses_absent_class}

    On the nine shared prediction files the best fixed scale was 0.01 for CIFAR-100
    (K = 100) and 0.1 for CIFAR-10: no single value suits both.

    The scale is cross-validated as
    :class:`~calibkit.calibrators.logit.linear.MatrixScalingODIR`'s ``lam`` is; the
    temperature stage and ``n`` are those of the whole calibration set.

    Attributes
    ----------
    temperature_, log_temperature_, smoothing_ : float
        The temperature stage.
    cv_scales_, cv_nll_ : ndarray of shape (n_scales,)
        The cross-validated scales (ascending) and their held-out NLL (empty for a
        one-value grid).
    weights_, bias_ : ndarray
        As for :class:`StructuredMatrixScaling`.
    reg_scale_ : float
        The chosen scale ``s``.

    Examples
    --------
    {fit_example}

    >>> StructuredMatrixScalingCV().scale_grid
    (0.003, 0.01, 0.03, 0.1, 0.3, 1.0)
    """

    state_constraints: ClassVar[Constraints] = {
        **SMOOTHED_STATE,
        "cv_scales_": Array(shape=("g",), low=0.0, sorted=True),
        "cv_nll_": Array(shape=("g",), low=0.0),
        "weights_": FULL_MATRIX,
        "bias_": PER_CLASS,
        "reg_scale_": POSITIVE,
    }
    scale_grid: Sequence[float] = param(
        default=DEFAULT_SCALE_GRID,
        check=ListOf(POSITIVE),
        doc="Candidate scales ``s`` of all three penalty weights.",
    )
    n_folds: int = param(default=5, check=N_FOLDS, doc=N_FOLDS_DOC)
    seed: int = param(default=0, check=SEED, doc=SEED_DOC)
    cv_max_iter: int = param(default=10, check=MAX_ITER, doc=CV_MAX_ITER_DOC)

    def _fit(self, out: ClassifierOutputs, weights: F64 | None = None) -> None:
        cv = (self.scale_grid, self.n_folds, self.seed, self.cv_max_iter)
        self._fit_scaled(out, weights, cv)
