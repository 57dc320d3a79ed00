"""Any scikit-learn classifier calibrated by any calibkit method, with cross-fitting.

:class:`CalibratedClassifier` does what scikit-learn's ``CalibratedClassifierCV`` does, with
every registered calibrator (or a configured :class:`~calibkit.calibrators.base.Calibrator`):

``cv="prefit"``
    ``estimator`` is already fitted; one calibrator is fitted on its scores of ``X``.
    ``classes_`` are the estimator's: labels are encoded against them, so a calibration
    set may lack a class (the calibrator still sees every column of the estimator's
    scores), and a label the estimator does not know is refused.
``cv=k`` (an int, stratified k-fold) or a splitter (``KFold(...)``, ...), ``ensemble=True``
    for each split, a clone of ``estimator`` is fitted on the training part and a
    calibrator on that clone's scores of the held-out part; ``predict_proba`` averages the
    k calibrated models' probabilities.
``ensemble=False``
    one calibrator is fitted on the cross-validated scores of all of ``X``
    (``cross_val_predict``), and ``estimator`` is refitted on all of ``X``.

The scores a calibrator sees are logits, chosen as scikit-learn chooses its response:
``decision_function`` where the estimator has one (a binary problem's 1-D score is the
positive class's logit against a zero logit, as calibkit reads 1-D logits), else the log of
``predict_proba`` (probabilities below the smallest normal float are raised to it, so that
no logit is infinite), declared as such to the calibrator's fit (``input_kind="probs"``:
a map that is not shift-invariant, such as vector scaling, takes their log-softmax).
``sample_weight`` goes to the estimator's ``fit`` where it takes one and to the
calibrator (on the held-out part). The per-row inputs a calibrator declares
(its ``fit_metadata``: ``groups`` for the group calibrators) are given by keyword to
``fit`` and ``predict_proba`` and routed to the calibrator, cut to the held-out rows of
each fold like ``sample_weight``; an input the calibrator does not declare is refused.

``method="sigmoid"`` is scikit-learn's ``"sigmoid"`` (:class:`SigmoidOneVsRest`): one Platt
map per class (one for two classes) on the raw response (decision values or probabilities,
not their logits), fitted to Platt's smoothed targets (``PlattScaling(targets="platt")``),
the class probabilities then divided by their sum; it gives ``CalibratedClassifierCV``'s
probabilities on the same folds. Other differences from ``CalibratedClassifierCV``:
calibkit's ``"platt"`` is the maximum-likelihood fit on the positive-class logit, so it
differs from ``"sigmoid"`` by about ``1 / N``; ``"isotonic"`` on a ``decision_function``
fits the raw scores in scikit-learn and the softmax probabilities in calibkit (the same map
for a binary problem's probabilities, not for multi-class scores); temperature scaling
agrees.
"""

from __future__ import annotations

from collections.abc import Iterable
from inspect import signature
from typing import Any, Literal, Self

import numpy as np
from scipy.sparse import issparse
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.model_selection import StratifiedKFold, check_cv, cross_val_predict
from sklearn.utils import get_tags
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, column_or_1d

from calibkit.calibrators.base import CALIBRATORS, F64, Calibrator
from calibkit.calibrators.estimator import check_sample_weight
from calibkit.calibrators.logit.binary import PlattScaling
from calibkit.core.errors import InputError
from calibkit.core.outputs import as_outputs, label_types
from calibkit.core.validation import check_bool, check_int

#: The kinds of calibrator a ``method`` name may be (those that read the estimator's logits).
KINDS = ("logits", "groups")
#: The smallest log-probability a ``predict_proba`` score becomes (log of the smallest
#: normal float64).
MIN_LOG_PROB = float(np.log(np.finfo(np.float64).tiny))


