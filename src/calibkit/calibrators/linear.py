"""Linear calibration maps ``x -> W x + b`` fitted by NLL: vector, matrix, MS-ODIR, Dirichlet.

The calibrated probabilities are ``softmax(W x + b)``, where ``x`` is the logit vector, or
for ``"dirichlet"`` the log-probabilities ``log_softmax(logits)``:

``"vector"`` (Guo et al. 2017)
    diagonal ``W``, no penalty.
``"matrix"`` (Guo et al. 2017)
    full ``W``; optional penalty ``reg_l2 * sum(W ** 2) / K ** 2`` (default 0).
``"ms_odir"`` and ``"dirichlet"`` (Kull et al. 2019, *Beyond temperature scaling*)
    full ``W`` with the off-diagonal and intercept regularisation (ODIR)
    ``lam * sum_{i != j} W_ij ** 2 / (K (K - 1)) + mu * sum_j b_j ** 2 / K``.
    ``"dirichlet"`` is Dir-ODIR (the map acts on log-probabilities). Unless ``reg_lambda``
    is given, ``lam`` is picked from ``lambda_grid`` by the held-out NLL of stratified,
    seeded k-fold cross-validation; ``mu = lam`` unless ``reg_mu`` is given.

The objective (mean NLL plus penalty) is minimised by L-BFGS with exact float64 gradients,
started at the identity map ``W = I, b = 0``; line searches only accept decreases, so no fit
ends above the identity's objective. Memory is O(N K) (plus O(K^3) only while
``(K+1)^2 <= 4 N``): the scores ``X W^T + b`` are the only (N, K) temporaries. For a full
``W`` the optimiser works on ``U`` with row ``j`` of ``[W | b]`` equal to
``start_j + u_j A_j``, where ``A_j`` is the inverse Cholesky factor of class ``j``'s
diagonal block of the Hessian at the identity plus the penalty's curvature (see
:func:`curvature`). This exact change of variables leaves the minimiser unchanged and cuts
the iterations about tenfold.

Cross-validation fits, in each fold, the grid from the strongest penalty down, each fit
warm-started at the previous one (or at the identity, whichever has the lower objective)
and stopped after ``cv_max_iter`` iterations: a few suffice to rank the grid (on the
CIFAR-10/100 predictions of nine networks, 5, 10 and 40 iterations chose the same value).
The final fit on the whole calibration set starts at the mean of the folds' solutions for
the chosen value (or at the identity) and runs to convergence (``tol``, ``max_iter``).

Fitting runs BLAS on one thread (on a busy two-core machine, two BLAS threads made a
CIFAR-100 fit ten times slower: every mid-sized product waits for both cores) and runs the
cross-validation folds in parallel threads instead, one per available core.

>>> rng = np.random.default_rng(0)
>>> z = rng.normal(size=(3000, 3)) * 2
>>> true = z @ np.array([[1.0, 0.5, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.5]]).T
>>> y = (rng.random(3000)[:, None] > np.cumsum(np.exp(log_softmax64(true)), 1)).sum(1)
>>> ms = MatrixScaling().fit(z, y)
>>> ms.weights_.shape, ms.bias_.shape
((3, 3), (3,))
>>> bool(np.abs(ms.predict_proba(z) - np.exp(log_softmax64(true))).mean() < 0.02)
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Self

import numpy as np
import numpy.typing as npt
from threadpoolctl import threadpool_limits

from calibkit.calibrators.base import CALIBRATORS, F64, MAX_COEFFICIENT, Calibrator
from calibkit.calibrators.linear_solver import (
    Design,
    Penalty,
    cross_validate,
    curvature,
    fit_diagonal,
    fit_path,
    identity_map,
    odir_coefficients,
)
from calibkit.calibrators.modules import Affine
from calibkit.core.fitted_state import Array
from calibkit.core.outputs import ClassifierOutputs, log_softmax64
from calibkit.core.validation import (
    NON_NEGATIVE,
    POSITIVE,
    SEED,
    Constraints,
    Integer,
    ListOf,
    NoneOr,
)

I64 = npt.NDArray[np.int64]
#: The default ODIR grid (that of the Neural Clamping paper): 1e-2, 1e-1, ..., 1e4.
DEFAULT_LAMBDA_GRID: tuple[float, ...] = tuple(float(v) for v in np.logspace(-2, 4, 7))


#: Shared parameter declarations (the optimiser's budget and the penalties).
MAX_ITER = Integer(1, 1_000_000)
TOL = POSITIVE
PENALTY = NON_NEGATIVE
#: The fitted map's shapes: a weight per class (vector scaling) or a full matrix, a bias.
PER_CLASS = Array(shape=("k",), low=-MAX_COEFFICIENT, high=MAX_COEFFICIENT)
FULL_MATRIX = Array(shape=("k", "k"), low=-MAX_COEFFICIENT, high=MAX_COEFFICIENT)


def usable_folds(n_folds: int, labels: I64) -> int:
    """The folds of a stratified cross-validation on ``labels``: ``n_folds``, or as many
    as the smallest class has rows when that is fewer (the data decides, it is not
    refused); 1 when a class has a single row: no cross-validation can be made, and the
    caller takes the strongest penalty of its grid (the map closest to its prior).

    >>> usable_folds(5, np.array([0, 0, 0, 1, 1, 1])), usable_folds(5, np.array([0, 1, 1]))
    (3, 1)
    """
    smallest = int(np.unique(labels, return_counts=True)[1].min())
    return max(1, min(n_folds, smallest))


# ----- calibrators -----------------------------------------------------------------------
class _Linear(Calibrator):
    """Shared parts: ``weights_`` and ``bias_`` applied to the features of the logits."""

    needs_every_class = True

    maps_logits = True
    accepts_sample_weight = True
    #: Whether the map acts on log-probabilities (Dirichlet) rather than logits.
    on_log_probs: ClassVar[bool] = False
    weights_: F64
    bias_: F64

    def fit(self, logits: object, labels: object, sample_weight: object = None) -> Self:
        """Fit with single-threaded BLAS (see the module docstring)."""
        with threadpool_limits(limits=1, user_api="blas"):
            return super().fit(logits, labels, sample_weight)

    def _features(self, logits: F64) -> F64:
        return log_softmax64(logits) if self.on_log_probs else np.asarray(logits, np.float64)

    def _design(self, out: ClassifierOutputs, weights: F64 | None = None) -> Design:
        return Design(self._features(np.asarray(out.as_logits())), out.labels, weights)

    def _transform(self, logits: F64) -> F64:
        x = self._features(logits)
        if self.weights_.ndim == 1:
            return np.asarray(x * self.weights_ + self.bias_)
        return np.asarray(x @ self.weights_.T + self.bias_)

    def _module(self) -> Affine:
        return Affine(self.weights_, self.bias_, self.on_log_probs)

    def _store(self, wb: F64) -> None:
        self.weights_ = np.ascontiguousarray(wb[:, :-1])
        self.bias_ = np.ascontiguousarray(wb[:, -1])


@CALIBRATORS.register("vector")
class VectorScaling(_Linear):
    """Vector scaling: ``softmax(w * z + b)`` with per-class ``w`` and ``b`` (no penalty).

    A calibration set without some class is refused (an InputError naming ``labels``
    and the class): this method fits each class from that class's own rows, so it would
    never predict a class it has not seen.

    Parameters
    ----------
    max_iter : int
        L-BFGS iterations at most.
    tol : float
        Convergence tolerance (> 0).

    Attributes
    ----------
    weights_, bias_ : ndarray of shape (n_classes,)
        The fitted ``w`` and ``b``.

    Examples
    --------
    >>> z = np.array([[2.0, 0.0], [0.0, 2.0], [2.0, 0.0], [0.0, 2.0], [1.0, 0.0]])
    >>> vs = VectorScaling().fit(z, [0, 1, 0, 0, 1])
    >>> vs.weights_.shape, vs.predict_proba(z).sum(axis=1).round(12).tolist()
    ((2,), [1.0, 1.0, 1.0, 1.0, 1.0])
    """

    param_constraints: ClassVar[Constraints] = {"max_iter": MAX_ITER, "tol": TOL}
    state_constraints: ClassVar[Constraints] = {"weights_": PER_CLASS, "bias_": PER_CLASS}
    max_iter: int
    tol: float

    def __init__(self, max_iter: int = 500, tol: float = 1e-12) -> None:
        self._set_params(max_iter=max_iter, tol=tol)

    def _fit(self, out: ClassifierOutputs, weights: F64 | None = None) -> None:
        design = self._design(out, weights)
        self.weights_, self.bias_ = fit_diagonal(design, self.max_iter, self.tol)


@CALIBRATORS.register("matrix")
class MatrixScaling(_Linear):
    """Matrix scaling: ``softmax(W z + b)``, full ``W``, penalty ``reg_l2 * sum(W**2) / K**2``.

    A calibration set without some class is refused (an InputError naming ``labels``
    and the class): this method fits each class from that class's own rows, so it would
    never predict a class it has not seen.

    Parameters
    ----------
    reg_l2 : float
        Weight of the L2 penalty on ``W`` (>= 0).
    max_iter, tol
        As for :class:`VectorScaling`.

    Attributes
    ----------
    weights_ : ndarray of shape (n_classes, n_classes)
    bias_ : ndarray of shape (n_classes,)

    Examples
    --------
    >>> MatrixScaling(reg_l2=0.1)
    MatrixScaling(reg_l2=0.1, max_iter=500, tol=1e-12)
    """

    param_constraints: ClassVar[Constraints] = {"reg_l2": PENALTY, "max_iter": MAX_ITER, "tol": TOL}
    state_constraints: ClassVar[Constraints] = {"weights_": FULL_MATRIX, "bias_": PER_CLASS}
    reg_l2: float
    max_iter: int
    tol: float

    def __init__(self, reg_l2: float = 0.0, max_iter: int = 500, tol: float = 1e-12) -> None:
        self._set_params(reg_l2=reg_l2, max_iter=max_iter, tol=tol)

    def _fit(self, out: ClassifierOutputs, weights: F64 | None = None) -> None:
        design = self._design(out, weights)
        k = design.n_classes
        coef = np.zeros((k, k + 1))
        coef[:, :k] = self.reg_l2 / k**2
        pen = Penalty.make(coef, curvature(design))
        self._store(fit_path(design, [pen], self.max_iter, self.tol)[0])


class _ODIR(_Linear):
    """Full ``W`` with the ODIR penalty; ``lam`` by cross-validation over ``lambda_grid``.

    With ``reg_lambda`` given, or a one-value grid, there is no cross-validation (and
    ``cv_lambdas_``, ``cv_nll_`` are empty). Fitted: ``weights_`` (K, K), ``bias_`` (K,),
    ``reg_lambda_``, ``reg_mu_``, ``cv_lambdas_`` (ascending) and their ``cv_nll_``.
    """

    param_constraints: ClassVar[Constraints] = {
        "reg_lambda": NoneOr(PENALTY),
        "reg_mu": NoneOr(PENALTY),
        "lambda_grid": ListOf(PENALTY),
        "n_folds": Integer(2, 100),
        "random_state": SEED,
        "max_iter": MAX_ITER,
        "cv_max_iter": MAX_ITER,
        "tol": TOL,
    }
    #: ``g``: the cross-validated values of ``lam`` (none without cross-validation).
    state_constraints: ClassVar[Constraints] = {
        "cv_lambdas_": Array(shape=("g",), low=0.0, sorted=True),
        "cv_nll_": Array(shape=("g",), low=0.0),
        "weights_": FULL_MATRIX,
        "bias_": PER_CLASS,
        "reg_lambda_": PENALTY,
        "reg_mu_": PENALTY,
    }
    reg_lambda: float | None
    reg_mu: float | None
    lambda_grid: tuple[float, ...]
    n_folds: int
    random_state: int
    max_iter: int
    cv_max_iter: int
    tol: float

    def __init__(
        self,
        reg_lambda: float | None = None,
        reg_mu: float | None = None,
        lambda_grid: Sequence[float] = DEFAULT_LAMBDA_GRID,
        n_folds: int = 5,
        random_state: int = 0,
        max_iter: int = 500,
        cv_max_iter: int = 10,
        tol: float = 1e-12,
    ) -> None:
        self._set_params(
            reg_lambda=reg_lambda,
            reg_mu=reg_mu,
            lambda_grid=lambda_grid,
            n_folds=n_folds,
            random_state=random_state,
            max_iter=max_iter,
            cv_max_iter=cv_max_iter,
            tol=tol,
        )

    def _fit(self, out: ClassifierOutputs, weights: F64 | None = None) -> None:
        design = self._design(out, weights)
        k = design.n_classes
        lambdas = np.unique(self.lambda_grid)[::-1]  # strongest penalty first
        if self.reg_lambda is not None:
            lambdas = np.array([self.reg_lambda])
        mus = lambdas if self.reg_mu is None else np.full_like(lambdas, self.reg_mu)
        curv = curvature(design)
        coefs = [odir_coefficients(k, lam, mu) for lam, mu in zip(lambdas, mus, strict=True)]
        pens = [Penalty.make(coef, curv) for coef in coefs]
        self.cv_lambdas_, self.cv_nll_ = np.empty(0), np.empty(0)
        best, start = 0, identity_map(k)
        folds = usable_folds(self.n_folds, out.labels)
        if lambdas.size > 1 and folds > 1:
            budget = (folds, self.random_state, self.cv_max_iter, self.tol)
            scores, means = cross_validate(design, pens, *budget)
            best = int(np.argmin(scores))  # first minimum: the strongest penalty among ties
            self.cv_lambdas_, self.cv_nll_ = lambdas[::-1].copy(), scores[::-1].copy()
            start = means[best]  # fit_path falls back to the identity if that is better
        path = fit_path(design, [pens[best]], self.max_iter, self.tol, start)
        self._store(path[0])
        self.reg_lambda_, self.reg_mu_ = float(lambdas[best]), float(mus[best])


@CALIBRATORS.register("ms_odir")
class MatrixScalingODIR(_ODIR):
    """Matrix scaling on logits with ODIR; ``lam`` by cross-validation unless given.

    A calibration set without some class is refused (an InputError naming ``labels``
    and the class): this method fits each class from that class's own rows, so it would
    never predict a class it has not seen.

    Parameters
    ----------
    reg_lambda, reg_mu : float or None
        The ODIR weights ``lam`` and ``mu`` (>= 0); ``None``: ``lam`` by cross-validation
        over ``lambda_grid``, ``mu = lam``.
    lambda_grid : sequence of float
        Candidate values of ``lam`` (>= 0).
    n_folds : int
        Stratified cross-validation folds (>= 2), shuffled with ``random_state``.
    max_iter, cv_max_iter : int
        L-BFGS iterations of the final fit and of each cross-validation fit.
    tol : float
        Convergence tolerance (> 0).

    Examples
    --------
    >>> MatrixScalingODIR(reg_lambda=1.0).get_params()["reg_mu"] is None
    True
    """


@CALIBRATORS.register("dirichlet")
class DirichletCalibration(_ODIR):
    """Dirichlet calibration (Dir-ODIR): the ODIR linear map on log-probabilities.

    A calibration set without some class is refused (an InputError naming ``labels``
    and the class): this method fits each class from that class's own rows, so it would
    never predict a class it has not seen.

    Parameters
    ----------
    reg_lambda, reg_mu, lambda_grid, n_folds, random_state, max_iter, cv_max_iter, tol
        As for :class:`MatrixScalingODIR`.

    Examples
    --------
    >>> DirichletCalibration(lambda_grid=[0.1, 1.0]).lambda_grid
    (0.1, 1.0)
    """

    on_log_probs = True
