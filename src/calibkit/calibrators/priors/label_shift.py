"""Label shift: adapt a calibrated classifier to new class frequencies.

Under label shift the class priors change between the source (where the model and its
calibrator were fitted) and the target, while the class-conditionals ``p(x | y)`` stay.
Bayes' rule then gives the target posterior from the source one (Saerens et al. 2002)::

    p_t(y | x) = p_s(y | x) w_y / sum_j p_s(j | x) w_j,    w_y = pi_t(y) / pi_s(y)

(:func:`adapt_priors`). The target priors ``pi_t`` are unknown; two estimators from the
unlabelled target rows:

- :func:`estimate_priors_em` (Saerens et al. 2002): the maximum-likelihood priors, by EM on
  the source posteriors: E step the adapted posteriors under the current priors, M step
  their mean; from ``pi_s``, until no prior moves by more than ``tol``. It needs
  *calibrated* source posteriors: Alexandari, Kundaje & Shrikumar (ICML 2020) show that
  EM on bias-corrected temperature scaling (BCTS,
  :class:`~calibkit.calibrators.logit.bias_corrected.BiasCorrectedTemperatureScaling`) is
  hard to beat.
- :func:`estimate_priors_bbse` (Lipton et al. 2018, black-box shift estimation): with ``C``
  the joint confusion matrix ``C[i, j] = P_s(prediction i, label j)`` of held-out labelled
  source rows and ``mu[i] = P_t(prediction i)`` on the target, ``C w = mu`` for the weights
  ``w``; solved by non-negative least squares (so an ill-conditioned ``C`` gives no negative
  weight), then ``pi_t = w pi_s`` renormalised to sum 1 (``pi_s`` the column sums of ``C``).
  Hard predictions (argmax, one-hot) as in Lipton et al., or soft (the probabilities).

:class:`PriorShiftAdapter` puts a calibrator, an estimator and the reweighting together on
the calibrator contract: ``fit(logits, labels)`` on labelled source rows (the calibrator,
the source priors, the confusion matrix), ``adapt(target_logits)`` estimates the target
priors from unlabelled target rows, ``predict_proba`` gives the adapted posteriors.

>>> probs = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]])
>>> adapt_priors(probs, [0.5, 0.5], [0.8, 0.2]).round(4).tolist()
[[0.973, 0.027], [0.5, 0.5], [0.8571, 0.1429]]
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, Self

import numpy as np
import numpy.typing as npt

from calibkit.calibrators.base import Calibrator
from calibkit.calibrators.fitted import (
    CalibratorSpec,
    FittedObject,
    OnCalibrator,
    check_input_kind,
)
from calibkit.calibrators.priors.prior_diagnostics import (
    bbse_conditioning,
    not_converged_message,
    singular_message,
    small_sample_message,
)
from calibkit.core import catalog
from calibkit.core.errors import (
    ConvergenceWarning,
    InputError,
    SingularSystemWarning,
    SmallSampleWarning,
)
from calibkit.core.fitted_state import Array
from calibkit.core.outputs import as_outputs, check_scores
from calibkit.core.validation import POSITIVE, Boolean, Choice, Constraints, Integer

if TYPE_CHECKING:
    from torch import nn

F64 = npt.NDArray[np.float64]
#: The prior estimators (``PriorShiftAdapter(estimator=...)``; ``calibkit labelshift --estimator``).
ESTIMATORS = catalog.PRIOR_ESTIMATORS
#: How far from 1 a prior vector's sum may be (float32 frequencies written as text).
PRIOR_SUM_TOL = 1e-6
#: What a loaded state lacking one of the optional fields got (as check_state says it).
MISSING = "nothing: the field is missing"
#: The state :meth:`PriorShiftAdapter.adapt` sets (both or neither in a saved document).
ADAPT_STATE = ("target_priors_", "n_iter_")
#: What adapt records about its estimate (all or none: documents saved before them lack them).
ADAPT_FLAGS = ("converged_", "identified_", "n_target_")
#: The most rows a saved adapter may say it was fitted or adapted on (counts stay exact).
MAX_ROWS = 2**40


def check_priors(priors: object, name: str, n_classes: int, *, positive: bool = False) -> F64:
    """``priors`` as a float64 vector of ``n_classes`` finite values >= 0 (> 0 with
    ``positive``) summing to 1 within :data:`PRIOR_SUM_TOL`, renormalised; else an InputError.

    >>> check_priors([0.25, 0.75], "priors", 2).tolist()
    [0.25, 0.75]
    >>> check_priors([0.5, 0.6], "priors", 2)
    Traceback (most recent call last):
    ...
    calibkit.core.errors.InputError: priors: expected 2 priors >= 0 summing to 1, got a sum of 1.1
    """
    try:
        p = np.asarray(priors, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(name, f"{n_classes} numbers", repr(priors)[:60]) from None
    sign = "> 0" if positive else ">= 0"
    expected = f"{n_classes} priors {sign} summing to 1"
    if p.shape != (n_classes,):
        raise InputError(name, expected, f"{p.size} values" if p.ndim == 1 else f"shape {p.shape}")
    if not np.isfinite(p).all():
        raise InputError(name, expected, "a value that is not finite")
    if (p <= 0 if positive else p < 0).any():
        bad = int(np.flatnonzero(p <= 0 if positive else p < 0)[0])
        raise InputError(name, expected, f"{p[bad]:g} for class {bad}")
    total = float(p.sum())
    if abs(total - 1.0) > PRIOR_SUM_TOL:
        raise InputError(name, expected, f"a sum of {total:.6g}")
    return np.asarray(p / total, dtype=np.float64)


def _check_probs(probs: object, name: str) -> F64:
    p = np.asarray(check_scores(probs, "probs", name=name), dtype=np.float64)
    return p


def adapt_priors(probs: object, source_priors: object, target_priors: object) -> F64:
    """The Bayes reweighting ``p'(y|x) = p(y|x) w_y / sum_j p(j|x) w_j``, ``w = pi_t / pi_s``.

    ``source_priors`` must be positive; ``target_priors`` may hold zeros. A row giving no
    probability to any class of positive target prior (possible only through underflow)
    gets the target priors.

    Examples
    --------
    From balanced source priors to a target with four times more of class 1:

    >>> adapt_priors([[0.5, 0.5], [0.8, 0.2]], [0.5, 0.5], [0.2, 0.8]).round(4).tolist()
    [[0.2, 0.8], [0.5, 0.5]]
    """
    p = _check_probs(probs, "probs")
    k = p.shape[1]
    ps = check_priors(source_priors, "source_priors", k, positive=True)
    pt = check_priors(target_priors, "target_priors", k)
    return _reweight(p, pt / ps, pt)


def _reweight(p: F64, w: F64, fallback: F64) -> F64:
    q = p * w
    total = q.sum(axis=1, keepdims=True)
    empty = total[:, 0] <= 0  # NaN is not empty: a row with a NaN stays all NaN
    q = q / np.where(total <= 0, 1.0, total)
    if empty.any():
        q[empty] = fallback
    return np.asarray(q, dtype=np.float64)


def estimate_priors_em(
    probs: object,
    source_priors: object,
    *,
    tol: float = 1e-8,
    max_iter: int = 10_000,
) -> tuple[F64, int]:
    """Target priors by EM (Saerens et al. 2002) on the calibrated source posteriors
    ``probs`` of unlabelled target rows; returns ``(priors, iterations)``.

    Starts at ``source_priors`` (positive); each iteration reweights the posteriors by the
    current priors and takes their mean; stops when no prior moves by more than ``tol``,
    or after ``max_iter`` iterations, with a
    :class:`~calibkit.core.errors.ConvergenceWarning` (the priors are then the last
    iterate). The likelihood never decreases along the way.

    Hand case: two classes, source priors (1/2, 1/2), three rows whose class-0 posteriors
    are 0.9, 0.9 and 0.2. A fixed point ``pi`` of class 0 solves ``1 = mean_i p_i / (pi p_i +
    (1 - pi)(1 - p_i))``, i.e. ``1.44 pi^2 - 2.66 pi + 1.22 = 0``: ``pi = 61/72`` (the
    maximum: the likelihood decreases towards ``pi = 1``, the other root).

    >>> pi, n = estimate_priors_em([[0.9, 0.1], [0.9, 0.1], [0.2, 0.8]], [0.5, 0.5], tol=1e-13)
    >>> round(float(pi[0]) * 72, 9), n > 10
    (61.0, True)
    >>> pi, n = estimate_priors_em([[0.5, 0.5], [0.5, 0.5]], [0.5, 0.5])
    >>> pi.tolist(), n
    ([0.5, 0.5], 1)
    """
    p = _check_probs(probs, "probs")
    k = p.shape[1]
    ps = check_priors(source_priors, "source_priors", k, positive=True)
    POSITIVE.check("tol", tol)
    Integer(1).check("max_iter", max_iter)
    pi, n_iter, converged = _em(p, ps, tol, max_iter)
    if not converged:
        warnings.warn(not_converged_message(max_iter, tol), ConvergenceWarning, stacklevel=2)
    return pi, n_iter


def _em(p: F64, ps: F64, tol: float, max_iter: int) -> tuple[F64, int, bool]:
    """EM's priors, iterations, and whether a step moved no prior by more than ``tol``."""
    pi = ps.copy()
    for it in range(1, max_iter + 1):
        new = _reweight(p, pi / ps, pi).mean(axis=0)
        new /= new.sum()
        if float(np.abs(new - pi).max()) <= tol:
            return new, it, True
        pi = new
    return pi, max_iter, False


