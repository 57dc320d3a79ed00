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

**Shrinkage towards temperature scaling** (``shrink="temperature"``, the default of all
four): fitted on a few hundred samples the published methods can make a model far worse
than temperature scaling (TS) (on nine CIFAR networks at 300 samples: matrix scaling up to
277x TS's test NLL, MS-ODIR up to 2.1x; docs/selection.md). With shrinkage every penalty
is measured from the TS map ``[I / T | 0]`` (``T`` fitted by NLL on the same data; for
``"dirichlet"`` on the log-probabilities, the same ``T`` since softmax is shift-invariant)
instead of from the identity, the diagonal of ``W`` included:

- ``"ms_odir"``, ``"dirichlet"``: ``lam * sum_{i,j} (W - I / T)_ij ** 2 / (K (K - 1)) +
  mu * sum_j b_j ** 2 / K``, one grid: ``lambda_grid`` plus :data:`TS_STRENGTH`;
- ``"matrix"``: the same with ``lam = mu = s`` (``reg_l2`` too measures ``W - I / T``);
- ``"vector"``: ``s * (sum_j (w_j - 1 / T) ** 2 + sum_j b_j ** 2) / K``;

**Matrix scaling and MS-ODIR are then one problem.** With ``reg_l2 = 0`` and ``mu = lam``
(the defaults), ``"matrix"`` at strength ``s`` and ``"ms_odir"`` at ``lam = s`` minimise
the same strictly convex objective. Their grids share 0.01 ... 1e4 and :data:`TS_STRENGTH`
(matrix's also holds 0 and 1e6) and their cross-validations use the same seeded folds, so
they usually choose the same value, and then fit the same map to the optimiser's tolerance
(1e-15 on the CIFAR-10 networks' predictions). ``"dirichlet"`` on probabilities is
``"ms_odir"`` too (its log-probabilities are the inputs). A comparison marks such rows and
says why (``calibkit.workflows.methods.same_fit``); to compare matrix scaling as published,
pass ``shrink="none"``.

``s`` (or ``lam``) from a grid whose strongest end, :data:`TS_STRENGTH`, gives the TS map to
about ``1e-8`` per entry and whose 0 (vector, matrix) gives the unpenalised fit, chosen by
the same seeded, stratified k-fold cross-validation as ODIR's (each fold's penalty centred
at the TS map fitted on that fold's training part; fewer folds when a class has fewer
rows; a class of one row takes the strongest end). Fits start at the TS map. The chosen
strength, the cross-validation curve and ``centre_temperature_`` (``T``; 1 without
shrinkage) are in the fitted state. ``shrink="none"`` is the published method.

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
Vector scaling's path is warm-started the same way (each strength from the previous
solution), each class's ``(w_j, b_j)`` whitened by its 2 x 2 Hessian block, and its
passes read the features in cache-sized row chunks; its unshrunk fit starts at the TS map.

**One temperature-scaling fit per set.** Each fit fits ``T`` once on the whole set and
once on each fold's training part, and passes it to the steps that centre on it (the TS
map, the penalty's centre, the curvature); a TS fit is cheap beside the maps' own
(``benchmarks/README.md``).

**On a GPU.** ``device`` (a torch device: ``"cuda"``, ``"cuda:N"``, ``"cpu"``, ``"auto"``)
moves each objective evaluation's products to it, in float64, and a full map's L-BFGS too
(:mod:`~calibkit.calibrators.logit.linear_device`); the diagonal fits' L-BFGS, the
preconditioners and the search stay on the CPU. The fitted map is the numpy path's to the
optimiser's tolerance. ``None`` (the default) is numpy on the CPU.

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
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import numpy.typing as npt
from threadpoolctl import threadpool_limits

from calibkit.calibrators.base import F64, MAX_COEFFICIENT, Calibrator
from calibkit.calibrators.logit.linear_solver import (
    Design,
    Penalty,
    cross_validate,
    curvature,
    diagonal_path,
    fit_diagonal,
    fit_path,
    identity_map,
    odir_coefficients,
    shrunk_path,
    temperature_map,
)
from calibkit.calibrators.logit.temperature import nll_inverse_temperature
from calibkit.core.fitted_state import Array
from calibkit.core.outputs import ClassifierOutputs, log_softmax64
from calibkit.core.params import param
from calibkit.core.validation import (
    DEVICE,
    NON_NEGATIVE,
    POSITIVE,
    SEED,
    Choice,
    Constraints,
    Integer,
    ListOf,
    NoneOr,
)

if TYPE_CHECKING:
    import torch

    from calibkit.calibrators.modules import Affine

I64 = npt.NDArray[np.int64]
#: The default ODIR grid (that of the Neural Clamping paper): 1e-2, 1e-1, ..., 1e4.
DEFAULT_LAMBDA_GRID: tuple[float, ...] = tuple(float(v) for v in np.logspace(-2, 4, 7))


#: The strongest shrinkage: the fitted map is the temperature-scaling map to about
#: ``1e-8`` per entry (the NLL's gradient over this weight times ``K ** 2``).
TS_STRENGTH = 1e12
#: The default strengths of vector and matrix scaling's shrinkage (0: no penalty).
DEFAULT_SHRINK_GRID: tuple[float, ...] = (
    0.0,
    0.01,
    0.1,
    1.0,
    10.0,
    100.0,
    1e3,
    1e4,
    1e6,
    TS_STRENGTH,
)


#: Shared parameter checks (the optimiser's budget and the penalties) and what they mean.
MAX_ITER = Integer(1, 1_000_000)
MAX_ITER_DOC = "L-BFGS iterations at most."
TOL = POSITIVE
TOL_DOC = "The convergence tolerance of L-BFGS."
PENALTY = NON_NEGATIVE
SHRINK = Choice("temperature", "none")
SHRINK_DOC = (
    "``'temperature'``: penalise the distance from temperature scaling's map; ``'none'``: "
    "the published method (no such penalty)."
)
#: The parameters of a cross-validated strength (as ODIR's).
N_FOLDS = Integer(2, 100)
N_FOLDS_DOC = "Folds of the stratified cross-validation (fewer when a class has fewer rows)."
SEED_DOC = "Seed of the cross-validation's shuffled folds."
CV_MAX_ITER_DOC = "L-BFGS iterations at most of each cross-validation fit."
#: Where a fit's products run (see the module docstring, "On a GPU").
LINEAR_DEVICE = NoneOr(DEVICE)
LINEAR_DEVICE_DOC = (
    "The torch device the fit's products run on, in float64 (``'cuda'``, ``'cuda:N'``, "
    "``'auto'``: CUDA when this machine has it; ``'cpu'``: torch on the CPU, slower there "
    "than numpy); ``None``: numpy on the CPU. The fitted map is the same to the "
    "optimiser's tolerance."
)
#: The fitted map's temperature centre: ``T`` of the temperature-scaling map the penalty
#: pulls towards (1 without shrinkage: the identity).
CENTRE_TEMPERATURE = POSITIVE
#: A cross-validation curve: ``g`` strengths (ascending) and their held-out NLL.
CV_GRID = Array(shape=("g",), low=0.0, sorted=True)
CV_NLL = Array(shape=("g",), low=0.0)
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
    #: ``W x + b`` of the raw logits changes with a constant added to a row (unless ``W``'s
    #: rows sum alike), so the fit records whether its caller declared logits or
    #: probabilities (``input_kind_``; see
    #: :attr:`~calibkit.calibrators.fitted.PostHoc.shift_invariant`).
    shift_invariant: ClassVar[bool] = False

    def _fitting(self) -> AbstractContextManager[object]:
        """Single-threaded BLAS (see the module docstring)."""
        return threadpool_limits(limits=1, user_api="blas")  # type: ignore[no-any-return]

    def _features(self, logits: F64) -> F64:
        return log_softmax64(logits) if self.on_log_probs else np.asarray(logits, np.float64)

    @staticmethod
    def _ts_inverse_temperature(out: ClassifierOutputs, weights: F64 | None) -> float:
        """``1 / T`` of temperature scaling on ``out`` (T in [0.1, 10]; on log-probabilities,
        Dirichlet's features, it is the same ``T``)."""
        return nll_inverse_temperature(out, weights, 0.1, 10.0)

    def _design(self, out: ClassifierOutputs, weights: F64 | None = None) -> Design:
        x = self._features(np.asarray(out.as_logits()))
        return Design(x, out.labels, weights, self._torch_device())

    def _torch_device(self) -> torch.device | None:
        """The declared ``device``, checked against this machine (``None``: numpy)."""
        name = getattr(self, "device", None)
        if name is None:
            return None
        from calibkit.core.devices import resolve_device  # imports torch

        return resolve_device(name)

    def _transform(self, logits: F64) -> F64:
        x = self._features(logits)
        if self.weights_.ndim == 1:
            return np.asarray(x * self.weights_ + self.bias_)
        return np.asarray(x @ self.weights_.T + self.bias_)

    def _module(self) -> Affine:
        from calibkit.calibrators.modules import Affine  # torch: only when exported

        return Affine(self.weights_, self.bias_, self.on_log_probs)

    def _store(self, wb: F64) -> None:
        self.weights_ = np.ascontiguousarray(wb[:, :-1])
        self.bias_ = np.ascontiguousarray(wb[:, -1])


#: The fitted state of vector and matrix scaling besides the map: the cross-validation
#: curve of the shrinkage (empty without one), ``T`` of its centre and the chosen strength.
SHRINK_STATE: Constraints = {
    "cv_strengths_": CV_GRID,
    "cv_nll_": CV_NLL,
    "centre_temperature_": CENTRE_TEMPERATURE,
    "shrink_strength_": NON_NEGATIVE,
}


class _ShrunkScaling(_Linear):
    """Vector or matrix scaling, by default shrunk towards temperature scaling (the
    strength ``s`` from ``shrink_grid`` by cross-validation: see the module docstring)."""

    state_constraints: ClassVar[Constraints] = SHRINK_STATE
    shrink: str = param(default="temperature", check=SHRINK, doc=SHRINK_DOC)
    shrink_grid: Sequence[float] = param(
        default=DEFAULT_SHRINK_GRID, check=ListOf(PENALTY), doc="Candidate strengths ``s``."
    )
    n_folds: int = param(default=5, check=N_FOLDS, doc=N_FOLDS_DOC)
    seed: int = param(default=0, check=SEED, doc=SEED_DOC)
    cv_max_iter: int = param(default=50, check=MAX_ITER, doc=CV_MAX_ITER_DOC)
    max_iter: int = param(default=500, check=MAX_ITER, doc=MAX_ITER_DOC)
    tol: float = param(default=1e-12, check=TOL, doc=TOL_DOC)
    device: str | None = param(default=None, check=LINEAR_DEVICE, doc=LINEAR_DEVICE_DOC)

    def _store_unshrunk(self) -> None:
        self.cv_strengths_, self.cv_nll_ = np.empty(0), np.empty(0)
        self.centre_temperature_, self.shrink_strength_ = 1.0, 0.0

    def _choose(
        self, design: Design, labels: I64, pens: Sequence[Any], path: Any
    ) -> tuple[int, F64 | None]:
        """The index of the chosen penalty (strongest first) and the folds' mean solution
        for it (``None`` without cross-validation); stores the curve."""
        strengths = np.unique(self.shrink_grid)[::-1]
        self.cv_strengths_, self.cv_nll_ = np.empty(0), np.empty(0)
        folds = usable_folds(self.n_folds, labels)
        if strengths.size < 2 or folds < 2:
            return 0, None
        budget = (folds, self.seed, self.cv_max_iter, self.tol)
        scores, means = cross_validate(design, pens, *budget, path=path)
        best = int(np.argmin(scores))  # first minimum: the strongest penalty among ties
        self.cv_strengths_, self.cv_nll_ = strengths[::-1].copy(), scores[::-1].copy()
        return best, means[best]


class VectorScaling(_ShrunkScaling):
    """Vector scaling: ``softmax(w * z + b)`` with per-class ``w`` and ``b``.

    By default shrunk towards temperature scaling (the weight ``s / K`` on each squared
    ``w_j - 1 / T`` and ``b_j``, ``s`` by cross-validation).

    {refuses_absent_class}

    Attributes
    ----------
    weights_, bias_ : ndarray of shape (n_classes,)
        The fitted ``w`` and ``b``.
    centre_temperature_ : float
        ``T`` of the TS map the penalty pulls towards (1 with ``shrink="none"``).
    shrink_strength_ : float
        The chosen ``s`` (0 with ``shrink="none"``).
    cv_strengths_, cv_nll_ : ndarray of shape (n_strengths,)
        The cross-validated strengths (ascending) and their held-out NLL (empty without
        cross-validation).

    Examples
    --------
    >>> z = np.array([[2.0, 0.0], [0.0, 2.0], [2.0, 0.0], [0.0, 2.0], [1.0, 0.0]])
    >>> vs = VectorScaling().fit(z, [0, 1, 0, 0, 1])
    >>> vs.weights_.shape, vs.predict_proba(z).sum(axis=1).round(12).tolist()
    ((2,), [1.0, 1.0, 1.0, 1.0, 1.0])
    >>> vs.shrink_strength_ == TS_STRENGTH  # a class of two rows: no cross-validation
    True
    """

    state_constraints: ClassVar[Constraints] = {
        **SHRINK_STATE,
        "weights_": PER_CLASS,
        "bias_": PER_CLASS,
    }

    def _fit(self, out: ClassifierOutputs, weights: F64 | None = None) -> None:
        design = self._design(out, weights)
        k = design.n_classes
        c = self._ts_inverse_temperature(out, weights)
        ts_map = np.concatenate([np.full(k, c), np.zeros(k)])
        if self.shrink == "none":  # from the TS map: the same optimum, fewer iterations
            self._store_unshrunk()
            fit = fit_diagonal(design, self.max_iter, self.tol, start=ts_map)
            self.weights_, self.bias_ = fit
            return
        strengths = np.unique(self.shrink_grid)[::-1]
        best, _ = self._choose(design, out.labels, list(strengths), diagonal_path)
        self.centre_temperature_, self.shrink_strength_ = 1.0 / c, float(strengths[best])
        coef = np.full(2 * k, strengths[best] / k)
        self.weights_, self.bias_ = fit_diagonal(design, self.max_iter, self.tol, coef, c)


class MatrixScaling(_ShrunkScaling):
    """Matrix scaling: ``softmax(W z + b)``, full ``W``, by default shrunk towards
    temperature scaling; optional penalty ``reg_l2 * sum(W**2) / K**2``.

    With ``shrink="temperature"`` the penalty is ``s`` times ODIR's weights on every
    entry (``s * sum((W - I / T) ** 2) / (K (K - 1)) + s * sum(b ** 2) / K``), ``s`` by
    cross-validation, and ``reg_l2`` too measures ``W - I / T``; with ``shrink="none"``
    it is the published method (``reg_l2`` on ``W`` itself, default 0). That penalty is
    :class:`MatrixScalingODIR`'s at ``lam = mu = s`` (see the module docstring).

    {refuses_absent_class}

    Attributes
    ----------
    weights_ : ndarray of shape (n_classes, n_classes)
    bias_ : ndarray of shape (n_classes,)
    centre_temperature_, shrink_strength_, cv_strengths_, cv_nll_
        As for :class:`VectorScaling`.

    Examples
    --------
    {fit_example}

    >>> MatrixScaling(shrink="none", reg_l2=0.1).get_params()["reg_l2"]
    0.1
    """

    state_constraints: ClassVar[Constraints] = {
        **SHRINK_STATE,
        "weights_": FULL_MATRIX,
        "bias_": PER_CLASS,
    }
    cv_max_iter: int = param(default=10, check=MAX_ITER, doc=CV_MAX_ITER_DOC)
    reg_l2: float = param(
        default=0.0,
        check=PENALTY,
        doc="Weight of the L2 penalty on ``W`` (on ``W - I / T`` when shrunk).",
    )

    def _fit(self, out: ClassifierOutputs, weights: F64 | None = None) -> None:
        design = self._design(out, weights)
        k = design.n_classes
        l2 = np.zeros((k, k + 1))
        l2[:, :k] = self.reg_l2 / k**2
        if self.shrink == "none":
            self._store_unshrunk()
            pen = Penalty.make(l2, curvature(design))
            self._store(fit_path(design, [pen], self.max_iter, self.tol)[0])
            return
        c = self._ts_inverse_temperature(out, weights)
        centre, curv = temperature_map(k, c), curvature(design, inverse_temperature=c)
        strengths = np.unique(self.shrink_grid)[::-1]
        coefs = [odir_coefficients(k, s, s, diagonal=True) + l2 for s in strengths]
        pens = [Penalty.make(coef, curv, centre) for coef in coefs]
        best, start = self._choose(design, out.labels, pens, shrunk_path)
        self.centre_temperature_, self.shrink_strength_ = 1.0 / c, float(strengths[best])
        self._store(fit_path(design, [pens[best]], self.max_iter, self.tol, start, centre)[0])


class _ODIR(_Linear):
    """Full ``W`` with the ODIR penalty; ``lam`` by cross-validation over ``lambda_grid``.

    With ``reg_lambda`` given, or a one-value grid, there is no cross-validation (and
    ``cv_lambdas_``, ``cv_nll_`` are empty). Fitted: ``weights_`` (K, K), ``bias_`` (K,),
    ``reg_lambda_``, ``reg_mu_``, ``cv_lambdas_`` (ascending) and their ``cv_nll_``.
    """

    #: ``g``: the cross-validated values of ``lam`` (none without cross-validation).
    state_constraints: ClassVar[Constraints] = {
        "centre_temperature_": CENTRE_TEMPERATURE,
        "cv_lambdas_": CV_GRID,
        "cv_nll_": CV_NLL,
        "weights_": FULL_MATRIX,
        "bias_": PER_CLASS,
        "reg_lambda_": PENALTY,
        "reg_mu_": PENALTY,
    }
    reg_lambda: float | None = param(
        default=None,
        check=NoneOr(PENALTY),
        doc="The ODIR weight ``lam`` of the off-diagonal entries; ``None``: chosen by "
        "cross-validation over ``lambda_grid``.",
    )
    reg_mu: float | None = param(
        default=None,
        check=NoneOr(PENALTY),
        doc="The ODIR weight ``mu`` of the intercepts; ``None``: ``mu = lam``.",
    )
    lambda_grid: Sequence[float] = param(
        default=DEFAULT_LAMBDA_GRID, check=ListOf(PENALTY), doc="Candidate values of ``lam``."
    )
    n_folds: int = param(default=5, check=N_FOLDS, doc=N_FOLDS_DOC)
    seed: int = param(default=0, check=SEED, doc=SEED_DOC)
    max_iter: int = param(default=500, check=MAX_ITER, doc=MAX_ITER_DOC)
    cv_max_iter: int = param(default=10, check=MAX_ITER, doc=CV_MAX_ITER_DOC)
    tol: float = param(default=1e-12, check=TOL, doc=TOL_DOC)
    shrink: str = param(default="temperature", check=SHRINK, doc=SHRINK_DOC)
    device: str | None = param(default=None, check=LINEAR_DEVICE, doc=LINEAR_DEVICE_DOC)

    def _fit(self, out: ClassifierOutputs, weights: F64 | None = None) -> None:
        design = self._design(out, weights)
        k = design.n_classes
        shrink = self.shrink == "temperature"
        lambdas = np.unique(self.lambda_grid)[::-1]  # strongest penalty first
        if self.reg_lambda is not None:
            lambdas = np.array([self.reg_lambda])
        elif shrink:  # the grid reaches temperature scaling
            lambdas = np.unique([*lambdas, TS_STRENGTH])[::-1]
        mus = lambdas if self.reg_mu is None else np.full_like(lambdas, self.reg_mu)
        c = self._ts_inverse_temperature(out, weights) if shrink else 1.0
        centre = temperature_map(k, c) if shrink else None
        self.centre_temperature_ = 1.0 / c
        curv = curvature(design, inverse_temperature=c)
        pairs = zip(lambdas, mus, strict=True)
        coefs = [odir_coefficients(k, lam, mu, diagonal=shrink) for lam, mu in pairs]
        pens = [Penalty.make(coef, curv, centre) for coef in coefs]
        self.cv_lambdas_, self.cv_nll_ = np.empty(0), np.empty(0)
        best, start = 0, identity_map(k) if centre is None else centre
        folds = usable_folds(self.n_folds, out.labels)
        if lambdas.size > 1 and folds > 1:
            budget = (folds, self.seed, self.cv_max_iter, self.tol)
            fold_path = shrunk_path if shrink else fit_path
            scores, means = cross_validate(design, pens, *budget, path=fold_path)
            best = int(np.argmin(scores))  # first minimum: the strongest penalty among ties
            self.cv_lambdas_, self.cv_nll_ = lambdas[::-1].copy(), scores[::-1].copy()
            start = means[best]  # fit_path falls back to the identity if that is better
        path = fit_path(design, [pens[best]], self.max_iter, self.tol, start, centre)
        self._store(path[0])
        self.reg_lambda_, self.reg_mu_ = float(lambdas[best]), float(mus[best])


class MatrixScalingODIR(_ODIR):
    """Matrix scaling on logits with ODIR; ``lam`` by cross-validation unless given.
    Shrunk (the default), it is :class:`MatrixScaling` at ``s = lam = mu`` (see the module
    docstring).

    {refuses_absent_class}

    Examples
    --------
    {fit_example}

    >>> MatrixScalingODIR(reg_lambda=1.0).get_params()["reg_mu"] is None
    True
    """


class DirichletCalibration(_ODIR):
    """Dirichlet calibration (Dir-ODIR): the ODIR linear map on log-probabilities.

    {refuses_absent_class}

    Examples
    --------
    {fit_example}

    >>> DirichletCalibration(lambda_grid=[0.1, 1.0]).lambda_grid
    (0.1, 1.0)
    """

    on_log_probs = True
    shift_invariant = True  # on the log-softmax: the same for logits and probabilities