def response_method(estimator: Any) -> str:
    """``"decision_function"`` if ``estimator`` has one, else ``"predict_proba"``."""
    for method in ("decision_function", "predict_proba"):
        if hasattr(estimator, method):
            return method
    raise InputError(
        "estimator", "a classifier with decision_function or predict_proba", repr(estimator)
    )


def input_kind_of(method: str) -> str:
    """The kind of input the logits of the response ``method`` are, as declared to a
    calibrator's fit: ``"probs"`` for the log of ``predict_proba``, else ``"logits"``.

    >>> input_kind_of("predict_proba"), input_kind_of("decision_function")
    ('probs', 'logits')
    """
    return "probs" if method == "predict_proba" else "logits"


def scores_to_logits(scores: F64, method: str) -> F64:
    """Logits from a response: decision values as they are, probabilities as logs."""
    s = np.asarray(scores, dtype=np.float64)
    if method == "predict_proba":
        return np.maximum(np.log(np.maximum(s, np.finfo(np.float64).tiny)), MIN_LOG_PROB)
    return s


def estimator_logits(estimator: Any, x: Any) -> F64:
    """The logits a calibrator sees for ``estimator`` on ``x`` (see the module docstring)."""
    method = response_method(estimator)
    return scores_to_logits(getattr(estimator, method)(x), method)


def raw_columns(scores: Any) -> F64:
    """A response as columns, as scikit-learn's ``"sigmoid"`` reads it: one column (the
    positive class's) for two classes, one per class otherwise."""
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim == 1:
        return s[:, None]
    return s[:, 1:] if s.shape[1] == 2 else s


class SigmoidOneVsRest:
    """scikit-learn's ``"sigmoid"``: Platt's fit per class on the raw response columns.

    Column ``k`` of :func:`raw_columns` gets ``PlattScaling(targets="platt")`` against
    "the class is ``k``" (with one column, "the class is 1"); the probabilities of several
    columns are divided by their sum (uniform where they are all 0).

    Examples
    --------
    >>> f = np.array([-2.0, -1.0, 0.0, 1.0, 2.0, 3.0])[:, None]
    >>> sig = SigmoidOneVsRest().fit(f, np.array([0, 1, 0, 0, 1, 1]))
    >>> sig.predict_proba(f).shape
    (6, 2)
    """

    def fit(self, columns: F64, labels: Any, sample_weight: F64 | None = None) -> Self:
        """One Platt map per column (see the class)."""
        labels = np.asarray(labels)
        classes = [1] if columns.shape[1] == 1 else range(columns.shape[1])
        self.maps_ = [
            _platt(_as_logit(col), (labels == k) * 1, sample_weight)
            for k, col in zip(classes, columns.T, strict=True)
        ]
        return self

    def predict_proba(self, columns: F64) -> F64:
        """The calibrated class probabilities, ``(N, K)``."""
        pairs = zip(self.maps_, columns.T, strict=True)
        p = np.column_stack([m.predict_proba(_as_logit(col))[:, 1] for m, col in pairs])
        if p.shape[1] == 1:
            return np.column_stack([1.0 - p[:, 0], p[:, 0]])
        total = p.sum(axis=1, keepdims=True)
        uniform = np.full_like(p, 1.0 / p.shape[1])
        return np.asarray(np.divide(p, total, out=uniform, where=total != 0), dtype=np.float64)


def _platt(logits: F64, outcome: Any, sample_weight: F64 | None) -> PlattScaling:
    """Platt's fit of one column; a class without a row (all outcomes 0) is fitted too, as
    scikit-learn does: Platt's smoothed targets (``1 / (n + 2)``) keep the fit finite."""
    platt = PlattScaling(targets="platt")
    if np.unique(outcome).size == 2:
        return platt.fit(logits, outcome, sample_weight)
    weights = None if sample_weight is None else check_sample_weight(sample_weight, len(outcome))
    platt.n_classes_ = 2
    platt._fit(as_outputs(outcome, logits=logits), weights)
    return platt