def confusion_matrix(probs: object, labels: object, *, soft: bool = False) -> F64:
    """The joint confusion matrix ``C[i, j] = P(prediction i, label j)`` of labelled rows:
    hard (argmax) or ``soft`` (each row's probabilities in its label's column). Columns sum
    to the label frequencies, the whole to 1.

    >>> confusion_matrix([[0.9, 0.1], [0.3, 0.7], [0.6, 0.4], [0.2, 0.8]], [0, 0, 1, 1]).tolist()
    [[0.25, 0.25], [0.25, 0.25]]
    """
    out = as_outputs(labels, probs)
    p = np.asarray(out.probs, dtype=np.float64)
    pred = _predicted(p, soft)
    k = p.shape[1]
    c = np.zeros((k, k))
    np.add.at(c.T, out.labels, pred)  # column j gathers the rows of label j
    return np.asarray(c / p.shape[0], dtype=np.float64)


def _predicted(p: F64, soft: bool) -> F64:
    """Each row's prediction: its probabilities (soft) or the one-hot argmax (hard)."""
    if soft:
        return p
    return np.asarray(np.eye(p.shape[1])[np.argmax(p, axis=1)], dtype=np.float64)


def estimate_priors_bbse(
    confusion: object, target_probs: object, *, soft: bool = False, n_source: int | None = None
) -> F64:
    """Target priors by black-box shift estimation (Lipton et al. 2018).

    ``confusion`` is :func:`confusion_matrix` of held-out labelled source rows (made with
    the same ``soft``), ``target_probs`` the calibrated probabilities of the target rows.
    Solves ``C w = mu`` (``mu`` the target's mean prediction) for ``w >= 0`` by
    non-negative least squares, then returns ``w pi_s`` renormalised (``pi_s`` the columns'
    sums). A source class without rows (a zero column) gets no target prior.

    BBSE assumes ``C`` invertible (Lipton et al.'s identifiability condition). When it is
    not, or cannot be told from a singular matrix given the ``n_source`` rows it was
    counted on (:func:`~calibkit.calibrators.priors.prior_diagnostics.bbse_conditioning`),
    ``C w = mu`` has a whole family of solutions (or one made of sampling noise) and NNLS
    picks one arbitrarily, typically a vertex such as ``(1, 0, ..., 0)``, whose adapted
    posteriors can be far worse than none. Then the source priors are returned (no
    adaptation: the calibrated posteriors unchanged, never worse than not adapting) with a
    :class:`~calibkit.core.errors.SingularSystemWarning` saying so and naming EM, which
    needs no matrix inverse. Refusing instead would deny the rest of a run (the unadapted
    scores, EM) for a fact about the model, not about the input.

    Hand case: ``C = [[0.4, 0.1], [0.1, 0.4]]`` (source priors 1/2, 80% recall each) and a
    target predicting class 0 for 62% of its rows: ``0.4 w0 + 0.1 w1 = 0.62`` and ``0.1 w0 +
    0.4 w1 = 0.38`` give ``w = (1.4, 0.6)``, priors ``(0.7, 0.3)``.

    >>> target = np.array([[0.9, 0.1]] * 62 + [[0.2, 0.8]] * 38)
    >>> estimate_priors_bbse([[0.4, 0.1], [0.1, 0.4]], target).round(12).tolist()
    [0.7, 0.3]

    A source model that always predicts class 0 (``C``'s second row is 0): no estimate,
    the source priors, with a warning:

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as seen:
    ...     warnings.simplefilter("always")
    ...     estimate_priors_bbse([[0.3, 0.7], [0.0, 0.0]], target).tolist()
    [0.3, 0.7]
    >>> seen[0].category.__name__
    'SingularSystemWarning'
    """
    p = _check_probs(target_probs, "target_probs")
    k = p.shape[1]
    c = np.asarray(check_scores(confusion, "logits", name="confusion"), dtype=np.float64)
    if c.shape != (k, k):
        raise InputError("confusion", f"a ({k}, {k}) matrix, as the target's classes", str(c.shape))
    if (c < 0).any() or abs(float(c.sum()) - 1.0) > PRIOR_SUM_TOL:
        raise InputError("confusion", "a joint confusion matrix (entries >= 0, sum 1)", "other")
    if n_source is not None:
        Integer(1).check("n_source", n_source)
    if p.shape[0] < k:
        warnings.warn(small_sample_message(p.shape[0], k), SmallSampleWarning, stacklevel=2)
    pi, identifiable = _bbse(c, p, soft, n_source)
    if not identifiable:
        sigma, floor = bbse_conditioning(c, n_source)
        warnings.warn(singular_message(sigma, floor), SingularSystemWarning, stacklevel=2)
    return pi


