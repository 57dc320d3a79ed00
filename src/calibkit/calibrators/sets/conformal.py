"""Split conformal prediction sets on top of any calibrator's probabilities.

:class:`ConformalClassifier` turns a classifier's logits into *prediction sets* that hold
the true class with probability at least ``1 - alpha`` on exchangeable data (Vovk et al.
2005; Angelopoulos & Bates 2021, "A gentle introduction"). ``fit(logits, labels)`` on a
calibration set computes a non-conformity score ``s(x, y)`` for each row's true class and
keeps its conformal quantile ``q``: the ``k``-th smallest of the ``n`` scores, ``k =
ceil((n + 1)(1 - alpha))``. ``predict_set(logits)`` returns the boolean mask ``s(x, y) <=
q`` of shape ``(n, K)``. Then ``1 - alpha <= P(y in set) <= 1 - alpha + 1 / (n + 1)``, the
upper bound when scores have no ties (the randomised variants make them tie-free).

The score (``conformity_score``) is an object of
:data:`~calibkit.calibrators.sets.conformal_scores.SCORES`, whose module gives their formulas
and tie rule: ``LAC()`` (also called THR; no randomised variant), ``APS()`` (the default),
``RAPS(penalty=..., k_reg=...)`` and ``SAPS(weight=...)``; a score's name (``"raps"``)
means that score with its defaults.

Class-conditional (Mondrian) conformal (``mondrian=True``, Vovk 2012): one quantile per
class, from that class's calibration rows only; class ``y`` enters a set when ``s(x, y) <=
q_y``. Each class then has its own guarantee ``P(y in set | y = c) >= 1 - alpha``, at the
price of needing ``n_c >= 1 / alpha - 1`` rows of every class.

A calibration part too small for ``alpha`` (``k > n``: fewer than ``1 / alpha - 1`` rows)
has an infinite quantile: every set would be the full set of classes, which holds the
guarantee trivially and says nothing. ``fit`` refuses it with an InputError saying how many
rows are needed, unless ``allow_full_sets=True`` (then ``thresholds_`` is ``inf`` and the
sets are full).

The calibrator and the rows (the choice, and its effect on the guarantee)
    ``calibrator`` is ``None`` (softmax of the logits), a registered calibrator name (e.g.
    ``"temperature"``) or a :class:`~calibkit.calibrators.base.Calibrator`. The guarantee
    needs the quantile's rows to be exchangeable with the test rows *given the
    calibrator*, so by default (``calibrator_split=0.5``) a seeded stratified half of the
    calibration rows fits the calibrator and the other half gives the quantile: the bound
    holds exactly, with ``n`` the quantile's rows (``n_calibration_``). With
    ``calibrator_split=None`` both use every row: more rows for each, but the calibrator
    has seen the quantile's rows, so the guarantee is no longer formal (for temperature
    scaling's one parameter the effect is negligible in practice). A calibrator given
    already fitted is used as it is (it must not have seen the calibration rows), and
    every row gives the quantile; an unfitted one is copied, never changed.

Selective prediction (answer or abstain at a coverage, with the risk of the rows answered)
reads the calibration rows the fit keeps: :mod:`~calibkit.calibrators.sets.selective`.

Randomisation
    ``randomized=True`` (APS, RAPS, SAPS) draws ``U`` from ``seed``: at fit for the
    calibration rows; in ``predict_set`` from a second stream of ``seed`` unless the
    caller passes ``u`` (one value per row). The exported module of a randomised set
    takes ``u`` as a second input, so the caller owns the randomness.

>>> rng = np.random.default_rng(0)
>>> logits = rng.normal(size=(400, 4)) * 3
>>> labels = np.array([rng.choice(4, p=np.exp(z) / np.exp(z).sum()) for z in logits])
>>> cp = ConformalClassifier(conformity_score=APS(), alpha=0.1).fit(logits, labels)
>>> sets = cp.predict_set(logits[:3])
>>> sets.dtype, sets.shape, cp.n_calibration_
(dtype('bool'), (3, 4), 400)
>>> ConformalClassifier(conformity_score="top")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
calibkit.core.errors.UnknownNameError: conformity_score: expected one of ..., got 'top'
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING, ClassVar, Self

import numpy as np
import numpy.typing as npt

from calibkit.calibrators.base import Calibrator
from calibkit.calibrators.fitted import (
    CalibratorSpec,
    FittedObject,
    OnCalibrator,
)
from calibkit.calibrators.sets.conformal_scores import (
    APS,
    SCORE,
    SCORE_TOL,
    SCORES,
    ConformalScore,
)
from calibkit.calibrators.sets.selective import Answers, SelectiveRisk, selective_risk
from calibkit.core.errors import InputError
from calibkit.core.fitted_state import Array
from calibkit.core.outputs import check_labels
from calibkit.core.params import param
from calibkit.core.splits import stratified_split
from calibkit.core.validation import (
    MISCOVERAGE,
    SEED,
    Boolean,
    Constraints,
    Integer,
    NoneOr,
    Real,
)

if TYPE_CHECKING:
    from torch import nn

F64 = npt.NDArray[np.float64]
Mask = npt.NDArray[np.bool_]
#: The scores with a randomised (uniform ``U``) variant.
RANDOMIZABLE = tuple(name for name in SCORES.names() if SCORES.get(name).randomizable)


def conformal_quantile_rank(n: int, alpha: float) -> int:
    """``k = ceil((n + 1)(1 - alpha))``, computed exactly on the float ``alpha``.

    >>> conformal_quantile_rank(99, 0.1), conformal_quantile_rank(9, 0.1)
    (90, 9)
    """
    return math.ceil((n + 1) * (1 - Fraction(alpha)))


def rows_needed(alpha: float) -> int:
    """The fewest calibration rows with a finite quantile: the least ``n`` with ``k <= n``.

    >>> rows_needed(0.1), rows_needed(0.01), rows_needed(0.3)
    (9, 99, 3)
    """
    return max(1, math.ceil(1 / Fraction(alpha) - 1))


def conformal_threshold(scores: F64, alpha: float) -> float:
    """The ``ceil((n + 1)(1 - alpha))``-th smallest of ``scores``; ``inf`` past ``n``.

    >>> conformal_threshold(np.arange(10.0), 0.2), conformal_threshold(np.arange(3.0), 0.2)
    (8.0, inf)
    """
    k = conformal_quantile_rank(scores.shape[0], alpha)
    return math.inf if k > scores.shape[0] else float(np.partition(scores, k - 1)[k - 1])


def _refuse_at(field: str, expected: str, values: F64, bad: Mask) -> None:
    """An InputError naming ``field`` and its first ``bad`` entry, if any."""
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(field, expected, f"{float(values[i])!r} at index {i}")


class ConformalClassifier(OnCalibrator):
    """Split (or class-conditional) conformal prediction sets; see the module docstring.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(2000, 4)) * 3
    >>> y = z.argmax(1)
    >>> flip = rng.random(2000) < 0.2
    >>> y[flip] = rng.integers(0, 4, flip.sum())
    >>> from calibkit.calibrators.sets.conformal_scores import RAPS
    >>> cp = ConformalClassifier(RAPS(penalty=0.1), alpha=0.1, calibrator="temperature")
    >>> sets = cp.fit(z, y).predict_set(z[:5])
    >>> sets.shape, sets.dtype
    ((5, 4), dtype('bool'))
    """

    kind: ClassVar[str] = "sets"

    conformity_score: ConformalScore = param(
        default=APS(),
        check=SCORE,
        doc="The non-conformity score: an object of "
        ":data:`~calibkit.calibrators.sets.conformal_scores.SCORES` with its parameters "
        '(``RAPS(penalty=0.1, k_reg=1)``), or a score\'s name for its defaults (``"raps"``).',
    )
    alpha: float = param(
        default=0.1,
        check=MISCOVERAGE,
        doc="Miscoverage: sets hold the true class with probability >= 1 - alpha.",
    )
    calibrator: str | Calibrator | None = param(
        default=None,
        check=CalibratorSpec(),
        doc="What makes the probabilities (None: the softmax of the logits).",
    )
    calibrator_split: float | None = param(
        default=0.5,
        check=NoneOr(Real(0.0, 1.0, closed="neither")),
        doc="Fraction of the calibration rows that fit the calibrator (the rest give the "
        "quantile); None: the same rows for both (no formal guarantee). Unused without a "
        "calibrator to fit.",
    )
    mondrian: bool = param(
        default=False, check=Boolean(), doc="One quantile per class (class-conditional coverage)."
    )
    randomized: bool = param(
        default=False,
        check=Boolean(),
        doc="The uniform-``U`` variant of the score (APS, RAPS, SAPS only).",
    )
    # Sets that are all full say nothing: only a Python caller, who asked for them in so
    # many words, gets them; the command line refuses a part too small for alpha instead.
    allow_full_sets: bool = param(
        default=False,
        check=Boolean(),
        cli=False,
        doc="Accept a calibration part too small for ``alpha`` (the sets are then full).",
    )
    seed: int = param(default=0, check=SEED, doc="Seed of the calibrator split and of ``U``.")

    state_constraints: ClassVar[Constraints] = {
        "calibrator_": FittedObject(),
        "thresholds_": Array(shape=("k",), allow_inf=True),
        "n_calibration_": Integer(low=1),
        "class_counts_": Array("int64", shape=("k",), low=0),
        "label_scores_": Array(shape=("n",), sorted=True),
        "score_labels_": Array("int64", shape=("n",), low=0),
        "confidences_": Array(shape=("n",), low=0.0, high=1.0),
        "errors_": Array("int64", shape=("n",), low=0, high=1),
    }
    #: The score the stored scores and quantile were computed with (the score with its
    #: parameters, and its variant): recorded by the fit (``fitted_with_``), so a file whose
    #: score was edited since is refused, naming the parameter.
    fitted_with: ClassVar[tuple[str, ...]] = ("conformity_score", "randomized")

    def _check_params(self) -> None:
        if self.randomized and not self.conformity_score.randomizable:
            name = self.conformity_score.name
            expected = f"randomized=False for {name!r} (randomised: " + ", ".join(RANDOMIZABLE)
            raise InputError("randomized", expected + ")", "True")

    # ----- fit and predict ---------------------------------------------------------------
    def fit(
        self,
        logits: object,
        labels: object,
        sample_weight: object = None,
        *,
        input_kind: str = "logits",
        **metadata: object,
    ) -> Self:
        """Fit the calibrator (on its part) and the quantile(s) on the calibration rows (the
        inputs as :meth:`~calibkit.calibrators.fitted.OnCalibrator._fit_inputs` says)."""
        with self._fit_or_unchanged():
            why = " (unweighted ranks)"
            kind, out = self._fit_inputs(logits, labels, sample_weight, input_kind, metadata, why)
            z, y = np.asarray(out.as_logits(), dtype=np.float64), out.labels
            quantile_rows, fit_rows = self._split_rows(y)
            self._check_enough(np.bincount(y[quantile_rows], minlength=out.n_classes))
            calibrator, fitted = CalibratorSpec.resolve(self.calibrator)
            if fitted:
                self._check_given_kind(calibrator, kind)
            if calibrator is not None and not fitted:
                calibrator.fit(z[fit_rows], y[fit_rows], input_kind=kind)
            if calibrator is not None and calibrator.n_classes_ != out.n_classes:
                expected = f"a calibrator of {out.n_classes} classes, as the logits"
                raise InputError("calibrator", expected, f"one of {calibrator.n_classes_}")
            self.n_classes_ = out.n_classes
            self._record_params()
            self.calibrator_ = calibrator
            probs = self._probs(z[quantile_rows])
            yq = y[quantile_rows]
            u = self._draw(yq.shape[0], 0) if self.randomized else None
            label_scores = np.take_along_axis(
                self.conformity_score.numpy(probs, u), yq[:, None], axis=1
            )[:, 0]
            counts = np.bincount(yq, minlength=self.n_classes_)
            groups = (
                [label_scores[yq == c] for c in range(self.n_classes_)]
                if self.mondrian
                else [label_scores]
            )
            values = [conformal_threshold(g, self.alpha) for g in groups]
            self.thresholds_ = np.array(
                values if self.mondrian else values * self.n_classes_, dtype=np.float64
            )
            self.n_calibration_ = int(yq.shape[0])
            self.class_counts_ = counts.astype(np.int64)
            by_score = np.argsort(label_scores, kind="stable")
            self.label_scores_ = np.asarray(label_scores[by_score], dtype=np.float64)
            self.score_labels_ = yq[by_score].astype(np.int64)
            confidence = probs.max(axis=1)
            by_confidence = np.argsort(-confidence, kind="stable")  # most confident first
            self.confidences_ = np.asarray(confidence[by_confidence], dtype=np.float64)
            self.errors_ = (probs.argmax(axis=1) != yq)[by_confidence].astype(np.int64)
        return self

    def _split_rows(self, y: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.intp], ...]:
        """The rows that give the quantile and those that fit the calibrator (the same rows
        unless a calibrator is fitted here on its ``calibrator_split``)."""
        rows = np.arange(y.shape[0])
        spec = self.calibrator
        if spec is None or self.calibrator_split is None or CalibratorSpec.resolve(spec)[1]:
            return rows, rows
        if y.shape[0] < 2:
            raise InputError("labels", "at least 2 calibration rows to split", "1")
        quantile, fit = stratified_split(
            y, self.calibrator_split, self.seed, every_class_in_both=False
        )
        return quantile, fit

    def check_calibration_size(
        self, labels: object, n_classes: int | None = None, *, remedy: str = "allow_full_sets=True"
    ) -> None:
        """Refuse, before any work, calibration labels too few for ``alpha``: the InputError
        (argument ``"calibration part"``) that :meth:`fit` raises first, fitting nothing.

        Parameters
        ----------
        labels : array-like of int
            The calibration labels :meth:`fit` would get.
        n_classes : int, optional
            The number of classes (default: the largest label + 1); with ``mondrian``, a
            class without rows has no quantile.
        remedy : str
            The way out the message offers besides more rows: ``allow_full_sets=True`` in
            Python; a caller that does not offer that parameter (a workflow, the command
            line) names its own (``"a larger alpha"``).

        Returns
        -------
        None

        Examples
        --------
        >>> cp = ConformalClassifier(alpha=0.01, calibrator=None)
        >>> cp.check_calibration_size(np.arange(50) % 2, remedy="a larger alpha")
        ... # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        calibkit.core.errors.InputError: calibration part: expected at least 99 ..., got 50 ...
        """
        y = check_labels(labels, n_classes=n_classes)
        k = int(y.max()) + 1 if n_classes is None else n_classes
        quantile_rows, _ = self._split_rows(y)
        self._check_enough(np.bincount(y[quantile_rows], minlength=k), remedy)

    def _check_enough(
        self, counts: npt.NDArray[np.int64], remedy: str = "allow_full_sets=True"
    ) -> None:
        """Refuse quantile parts (each class's with ``mondrian``, else all ``counts``
        together) of fewer rows than ``alpha`` needs, unless ``allow_full_sets``."""
        need = rows_needed(self.alpha)
        counts = counts if self.mondrian else np.array([int(counts.sum())])
        short = np.flatnonzero(counts < need)
        if short.size == 0 or self.allow_full_sets:
            return
        rows = "calibration rows for the quantile"
        where = f"{int(counts[short[0]])} {rows}"
        if self.mondrian:
            where = f"{int(counts[short[0]])} {rows} of class {int(short[0])}"
        split = " (after the calibrator's split)" if self.calibrator_split is not None else ""
        raise InputError(
            "calibration part",
            f"at least {need} {rows}{' per class' if self.mondrian else ''} for alpha="
            f"{self.alpha:g} (ceil((n + 1)(1 - alpha)) <= n), or {remedy}",
            where + (split if self.calibrator is not None else ""),
        )

    def quantile_rows(self, n: int) -> int:
        """Of ``n`` calibration rows, how many :meth:`fit` gives the quantile: all of them,
        or those left once the calibrator's part (``calibrator_split``) is split off when a
        calibrator is to be fitted. Compared with :func:`rows_needed` before any work.

        >>> ConformalClassifier(calibrator="temperature").quantile_rows(201)
        101
        >>> ConformalClassifier().quantile_rows(201)
        201
        """
        calibrator, fitted = CalibratorSpec.resolve(self.calibrator)
        if calibrator is None or fitted or self.calibrator_split is None:
            return int(n)
        return int(n) - round(self.calibrator_split * int(n))  # as stratified_split counts

    def _draw(self, n: int, stream: int) -> F64:
        return np.random.default_rng([self.seed, stream]).random(n)

    def predict_proba(self, logits: object, **metadata: object) -> F64:
        """The probabilities the scores are computed from (the calibrator's, or softmax)."""
        self._route(metadata)
        return self._probs(self._check_predict_input(logits))

    def predict_scores(self, logits: object, u: object = None) -> F64:
        """The non-conformity score of every class, ``(N, K)`` (``u`` as in predict_set)."""
        z = self._check_predict_input(logits)
        return self.conformity_score.numpy(self._probs(z), self._u(u, z.shape[0]))

    def predict_set(
        self, logits: object, u: object = None, *, alpha: float | None = None, **metadata: object
    ) -> Mask:
        """The prediction sets as a boolean mask ``(N, K)``.

        ``u``: for a randomised score, one uniform value in [0, 1) per row (default:
        drawn from ``seed``'s prediction stream, the same for the same N); refused otherwise.
        ``alpha``: another miscoverage than the fitted one (:meth:`thresholds`).
        """
        self._route(metadata)
        self.check_is_fitted()
        thresholds = self.thresholds_ if alpha is None else self.thresholds(alpha)
        return self.predict_scores(logits, u) <= thresholds[None, :]

    # ----- the three answers ---------------------------------------------------------------
    def thresholds(self, alpha: float) -> F64:
        """Each class's conformal quantile at miscoverage ``alpha``, from the stored scores
        of the calibration rows (``thresholds_`` is the one at the fitted ``alpha``)."""
        self.check_is_fitted()
        a = MISCOVERAGE.check("alpha", alpha)
        if self.mondrian:
            parts = [self.label_scores_[self.score_labels_ == c] for c in range(self.n_classes_)]
        else:
            parts = [self.label_scores_]
        counts = np.array([p.shape[0] for p in parts], dtype=np.int64)
        if not self.allow_full_sets and (counts < rows_needed(a)).any():
            where = " per class" if self.mondrian else ""
            raise InputError(
                "alpha",
                f"an alpha whose quantile the {int(counts.min())} calibration rows{where} "
                f"can give (at least {rows_needed(a)} rows needed for alpha={a:g}), or "
                "allow_full_sets=True",
                f"{a:g}",
            )
        values = [conformal_threshold(p, a) for p in parts]
        return np.array(values if self.mondrian else values * self.n_classes_, dtype=np.float64)

    def selective(self, coverage: float) -> SelectiveRisk:
        """Selective prediction at ``coverage``: the confidence threshold that keeps that
        fraction of the calibration rows (the most confident ones), and the risk (error
        rate) among the rows kept, with its one-sided 95% Clopper-Pearson upper bound
        (:func:`~calibkit.calibrators.sets.selective.selective_risk`).

        The rows are the quantile's (held out from the calibrator when it was fitted here),
        so the risk is an honest estimate for exchangeable test rows.
        """
        self.check_is_fitted()
        return selective_risk(self.confidences_, self.errors_, coverage)

    def predict_accept(self, logits: object, coverage: float) -> Mask:
        """Which rows to answer (``True``) at ``coverage``: their calibrated top-label
        confidence is at or above :meth:`selective`'s threshold; the others abstain."""
        threshold = self.selective(coverage).threshold
        return np.asarray(self.predict_proba(logits).max(axis=1) >= threshold)

    def predict_all(
        self,
        logits: object,
        u: object = None,
        *,
        alpha: float | None = None,
        coverage: float,
    ) -> Answers:
        """The three answers at once: calibrated probabilities, prediction sets at
        ``alpha`` (default the fitted one) and whether to answer at ``coverage``."""
        z = self._check_predict_input(logits)
        probs = self._probs(z)
        thresholds = self.thresholds_ if alpha is None else self.thresholds(alpha)
        scores = self.conformity_score.numpy(probs, self._u(u, z.shape[0]))
        accept = probs.max(axis=1) >= self.selective(coverage).threshold
        return Answers(probs, scores <= thresholds[None, :], np.asarray(accept))

    def _u(self, u: object, n: int) -> F64 | None:
        if not self.randomized:
            if u is not None:
                raise InputError("u", "None for a non-randomised score", "values")
            return None
        if u is None:
            return self._draw(n, 1)
        import torch

        from calibkit.calibrators.sets.conformal_module import check_uniform

        try:
            arr = np.asarray(u, dtype=np.float64)
        except (TypeError, ValueError):
            raise InputError("u", f"{n} values in [0, 1), one per row", "no numbers") from None
        check_uniform(torch.tensor(arr), n)  # the modules' check, the same message
        return arr

    # ----- export ------------------------------------------------------------------------
    def to_module(self, *, alpha: float | None = None, coverage: float | None = None) -> nn.Module:
        """The sets as a torch module: logits ``(N, K)`` in (and ``u`` ``(N,)`` for a
        randomised score), a bool mask out (see
        :class:`~calibkit.calibrators.sets.conformal_module.ConformalSets`); at ``alpha`` if given.

        With ``coverage``, the three answers of :meth:`predict_all` in one module: it
        returns ``(probs, sets, accept)`` (float64 ``(N, K)``, bool ``(N, K)``, bool
        ``(N,)``; :class:`~calibkit.calibrators.sets.conformal_module.ConformalPredictor`).
        """
        from calibkit.calibrators.sets import conformal_module as cm

        self.check_is_fitted()
        probs = self._probs_module()
        thresholds = self.thresholds_ if alpha is None else self.thresholds(alpha)
        if coverage is not None:
            threshold = self.selective(coverage).threshold
            answers = cm.RandomizedConformalPredictor if self.randomized else cm.ConformalPredictor
            return answers(
                probs, self.conformity_score, thresholds, threshold, self.randomized
            ).eval()
        kind = cm.RandomizedConformalSets if self.randomized else cm.ConformalSets
        return kind(probs, self.conformity_score, thresholds, self.randomized).eval()

    # ----- persistence ------------------------------------------------------------------
    def _check_state(self) -> None:
        n = self.n_calibration_
        if self.label_scores_.shape[0] != n or self.confidences_.shape[0] != n:
            expected = f"n_calibration_={n} stored rows"
            raise InputError("state.label_scores_", expected, "another count")
        if (self.score_labels_ >= self.n_classes_).any():
            raise InputError("state.score_labels_", f"labels below {self.n_classes_}", "more")
        counts = np.bincount(self.score_labels_, minlength=self.n_classes_)
        if not np.array_equal(counts, self.class_counts_):
            raise InputError("state.score_labels_", "the labels class_counts_ counts", "others")
        if (np.diff(self.confidences_) > 0).any():
            raise InputError("state.confidences_", "non-increasing values", "an increase")
        self._check_calibrator_state()
        self._check_thresholds()

    def _check_thresholds(self) -> None:
        """Refuse loaded thresholds no fit gives: each in the score's range
        (:meth:`~calibkit.calibrators.sets.conformal_scores.ConformalScore.value_range`, the
        one declaration), ``inf`` exactly where ``allow_full_sets=True`` let too few rows
        through, one value for every class unless ``mondrian``, and the quantile of the
        stored calibration scores at ``alpha``."""
        low, high = self.conformity_score.value_range(self.n_classes_)
        on = f"the range of the {self.conformity_score.name!r} score on {self.n_classes_} classes"
        span = f"[{low:g}, {high:g}] ({on})"
        short = self._short_parts()
        for field in ("thresholds_", "label_scores_"):
            values = getattr(self, field)
            outside = (values < low - SCORE_TOL) | (values > high + SCORE_TOL)
            if field == "thresholds_":  # inf where allowed: checked below
                outside &= ~(np.isposinf(values) & short)
            _refuse_at(f"state.{field}", f"values in {span}", values, outside)
        need = f"{rows_needed(self.alpha)} calibration rows for alpha={self.alpha:g}"
        full = np.isposinf(self.thresholds_)
        if not self.allow_full_sets and short.any():
            field = "state.class_counts_" if self.mondrian else "state.n_calibration_"
            raise InputError(field, f"at least {need} (allow_full_sets=False)", "fewer")
        expected = f"inf (no finite quantile: fewer than {need}, allow_full_sets=True)"
        _refuse_at("state.thresholds_", expected, self.thresholds_, short & ~full)
        if not self.mondrian and (self.thresholds_ != self.thresholds_[0]).any():
            expected = "one value for every class (mondrian=False)"
            _refuse_at(
                "state.thresholds_",
                expected,
                self.thresholds_,
                self.thresholds_ != self.thresholds_[0],
            )
        quantiles = self.thresholds(self.alpha)
        expected = (
            f"the quantiles of the stored label_scores_ at alpha={self.alpha:g}, "
            f"{quantiles.tolist()}"
        )
        _refuse_at("state.thresholds_", expected, self.thresholds_, quantiles != self.thresholds_)

    def _short_parts(self) -> Mask:
        """Per class, whether its quantile's part (its own rows with ``mondrian``, else every
        row) has fewer rows than ``alpha`` needs; a loaded state's check."""
        if int(self.class_counts_.sum()) != self.n_calibration_:
            expected = f"counts summing to n_calibration_ = {self.n_calibration_}"
            raise InputError("state.class_counts_", expected, str(int(self.class_counts_.sum())))
        counts = (
            self.class_counts_ if self.mondrian else np.full(self.n_classes_, self.n_calibration_)
        )
        return np.asarray(counts < rows_needed(self.alpha))