def _as_logit(column: F64) -> F64:
    """A score as two-class logits ``[0, s]``: Platt's positive-class logit is ``s``."""
    return np.column_stack([np.zeros_like(column), column])


class CalibratedClassifier(ClassifierMixin, BaseEstimator):  # type: ignore[misc]
    """A scikit-learn classifier whose probabilities a calibkit calibrator calibrates.

    Parameters
    ----------
    estimator : scikit-learn classifier
        With ``decision_function`` or ``predict_proba``; already fitted for
        ``cv="prefit"``.
    method : str or Calibrator
        A registered method name (``calibkit.CALIBRATORS.names()``), ``"sigmoid"``
        (scikit-learn's, :class:`SigmoidOneVsRest`) or a configured calibrator, cloned for
        each fit.
    cv : "prefit", int, splitter or iterable
        ``"prefit"``, the number of stratified folds (>= 2), an object with ``split``, or
        (train, test) index pairs.
    ensemble : bool
        Average the calibrated fold models (True) or fit one calibrator on cross-validated
        scores (False); ignored for ``"prefit"``.

    Attributes
    ----------
    classes_ : ndarray
        The class labels, sorted.
    calibrated_classifiers_ : list of (estimator, Calibrator or SigmoidOneVsRest)
        The fitted pairs whose probabilities ``predict_proba`` averages.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.linear_model import LogisticRegression
    >>> X, y = make_classification(n_samples=300, random_state=0)
    >>> clf = CalibratedClassifier(LogisticRegression(), method="temperature", cv=3).fit(X, y)
    >>> clf.predict_proba(X[:2]).shape, len(clf.calibrated_classifiers_)
    ((2, 2), 3)
    >>> g = np.arange(300) % 2  # each row's group, routed to a group calibrator
    >>> gts = CalibratedClassifier(LogisticRegression(), method="temperature_groupwise", cv=3)
    >>> gts.fit(X, y, groups=g).predict_proba(X[:2], groups=g[:2]).shape
    (2, 2)
    """

    def __init__(
        self,
        estimator: Any,
        method: str | Calibrator = "temperature",
        cv: Literal["prefit"] | int | Any = 5,
        ensemble: bool = True,
    ) -> None:
        self.estimator = estimator
        self.method = method
        self.cv = cv
        self.ensemble = ensemble

    def _calibrator(self) -> Any:
        if self.method == "sigmoid":
            return SigmoidOneVsRest()
        if isinstance(self.method, Calibrator):
            return clone(self.method)
        if not isinstance(self.method, str):
            raise InputError("method", "a calibrator name or a Calibrator", repr(self.method))
        if CALIBRATORS.kind_of(self.method) not in KINDS:
            expected = "a calibrator of logits (kinds " + ", ".join(KINDS) + ")"
            raise InputError("method", expected, f"{self.method!r}")
        return CALIBRATORS.create(self.method)

    def _features(self, estimator: Any, x: Any) -> F64:
        """What the calibrator reads: the raw response for ``"sigmoid"``, else logits."""
        if self.method == "sigmoid":
            return raw_columns(getattr(estimator, response_method(estimator))(x))
        return estimator_logits(estimator, x)

    def _splitter(self) -> Any:
        if hasattr(self.cv, "split"):
            return self.cv
        if isinstance(self.cv, Iterable) and not isinstance(self.cv, str):
            return check_cv(self.cv)  # (train, test) index pairs
        return StratifiedKFold(check_int("cv", self.cv, low=2))

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = get_tags(self.estimator).input_tags.sparse
        return tags

    def fit(self, X: Any, y: Any, sample_weight: Any = None, **metadata: Any) -> Self:
        """Fit the estimator(s) and calibrator(s) on ``X`` and labels ``y``; ``metadata``:
        the per-row inputs the calibrator declares (e.g. ``groups=``; see the class)."""
        targets = _check_targets(y)
        prefit = isinstance(self.cv, str)
        if prefit and self.cv != "prefit":
            raise InputError("cv", "'prefit', an int >= 2 or a splitter", repr(self.cv))
        if prefit and hasattr(self.estimator, "classes_"):
            check_is_fitted(self.estimator)
            self.classes_, labels = _encode_against(targets, self.estimator.classes_)
        else:
            self.classes_, labels = np.unique(targets, return_inverse=True)
        n = labels.shape[0]
        if len(self.classes_) < 2:
            raise InputError("y", "labels of at least 2 classes", f"{len(self.classes_)} class(es)")
        weights = None if sample_weight is None else check_sample_weight(sample_weight, n)
        meta = _per_row(self._route(metadata, self._calibrator()), n)  # before any fit
        if prefit:
            check_is_fitted(self.estimator)
            features = self._features(self.estimator, X)
            kind = input_kind_of(response_method(self.estimator))
            cal = self._fit_calibrator(features, labels, weights, meta, kind)
            self.calibrated_classifiers_ = [(self.estimator, cal)]
        elif check_bool("ensemble", self.ensemble):
            splits = self._splitter().split(X, labels)
            self.calibrated_classifiers_ = [
                self._fit_pair(X, labels, weights, meta, train, test) for train, test in splits
            ]
        else:
            pair = self._fit_on_predictions(X, labels, weights, meta)
            self.calibrated_classifiers_ = [pair]
        first = self.calibrated_classifiers_[0][0]
        for name in ("n_features_in_", "feature_names_in_"):  # as the estimators saw X
            if hasattr(first, name):
                setattr(self, name, getattr(first, name))
        return self

    def _fit_estimator(self, x: Any, labels: Any, weights: F64 | None) -> Any:
        est = clone(self.estimator)
        takes_weights = "sample_weight" in signature(est.fit).parameters
        if weights is not None and takes_weights:
            est.fit(x, self.classes_[labels], sample_weight=weights)
        else:
            est.fit(x, self.classes_[labels])
        if len(getattr(est, "classes_", self.classes_)) != len(self.classes_):
            raise InputError("cv", "training folds that hold every class", "a fold without one")
        return est

    @staticmethod
    def _route(metadata: dict[str, Any], calibrator: Any) -> dict[str, Any]:
        """``metadata`` checked against what ``calibrator`` declares (its ``fit_metadata``,
        by :meth:`PostHoc._route <calibkit.calibrators.fitted.PostHoc._route>`; scikit-learn's
        ``"sigmoid"`` declares none)."""
        if isinstance(calibrator, Calibrator):
            return calibrator._route(metadata)
        if metadata:
            expected = "only the inputs 'sigmoid' declares (none)"
            raise InputError(next(iter(metadata)), expected, "a value")
        return metadata

    def _fit_pair(
        self,
        x: Any,
        labels: Any,
        weights: F64 | None,
        meta: dict[str, np.ndarray],
        train: Any,
        test: Any,
    ) -> tuple[Any, Calibrator]:
        x_train, x_test = _rows(x, train), _rows(x, test)
        est = self._fit_estimator(
            x_train, labels[train], None if weights is None else weights[train]
        )
        w_test = None if weights is None else weights[test]
        held_out = {key: value[test] for key, value in meta.items()}
        features, kind = self._features(est, x_test), input_kind_of(response_method(est))
        cal = self._fit_calibrator(features, labels[test], w_test, held_out, kind)
        return est, cal

    def _fit_on_predictions(
        self, x: Any, labels: Any, weights: F64 | None, meta: dict[str, np.ndarray]
    ) -> tuple[Any, Calibrator]:
        method = response_method(self.estimator)
        takes_weights = "sample_weight" in signature(self.estimator.fit).parameters
        params = {"sample_weight": weights} if weights is not None and takes_weights else None
        y = self.classes_[labels]
        est = clone(self.estimator)
        scores = cross_val_predict(est, x, y, cv=self._splitter(), method=method, params=params)
        if self.method == "sigmoid":
            features = raw_columns(scores)
        else:
            features = scores_to_logits(scores, method)
        cal = self._fit_calibrator(features, labels, weights, meta, input_kind_of(method))
        return self._fit_estimator(x, labels, weights), cal

    def _fit_calibrator(
        self, features: F64, labels: Any, weights: F64 | None, meta: dict[str, Any], kind: str
    ) -> Any:
        """A new calibrator fitted on ``features``, declared of the input ``kind``
        (:func:`input_kind_of`; scikit-learn's ``"sigmoid"`` reads the raw response)."""
        cal = self._calibrator()
        if isinstance(cal, Calibrator):
            return cal.fit(features, labels, weights, input_kind=kind, **meta)
        return cal.fit(features, labels, weights, **meta)

    def predict_proba(self, X: Any, **metadata: Any) -> F64:
        """The mean of the calibrated models' probabilities (columns: ``classes_``);
        ``metadata`` as for :meth:`fit`, one value per row of ``X``."""
        check_is_fitted(self, "calibrated_classifiers_")
        meta = self._route(metadata, self.calibrated_classifiers_[0][1])
        probs = [
            cal.predict_proba(self._features(est, X), **meta)
            for est, cal in self.calibrated_classifiers_
        ]
        return np.asarray(np.mean(probs, axis=0), dtype=np.float64)

    def predict(self, X: Any, **metadata: Any) -> Any:
        """The class of highest calibrated probability."""
        best = np.argmax(self.predict_proba(X, **metadata), axis=1)
        return self.classes_[best]


