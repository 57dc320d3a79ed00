"""Label shift: adapt a calibrated classifier to new class frequencies.

:class:`PriorShiftAdapter` puts a calibrator, a prior estimator and the Bayes reweighting
(:mod:`calibkit.calibrators.priors.estimators`: EM, BBSE and
:func:`~calibkit.calibrators.priors.estimators.adapt_priors`) together on the calibrator
contract: ``fit(logits, labels)`` on labelled source rows (the calibrator,
the source priors, the confusion matrix), ``adapt(target_logits)`` estimates the target
priors from unlabelled target rows, ``predict_proba`` gives the adapted posteriors.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> y = rng.integers(0, 2, 400)
>>> z = rng.normal(size=(400, 2)) + 2.0 * np.eye(2)[y]
>>> adapter = PriorShiftAdapter(EM(), calibrator=None).fit(z, y)
>>> target = np.flatnonzero(y == 0)[:150].tolist() + np.flatnonzero(y == 1)[:50].tolist()
>>> bool(adapter.adapt(z[target]).target_priors_[0] > 0.6)
True
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, ClassVar, NamedTuple, Self

import numpy as np
import numpy.typing as npt

from calibkit.calibrators.base import Calibrator
from calibkit.calibrators.fitted import (
    CalibratorSpec,
    FittedObject,
    OnCalibrator,
)
from calibkit.calibrators.priors.estimators import (
    BBSE,
    EM,
    ESTIMATOR,
    PRIOR_SUM_TOL,
    PriorEstimator,
    check_priors,
    confusion_matrix,
    reweight,
)
from calibkit.calibrators.priors.prior_diagnostics import (
    bbse_conditioning,
    not_converged,
    singular,
    small_sample,
)
from calibkit.core.errors import (
    InputError,
)
from calibkit.core.fitted_state import Array
from calibkit.core.params import param
from calibkit.core.validation import Boolean, Constraints, Integer

if TYPE_CHECKING:
    from torch import nn

F64 = npt.NDArray[np.float64]
#: What a loaded state lacking one of the optional fields got (as check_state says it).
MISSING = "nothing: the field is missing"
#: The state :meth:`PriorShiftAdapter.adapt` sets (all or none in a saved document).
ADAPT_STATE = ("target_priors_", "n_iter_")
#: What adapt records about its estimate, beside :data:`ADAPT_STATE`.
ADAPT_FLAGS = ("converged_", "identified_", "n_target_")
#: The most rows a saved adapter may say it was fitted or adapted on (counts stay exact).
MAX_ROWS = 2**40


class PriorShiftAdapter(OnCalibrator):
    """A calibrator plus prior adaptation to a label-shifted target (module docstring).

    Attributes
    ----------
    n_classes_ : int
    calibrator_ : Calibrator or None
        Fitted on the source rows.
    source_priors_ : ndarray of shape (n_classes,)
        The source's label frequencies (all positive).
    confusion_ : ndarray of shape (n_classes, n_classes)
        The joint confusion matrix of the calibrated source rows (soft for ``BBSE(soft=True)``).
    n_source_ : int
        The labelled source rows (``source_priors_ * n_source_`` are their class counts).
    target_priors_ : ndarray of shape (n_classes,)
        Set by :meth:`adapt` (or :meth:`set_target_priors`).
    n_iter_ : int
        EM's iterations in the last :meth:`adapt` (0 for BBSE or given priors).
    converged_ : bool
        Whether EM met its ``tol`` within its ``max_iter`` iterations (else a
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

    estimator: PriorEstimator = param(
        default=EM(),
        check=ESTIMATOR,
        doc="How :meth:`adapt` estimates the target priors: ``EM(tol=..., max_iter=...)`` or "
        "``BBSE(soft=...)`` (:data:`~calibkit.calibrators.priors.estimators.ESTIMATORS`); a "
        "name means that estimator with its defaults.",
    )
    calibrator: str | Calibrator | None = param(
        default="bcts",
        check=CalibratorSpec(),
        doc='``"bcts"`` (bias-corrected temperature scaling), another registered calibrator '
        'of logits (``"temperature"``, ...) or one as an instance (a fitted one is used as '
        "it is), or None (the softmax of the logits).",
    )

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
    #: ``confusion_`` is hard or soft as the estimator asks at fit, and the adapt state is
    #: its estimate: the estimator is recorded.
    fitted_with: ClassVar[tuple[str, ...]] = ("estimator",)
    #: Unset until :meth:`adapt`.
    optional_state: ClassVar[tuple[str, ...]] = (*ADAPT_STATE, *ADAPT_FLAGS)

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
        with ``target_logits`` (unlabelled target rows), :meth:`adapt` to them too (the
        other inputs as :meth:`~calibkit.calibrators.fitted.OnCalibrator._fit_inputs` says)."""
        with self._fit_or_unchanged():
            kind, out = self._fit_inputs(logits, labels, sample_weight, input_kind, metadata)
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
            self.confusion_ = confusion_matrix(
                self._probs(z), out.labels, soft=self.estimator.soft_confusion()
            )
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
        est = self.estimator.estimate(p, self.source_priors_, self.confusion_, self.n_source_)
        return _Estimate(*est, int(p.shape[0]))

    def _warn(self, est: _Estimate) -> None:
        """Each caveat of ``est`` as its warning (:meth:`caveats` says them from the state)."""
        for caveat in self._caveats(est.converged, est.identified, est.n_target):
            warnings.warn(caveat, stacklevel=4)

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
        words (empty when nothing: given priors, or an estimate without caveat).

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
        found = self._caveats(self.converged_, self.identified_, self.n_target_)
        return [str(caveat) for caveat in found]

    def _caveats(self, converged: bool, identified: bool, n_target: int) -> list[Warning]:
        found: list[Warning] = []
        if not converged:
            em = self.estimator
            assert isinstance(em, EM), "only EM may not converge"
            found.append(not_converged(em.max_iter, em.tol))
        if not identified:
            sigma, floor = bbse_conditioning(self.confusion_, self.n_source_)
            found.append(singular(sigma, floor))
        if 0 < n_target < self.n_classes_:
            found.append(small_sample(n_target, self.n_classes_))
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
        return reweight(self.source_proba(logits), self.weights_, self.target_priors_)

    # ----- export ------------------------------------------------------------------------
    def to_module(self) -> nn.Module:
        """The adapted map as a torch module: the calibrator's module (or a softmax), then
        the reweighting (the weights a float64 buffer; see :class:`PriorWeights`)."""
        from calibkit.calibrators.priors.label_shift_module import PriorWeights

        self._check_is_adapted()
        return PriorWeights(self._probs_module(), self.weights_, self.target_priors_).eval()

    # ----- persistence ------------------------------------------------------------------
    def _check_state(self) -> None:
        """A loaded state as :meth:`fit` and :meth:`adapt` can leave it: the source priors
        those of the counts (the confusion matrix's column sums, counts of at least one of
        the ``n_source_`` rows each: no prior below ``1 / n_source_``), the adapt
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
        self._check_adapt_state()
        self._check_calibrator_state()

    def _check_adapt_state(self) -> None:
        present = [name for name in (*ADAPT_STATE, *ADAPT_FLAGS) if hasattr(self, name)]
        if not present:
            return
        for name in (*ADAPT_STATE, *ADAPT_FLAGS):
            if not hasattr(self, name):
                beside = ", ".join(f"state.{n}" for n in present)
                raise InputError(f"state.{name}", f"this field beside {beside}", MISSING)
        check_priors(self.target_priors_, "state.target_priors_", self.n_classes_)
        em = self.estimator if isinstance(self.estimator, EM) else None
        max_iter = em.max_iter if em is not None else 0
        if em is not None and self.n_iter_ > max_iter:
            expected = f"at most params.estimator.max_iter = {max_iter} iterations"
            raise InputError("state.n_iter_", expected, str(self.n_iter_))
        estimated_by_em = em is not None and self.n_target_ > 0
        if not self.converged_ and not (estimated_by_em and self.n_iter_ == max_iter):
            expected = "true for BBSE or given priors"
            if em is not None:
                expected = f"true, or false for EM after params.estimator.max_iter = {max_iter} "
                expected += "iterations"
            got = f"false with estimator {self.estimator.name!r}, {self.n_iter_} iterations"
            raise InputError("state.converged_", expected, got)
        if not estimated_by_em:
            if self.n_iter_ != 0:
                expected = "0 for given priors or BBSE"
                raise InputError("state.n_iter_", expected, str(self.n_iter_))
        elif self.n_iter_ < 1:
            raise InputError("state.n_iter_", "at least 1 EM iteration", str(self.n_iter_))
        bbse = isinstance(self.estimator, BBSE) and self.n_target_ > 0
        if bbse:
            sigma, floor = bbse_conditioning(self.confusion_, self.n_source_)
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