def _bbse(c: F64, p: F64, soft: bool, n_source: int | None) -> tuple[F64, bool]:
    """BBSE's priors and whether ``c`` identifies them (else the source priors)."""
    from scipy.optimize import nnls  # lazy: scipy costs a quarter second at import

    source = np.asarray(c.sum(axis=0), dtype=np.float64)
    sigma, floor = bbse_conditioning(c, n_source)
    if not sigma > floor:
        return source, False
    mu = _predicted(p, soft).mean(axis=0)
    w, _ = nnls(c, mu)
    pi = w * source
    total = float(pi.sum())
    if not total > 0:  # C w = mu has no non-negative solution but 0: keep the source
        return source, True
    return np.asarray(pi / total, dtype=np.float64), True


class PriorShiftAdapter(OnCalibrator):
    """A calibrator plus prior adaptation to a label-shifted target (module docstring).

    Parameters
    ----------
    estimator : {"em", "bbse"}
        How :meth:`adapt` estimates the target priors (:data:`ESTIMATORS`). Its former
        name, ``method=``, still works for one release, with a DeprecationWarning; a saved
        document whose parameters say ``method`` loads as before.
    calibrator : str, Calibrator or None
        ``"bcts"`` (bias-corrected temperature scaling, the default), another registered
        calibrator of logits (``"temperature"``, ...) or one as an instance (a fitted one
        is used as it is), or ``None`` (softmax of the logits).
    soft : bool
        BBSE with the soft confusion matrix (the probabilities) instead of the hard one.
    tol, max_iter : float, int
        EM's convergence tolerance (largest change of a prior) and iteration budget.

    Attributes
    ----------
    n_classes_ : int
    calibrator_ : Calibrator or None
        Fitted on the source rows.
    source_priors_ : ndarray of shape (n_classes,)
        The source's label frequencies (all positive).
    confusion_ : ndarray of shape (n_classes, n_classes)
        The joint confusion matrix of the calibrated source rows (``soft`` as given).
    n_source_ : int
        The labelled source rows (``source_priors_ * n_source_`` are their class counts).
    target_priors_ : ndarray of shape (n_classes,)
        Set by :meth:`adapt` (or :meth:`set_target_priors`).
    n_iter_ : int
        EM's iterations in the last :meth:`adapt` (0 for BBSE or given priors).
    converged_ : bool
        Whether EM met ``tol`` within ``max_iter`` iterations (else a
        :class:`~calibkit.core.errors.ConvergenceWarning`; True for BBSE and given priors).
    identified_ : bool
        False when BBSE's confusion matrix is singular
        (:func:`~calibkit.calibrators.priors.prior_diagnostics.bbse_conditioning`): the
        target priors are then the source priors, with a
        :class:`~calibkit.core.errors.SingularSystemWarning`.
    n_target_ : int
        The target rows the priors were estimated from (0: given priors); fewer than
        ``n_classes_`` gives a :class:`~calibkit.core.errors.SmallSampleWarning`.

    Notes
    -----
    :meth:`caveats` says in words what these flags found; loading a saved adapter checks
    them against each other and the source priors against the confusion matrix and counts.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 2000)
    >>> z = np.stack([np.zeros(2000), 2.0 * (2 * y - 1) + rng.normal(size=2000)], axis=1)
    >>> ps = PriorShiftAdapter(estimator="em").fit(z, y)
    >>> yt = (rng.random(2000) < 0.8).astype(int)  # 80% of class 1
    >>> zt = np.stack([np.zeros(2000), 2.0 * (2 * yt - 1) + rng.normal(size=2000)], axis=1)
    >>> bool(abs(ps.adapt(zt).target_priors_[1] - 0.8) < 0.03), ps.predict_proba(zt).shape
    (True, (2000, 2))
    """

    kind: ClassVar[str] = "priors"

    estimator: str
    calibrator: str | Calibrator | None
    soft: bool
    tol: float
    max_iter: int
    n_classes_: int
    calibrator_: Calibrator | None
    source_priors_: F64
    confusion_: F64
    n_source_: int
    target_priors_: F64
    n_iter_: int
    converged_: bool
    identified_: bool
    n_target_: int

    param_constraints: ClassVar[Constraints] = {
        "estimator": Choice(*ESTIMATORS),
        "calibrator": CalibratorSpec(),
        "soft": Boolean(),
        "tol": POSITIVE,
        "max_iter": Integer(1, 10_000_000),
    }
    state_constraints: ClassVar[Constraints] = {
        "calibrator_": FittedObject(),
        "source_priors_": Array(shape=("k",), low=0.0),
        "confusion_": Array(shape=("k", "k"), low=0.0),
        "n_source_": Integer(1, MAX_ROWS),
        "target_priors_": Array(shape=("k",), low=0.0),
        "n_iter_": Integer(low=0),
        "converged_": Boolean(),
        "identified_": Boolean(),
        "n_target_": Integer(0, MAX_ROWS),
    }
    #: ``confusion_`` is hard or soft as ``soft`` was at fit (BBSE reads both): recorded.
    fitted_with: ClassVar[tuple[str, ...]] = ("soft",)
    #: Unset until :meth:`adapt`; ``n_source_`` and the adapt flags: absent from documents
    #: saved before they were recorded (such a document loads as before).
    optional_state: ClassVar[tuple[str, ...]] = ("n_source_", *ADAPT_STATE, *ADAPT_FLAGS)

    def __init__(
        self,
        estimator: str = "em",
        calibrator: str | Calibrator | None = "bcts",
        soft: bool = False,
        tol: float = 1e-8,
        max_iter: int = 10_000,
        **renamed: Any,
    ) -> None:
        if renamed:
            estimator = _renamed_estimator(estimator, renamed)
        self._set_params(
            estimator=estimator, calibrator=calibrator, soft=soft, tol=tol, max_iter=max_iter
        )

    @classmethod
    def _upgrade(
        cls, params: dict[str, Any], state: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """A document saved before the estimator had its name: ``method`` -> ``estimator``."""
        if "method" in params and "estimator" not in params:
            params = {("estimator" if k == "method" else k): v for k, v in params.items()}
        return params, state

    # ----- fitted state ------------------------------------------------------------------
    @property
    def is_adapted(self) -> bool:
        return hasattr(self, "target_priors_")

    def _check_is_adapted(self) -> None:
        from calibkit.core.errors import NotFittedError

        self.check_is_fitted()
        if not self.is_adapted:
            raise NotFittedError(
                "this PriorShiftAdapter has no target priors yet: call adapt(target_logits) "
                "or set_target_priors() first (source_proba() gives the unadapted posteriors)"
            )

    # ----- fit, adapt, predict -----------------------------------------------------------
    def fit(
        self,
        logits: object,
        labels: object,
        sample_weight: object = None,
        *,
        target_logits: object = None,
        input_kind: str = "logits",
        **metadata: object,
    ) -> Self:
        """Fit the calibrator, the source priors and the confusion matrix on labelled
        source rows (every class at least once: the source priors must be positive);
        with ``target_logits`` (unlabelled target rows), :meth:`adapt` to them too
        (``input_kind``: what ``logits`` holds, declared to the calibrator's fit as
        :meth:`Calibrator.fit <calibkit.calibrators.base.Calibrator.fit>` takes it;
        ``metadata``: none is declared, so any is refused by name)."""
        kind = check_input_kind(input_kind)
        self._route(metadata)
        if sample_weight is not None:
            raise InputError("sample_weight", "None for 'prior_shift'", "weights")
        out = as_outputs(labels, logits=logits)
        counts = np.bincount(out.labels, minlength=out.n_classes)
        if (counts == 0).any():
            missing = int(np.flatnonzero(counts == 0)[0])
            raise InputError(
                "labels",
                f"every one of the {out.n_classes} classes in the source rows (its prior must "
                "be positive to reweight it)",
                f"no row of class {missing}",
            )
        z = np.asarray(out.as_logits(), dtype=np.float64)
        calibrator, fitted = CalibratorSpec.resolve(self.calibrator)
        if fitted:
            self._check_given_kind(calibrator, kind)
        if calibrator is not None and not fitted:
            calibrator.fit(z, out.labels, input_kind=kind)
        if calibrator is not None and calibrator.n_classes_ != out.n_classes:
            expected = f"a calibrator of {out.n_classes} classes, as the logits"
            raise InputError("calibrator", expected, f"one of {calibrator.n_classes_}")
        for name in (*ADAPT_STATE, *ADAPT_FLAGS):
            if hasattr(self, name):
                delattr(self, name)
        self.n_classes_ = out.n_classes
        self._record_params()
        self.calibrator_ = calibrator
        self.source_priors_ = counts / float(counts.sum())
        self.confusion_ = confusion_matrix(self._probs(z), out.labels, soft=self.soft)
        self.n_source_ = int(counts.sum())
        if target_logits is not None:
            self.adapt(target_logits)
        return self

    def source_proba(self, logits: object) -> F64:
        """The calibrated posteriors under the source priors (no adaptation)."""
        return self._probs(self._check_predict_input(logits))

    def estimate(self, target_logits: object) -> tuple[F64, int]:
        """The target priors estimated from unlabelled target logits, and EM's iterations
        (0 for BBSE), without storing them (warning as :meth:`adapt` does)."""
        est = self._estimate(target_logits)
        self._warn(est)
        return est.priors, est.n_iter

    def _estimate(self, target_logits: object) -> _Estimate:
        p = self.source_proba(target_logits)
        n = int(p.shape[0])
        if self.estimator == "em":
            pi, n_iter, converged = _em(p, self.source_priors_, self.tol, self.max_iter)
            return _Estimate(pi, n_iter, converged, True, n)
        pi, identified = _bbse(self.confusion_, p, self.soft, getattr(self, "n_source_", None))
        return _Estimate(pi, 0, True, identified, n)

    def _warn(self, est: _Estimate) -> None:
        """Each caveat of ``est`` as its warning (:meth:`caveats` says them from the state)."""
        for category, message in self._caveats(est.converged, est.identified, est.n_target):
            warnings.warn(message, category, stacklevel=4)

    def adapt(self, target_logits: object) -> Self:
        """Estimate the target priors from unlabelled target logits and keep them, with
        what the estimate found (``converged_``, ``identified_``, ``n_target_``; a warning
        for each caveat: EM not converged, BBSE's system singular, fewer rows than
        classes)."""
        est = self._estimate(target_logits)
        self._warn(est)
        self.target_priors_, self.n_iter_ = est.priors, est.n_iter
        self.converged_, self.identified_, self.n_target_ = (
            est.converged,
            est.identified,
            est.n_target,
        )
        return self

    def set_target_priors(self, priors: object) -> Self:
        """Use known target priors (e.g. the oracle's) instead of estimating them."""
        self.check_is_fitted()
        self.target_priors_ = check_priors(priors, "priors", self.n_classes_)
        self.n_iter_ = 0
        self.converged_, self.identified_, self.n_target_ = True, True, 0
        return self

    def caveats(self) -> list[str]:
        """What the last :meth:`adapt` found that a reader of its priors must know, in
        words (empty when nothing: given priors, or an estimate without caveat; also for a
        document saved before the flags were recorded).

        Returns
        -------
        list of str
            The messages of the warnings :meth:`adapt` gave.

        Examples
        --------
        >>> z = np.array([[2.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 2.0]])
        >>> ps = PriorShiftAdapter(calibrator=None).fit(z, [0, 1, 0, 1])
        >>> ps.set_target_priors([0.5, 0.5]).caveats()
        []
        """
        self._check_is_adapted()
        if not hasattr(self, "converged_"):
            return []
        found = self._caveats(self.converged_, self.identified_, self.n_target_)
        return [message for _, message in found]

    def _caveats(
        self, converged: bool, identified: bool, n_target: int
    ) -> list[tuple[type[Warning], str]]:
        found: list[tuple[type[Warning], str]] = []
        if not converged:
            found.append((ConvergenceWarning, not_converged_message(self.max_iter, self.tol)))
        if not identified:
            sigma, floor = bbse_conditioning(self.confusion_, getattr(self, "n_source_", None))
            found.append((SingularSystemWarning, singular_message(sigma, floor)))
        if 0 < n_target < self.n_classes_:
            found.append((SmallSampleWarning, small_sample_message(n_target, self.n_classes_)))
        return found

    @property
    def weights_(self) -> F64:
        """``target_priors_ / source_priors_``, the reweighting."""
        self._check_is_adapted()
        return np.asarray(self.target_priors_ / self.source_priors_, dtype=np.float64)

    def predict_proba(self, logits: object, **metadata: object) -> F64:
        """The posteriors adapted to the target priors."""
        self._route(metadata)
        self._check_is_adapted()
        return _reweight(self.source_proba(logits), self.weights_, self.target_priors_)

    # ----- export ------------------------------------------------------------------------
    def to_module(self) -> nn.Module:
        """The adapted map as a torch module: the calibrator's module (or a softmax), then
        the reweighting (the weights a float64 buffer; see :class:`PriorWeights`)."""
        self._check_is_adapted()
        return _prior_module(self._probs_module(), self.weights_, self.target_priors_)

    # ----- persistence ------------------------------------------------------------------
    def _check_state(self) -> None:
        """A loaded state as :meth:`fit` and :meth:`adapt` can leave it: the source priors
        those of the counts (the confusion matrix's column sums; with ``n_source_``,
        counts of at least one row each: no prior below ``1 / n_source_``; without it, a
        document saved before it was recorded, no prior below ``1 / MAX_ROWS``, the least
        any count of rows gives), the adapt
        flags beside the target priors and agreeing with the estimator (EM alone may not
        converge, after exactly ``max_iter`` iterations; BBSE alone may find its system
        singular, which the confusion matrix must confirm, and then kept the source
        priors).
        """
        k = self.n_classes_
        source = check_priors(self.source_priors_, "state.source_priors_", k, positive=True)
        if abs(float(self.confusion_.sum()) - 1.0) > PRIOR_SUM_TOL:
            raise InputError("state.confusion_", "entries >= 0 summing to 1", "another sum")
        sums = self.confusion_.sum(axis=0)
        if np.abs(sums - source).max() > PRIOR_SUM_TOL:
            j = int(np.argmax(np.abs(sums - source)))
            raise InputError(
                "state.source_priors_",
                "the column sums of state.confusion_ (the source's label frequencies)",
                f"{source[j]:.6g} for class {j}, whose column sums to {sums[j]:.6g}",
            )
        if hasattr(self, "n_source_"):
            counts = source * self.n_source_
            whole = np.rint(counts)
            if (whole < 1).any() or np.abs(counts - whole).max() > 1e-6:
                j = int(np.argmax((whole < 1) | (np.abs(counts - whole) > 1e-6)))
                raise InputError(
                    "state.source_priors_",
                    f"class counts of at least 1 of state.n_source_ = {self.n_source_} rows "
                    f"(priors >= {1 / self.n_source_:.3g})",
                    f"{source[j]:.6g} for class {j} ({counts[j]:.6g} rows)",
                )
        elif (source < 1.0 / MAX_ROWS).any():  # no count recorded: at most MAX_ROWS rows
            j = int(np.argmax(source < 1.0 / MAX_ROWS))
            raise InputError(
                "state.source_priors_",
                f"class counts of at least 1 row of at most {MAX_ROWS:,} (priors >= "
                f"{1 / MAX_ROWS:.3g}; state.n_source_ is not recorded)",
                f"{source[j]:.6g} for class {j}",
            )
        self._check_adapt_state()
        self._check_calibrator_state()

    def _check_adapt_state(self) -> None:
        present = [name for name in (*ADAPT_STATE, *ADAPT_FLAGS) if hasattr(self, name)]
        if not present:
            return
        flags = [name for name in ADAPT_FLAGS if hasattr(self, name)]
        # the flags came with n_source_: a document with them is no older one
        needed = [*ADAPT_STATE, *((*ADAPT_FLAGS, "n_source_") if flags else ())]
        for name in needed:
            if not hasattr(self, name):
                beside = ", ".join(f"state.{n}" for n in present)
                raise InputError(f"state.{name}", f"this field beside {beside}", MISSING)
        check_priors(self.target_priors_, "state.target_priors_", self.n_classes_)
        if self.n_iter_ > self.max_iter:
            expected = f"at most params.max_iter = {self.max_iter} iterations"
            raise InputError("state.n_iter_", expected, str(self.n_iter_))
        if not flags:
            return
        em = self.estimator == "em" and self.n_target_ > 0
        if not self.converged_ and not (em and self.n_iter_ == self.max_iter):
            raise InputError(
                "state.converged_",
                f"true, or false for EM after params.max_iter = {self.max_iter} iterations",
                f"false with estimator {self.estimator!r}, {self.n_iter_} iterations",
            )
        if self.n_target_ == 0 or self.estimator == "bbse":
            if self.n_iter_ != 0:
                expected = "0 for given priors or BBSE"
                raise InputError("state.n_iter_", expected, str(self.n_iter_))
        elif self.n_iter_ < 1:
            raise InputError("state.n_iter_", "at least 1 EM iteration", str(self.n_iter_))
        bbse = self.estimator == "bbse" and self.n_target_ > 0
        if bbse:
            sigma, floor = bbse_conditioning(self.confusion_, getattr(self, "n_source_", None))
            if self.identified_ != (sigma > floor):
                raise InputError(
                    "state.identified_",
                    f"{str(sigma > floor).lower()}, as state.confusion_ says (smallest "
                    f"singular value {sigma:.3g}, floor {floor:.3g})",
                    str(self.identified_).lower(),
                )
        elif not self.identified_:
            raise InputError("state.identified_", "true for EM or given priors", "false")
        if not self.identified_:
            gap = np.abs(self.target_priors_ - self.source_priors_).max()
            if gap > PRIOR_SUM_TOL:
                raise InputError(
                    "state.target_priors_",
                    "the source priors, kept when BBSE's system is singular",
                    f"priors that differ by up to {gap:.3g}",
                )


class _Estimate(NamedTuple):
    """One estimate of the target priors and what it found."""

    priors: F64
    n_iter: int
    converged: bool
    identified: bool
    n_target: int


def _renamed_estimator(estimator: str, renamed: dict[str, Any]) -> str:
    """``method=``, the estimator's former keyword (deprecated): its value, with a
    DeprecationWarning; any other unknown keyword is a TypeError, as Python's own."""
    unknown = sorted(set(renamed) - {"method"})
    if unknown:
        raise TypeError(f"PriorShiftAdapter() got an unexpected keyword argument {unknown[0]!r}")
    warnings.warn(
        "PriorShiftAdapter(method=...) is deprecated: the prior estimator is now "
        "estimator= (same values, em or bbse)",
        DeprecationWarning,
        stacklevel=3,
    )
    method: str = renamed["method"]
    if estimator not in ("em", method):
        raise InputError("method", f"the same estimator as estimator={estimator!r}", repr(method))
    return method


def _prior_module(probs: nn.Module, weights: F64, fallback: F64) -> nn.Module:
    from calibkit.calibrators.priors.label_shift_module import PriorWeights

    return PriorWeights(probs, weights, fallback).eval()