def _per_row(metadata: dict[str, Any], n: int) -> dict[str, np.ndarray]:
    """Each per-row input as an array of ``n`` values (cut by fold like ``sample_weight``)."""
    out = {}
    for key, value in metadata.items():
        arr = np.asarray(value)
        if arr.ndim != 1 or arr.shape[0] != n:
            raise InputError(key, f"one value per row of X ({n})", f"shape {arr.shape}")
        out[key] = arr
    return out


def _rows(x: Any, index: Any) -> Any:
    """Rows ``index`` of an array, a sparse matrix or a data frame."""
    if hasattr(x, "iloc"):
        return x.iloc[index]
    return x.tocsr()[index] if issparse(x) else np.asarray(x)[index]


def _encode_against(targets: np.ndarray, classes: Any) -> tuple[np.ndarray, np.ndarray]:
    """``classes`` (a fitted estimator's ``classes_``) and each target's column in them.

    A calibration set may lack some of the classes (its labels are still the estimator's
    columns, as ``CalibratedClassifierCV`` encodes them); a label the estimator does not
    know is refused.
    """
    known = np.asarray(classes)
    order = np.argsort(known, kind="stable")
    expected = f"labels among the estimator's classes_ {known.tolist()}"
    try:
        place = np.searchsorted(known, targets, sorter=order).clip(0, len(known) - 1)
        found = np.asarray(known[order[place]] == targets, dtype=bool)
    except TypeError:  # labels that do not compare with the classes (str and int)
        raise InputError("y", expected, f"labels of type {targets.dtype}") from None
    if not np.all(found):
        unknown = targets[~found][0]
        raise InputError("y", expected, f"label {unknown!r}")
    return known, order[place]


def _check_targets(y: Any) -> np.ndarray:
    """``y`` as one class label per row (scikit-learn's checks, calibkit's error); strings
    mixed with numbers are refused, saying so (they do not sort: no class order)."""
    found = label_types(y)
    if found is not None and found[0] == "mixed":
        raise InputError("y", "class labels of one type (all strings, or all numbers)", found[1])
    try:
        labels = column_or_1d(y, warn=True)
        check_classification_targets(labels)
    except ValueError as err:
        raise InputError("y", "class labels, one per row", str(err)) from None
    return np.asarray(labels)
