"""CalibratedClassifier against scikit-learn's CalibratedClassifierCV on the same folds."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.calibration import CalibratedClassifierCV, _SigmoidCalibration
from sklearn.datasets import make_classification
from sklearn.ensemble import RandomForestClassifier
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, KFold, StratifiedKFold
from sklearn.naive_bayes import GaussianNB

import calibkit
from calibkit.calibrators import Calibrator, IsotonicCalibrator, create_calibrator
from calibkit.calibrators.sklearn_wrapper import (
    CalibratedClassifier,
    estimator_logits,
    response_method,
)
from calibkit.core.errors import InputError


def _data(n_classes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Training rows and labels, then held-out rows and labels."""
    x, y = make_classification(
        n_samples=600, n_features=8, n_informative=5, n_classes=n_classes, random_state=0
    )
    return x[200:], y[200:], x[:200], y[:200]


#: calibkit's isotonic regression without its smoothing toward the uniform distribution.
ISOTONIC = IsotonicCalibrator(smoothing=0)
#: (estimator, scikit-learn's method, calibkit's method): the methods both libraries have.
#: Isotonic uses estimators without decision_function (see the module docstring).
PAIRS = [
    (LogisticRegression(C=0.05), "temperature", "temperature"),
    (GaussianNB(), "temperature", "temperature"),
    (GaussianNB(), "isotonic", ISOTONIC),
    (RandomForestClassifier(n_estimators=20, random_state=0), "isotonic", ISOTONIC),
    (LogisticRegression(C=0.05), "sigmoid", "sigmoid"),  # decision_function
    (GaussianNB(), "sigmoid", "sigmoid"),  # predict_proba
]


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize(("estimator", "sk_method", "ck_method"), PAIRS)
@pytest.mark.parametrize("ensemble", [True, False])
@pytest.mark.parametrize("splitter", [StratifiedKFold, KFold])
def test_same_probabilities_as_sklearn_on_the_same_folds(
    n_classes: int,
    estimator: object,
    sk_method: str,
    ck_method: str | Calibrator,
    ensemble: bool,
    splitter: type,
) -> None:
    x, y, test, _ = _data(n_classes)
    cv = splitter(4, shuffle=True, random_state=1)
    ref = CalibratedClassifierCV(estimator, method=sk_method, cv=cv, ensemble=ensemble)
    ours = CalibratedClassifier(estimator, method=ck_method, cv=cv, ensemble=ensemble)
    expected = ref.fit(x, y).predict_proba(test)
    np.testing.assert_allclose(ours.fit(x, y).predict_proba(test), expected, rtol=0, atol=1e-6)
    assert len(ours.calibrated_classifiers_) == (4 if ensemble else 1)


@pytest.mark.parametrize(("estimator", "sk_method", "ck_method"), PAIRS)
def test_prefit_matches_a_frozen_estimator(
    estimator: object, sk_method: str, ck_method: str | Calibrator
) -> None:
    x, y, test, y_test = _data(3)
    fitted = clone(estimator).fit(x, y)
    ref = CalibratedClassifierCV(FrozenEstimator(fitted), method=sk_method)
    expected = ref.fit(test[:100], y_test[:100]).predict_proba(test[100:])
    ours = CalibratedClassifier(fitted, method=ck_method, cv="prefit")
    ours.fit(test[:100], y_test[:100])
    np.testing.assert_allclose(ours.predict_proba(test[100:]), expected, rtol=0, atol=1e-6)
    assert ours.calibrated_classifiers_[0][0] is fitted


def test_platt_is_the_maximum_likelihood_logistic_fit_of_the_decision_function() -> None:
    """scikit-learn's "sigmoid" smooths the targets (Platt's prior), so it differs from the
    maximum-likelihood "platt" by about 1/N; the unpenalised logistic regression is equal."""
    x, y, test, y_test = _data(2)
    fitted = LogisticRegression(C=0.05).fit(x, y)
    ours = CalibratedClassifier(fitted, method="platt", cv="prefit").fit(test, y_test)
    s = fitted.decision_function(test)[:, None]
    ml = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000).fit(s, y_test)
    np.testing.assert_allclose(
        ours.predict_proba(x), ml.predict_proba(fitted.decision_function(x)[:, None]), atol=1e-6
    )


def test_any_method_by_name_or_instance_and_sklearn_tools_work() -> None:
    x, y, test, _ = _data(3)
    for method in ("vector", "histogram", create_calibrator("dirichlet", reg_lambda=0.1)):
        clf = CalibratedClassifier(LogisticRegression(), method=method, cv=3).fit(x, y)
        p = clf.predict_proba(test)
        np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)
        assert set(clf.predict(test)) <= set(clf.classes_)
    search = GridSearchCV(
        CalibratedClassifier(LogisticRegression(), cv=3),
        {"method": ["temperature", "isotonic"], "estimator__C": [0.1, 1.0]},
        cv=2,
    )
    assert search.fit(x, y).best_params_["method"] in ("temperature", "isotonic")
    assert calibkit.CalibratedClassifier is CalibratedClassifier


def test_string_labels_and_weights() -> None:
    x, y, test, _ = _data(2)
    labels = np.array(["no", "yes"])[y]
    w = np.random.default_rng(0).integers(1, 3, size=y.shape[0]).astype(float)
    clf = CalibratedClassifier(LogisticRegression(), method="isotonic", cv=3)
    assert clf.fit(x, labels, sample_weight=w).classes_.tolist() == ["no", "yes"]
    assert set(clf.predict(test)) <= {"no", "yes"}


@pytest.mark.parametrize("string_first", [True, False])
@pytest.mark.parametrize("cv", [3, "prefit"])
def test_strings_mixed_with_numbers_are_one_input_error(cv: int | str, string_first: bool) -> None:
    """Issue 42: an object array mixing '0' and 1 raised numpy's raw TypeError (a string
    first: sorting failed), or scikit-learn's "Unknown label type ... regression target"."""
    x, y, _, _ = _data(3)
    estimator = LogisticRegression() if cv == 3 else LogisticRegression().fit(x, y)
    mixed = y.astype(object)
    mixed[y == 0] = "0"
    mixed[0] = "0" if string_first else 1
    strings = [i for i, v in enumerate(mixed) if isinstance(v, str)]
    ints = [i for i, v in enumerate(mixed) if not isinstance(v, str)]
    with pytest.raises(InputError) as info:
        CalibratedClassifier(estimator, cv=cv).fit(x, mixed)
    assert str(info.value) == (
        "y: expected class labels of one type (all strings, or all numbers), got strings and"
        f" numbers ('0' at index {strings[0]}, {mixed[ints[0]]} at index {ints[0]})"
    )


def test_binary_decision_function_is_the_positive_logit() -> None:
    x, y, _, _ = _data(2)
    fitted = LogisticRegression().fit(x, y)
    z = estimator_logits(fitted, x)
    assert z.ndim == 1
    np.testing.assert_allclose(fitted.predict_proba(x)[:, 1], 1.0 / (1.0 + np.exp(-z)))


def test_bad_settings_are_refused_by_name() -> None:
    x, y, _, _ = _data(3)
    with pytest.raises(InputError, match="calibrator"):
        CalibratedClassifier(LogisticRegression(), method="nope").fit(x, y)
    with pytest.raises(InputError, match="cv"):
        CalibratedClassifier(LogisticRegression(), cv="later").fit(x, y)
    with pytest.raises(InputError, match="cv"):
        CalibratedClassifier(LogisticRegression(), cv=1).fit(x, y)
    with pytest.raises(InputError, match="2 classes"):
        CalibratedClassifier(LogisticRegression(), method="platt", cv=3).fit(x, y)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_sigmoid_with_weights_matches_sklearn(n_classes: int) -> None:
    """Platt's targets count the positives and negatives by weight, as scikit-learn does."""
    x, y, test, _ = _data(n_classes)
    w = np.random.default_rng(0).uniform(0.2, 3.0, y.shape[0])
    cv = StratifiedKFold(3)
    ref = CalibratedClassifierCV(LogisticRegression(C=0.05), method="sigmoid", cv=cv)
    ours = CalibratedClassifier(LogisticRegression(C=0.05), method="sigmoid", cv=cv)
    expected = ref.fit(x, y, sample_weight=w).predict_proba(test)
    got = ours.fit(x, y, sample_weight=w).predict_proba(test)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-6)


# ----- a calibration set without some of the estimator's classes --------------------------------
@pytest.mark.parametrize("kept", [(0, 2), (1, 2)])
def test_prefit_encodes_labels_against_the_estimators_classes(kept: tuple[int, int]) -> None:
    """Labels are the estimator's columns, as in CalibratedClassifierCV: a calibration set
    lacking class 1 gives the temperature fitted on the estimator's own logits and labels
    (no re-indexing), and predictions keep the estimator's argmax (a temperature keeps it)."""
    x, y, test, y_test = _data(3)
    fitted = LogisticRegression(C=0.05).fit(x, y)
    rows = np.isin(y_test, kept)
    ours = CalibratedClassifier(fitted, method="temperature", cv="prefit")
    ours.fit(test[rows], y_test[rows])
    direct = create_calibrator("temperature").fit(
        fitted.decision_function(test[rows]), y_test[rows]
    )
    temperature = ours.calibrated_classifiers_[0][1].temperature_  # type: ignore[union-attr]
    assert temperature == direct.temperature_  # the same fit on the same numbers
    assert ours.classes_.tolist() == [0, 1, 2]
    assert ours.predict(test).tolist() == fitted.predict(test).tolist()
    assert ours.predict_proba(test).shape == (test.shape[0], 3)


def test_prefit_with_string_labels_keeps_the_estimators_columns() -> None:
    x, y, test, y_test = _data(3)
    names = np.array(["ant", "bee", "cat"])
    fitted = LogisticRegression(C=0.05).fit(x, names[y])
    rows = y_test != 0
    ours = CalibratedClassifier(fitted, cv="prefit").fit(test[rows], names[y_test[rows]])
    assert ours.predict(test).tolist() == fitted.predict(test).tolist()


def test_prefit_refuses_a_label_the_estimator_does_not_know() -> None:
    x, y, test, y_test = _data(3)
    fitted = LogisticRegression(C=0.05).fit(x, y)
    with pytest.raises(InputError, match=r"y: expected labels among the estimator's classes_"):
        CalibratedClassifier(fitted, cv="prefit").fit(test, np.where(y_test == 2, 7, y_test))
    with pytest.raises(InputError, match="y: expected labels among"):
        CalibratedClassifier(fitted, cv="prefit").fit(test, np.array(["a"] * len(y_test)))


def test_cross_fitting_keeps_every_column_when_a_calibration_fold_lacks_a_class() -> None:
    """cv=k: every clone sees all classes; the held-out part may lack one and its labels are
    still the columns of ``classes_`` (the temperature is the direct fit on that fold)."""
    x, y, _, _ = _data(3)
    train = np.flatnonzero(np.arange(len(y)) >= 100)
    held = np.flatnonzero((np.arange(len(y)) < 100) & (y != 1))
    ours = CalibratedClassifier(LogisticRegression(C=0.05), cv=[(train, held)]).fit(x, y)
    est, cal = ours.calibrated_classifiers_[0]
    direct = create_calibrator("temperature").fit(est.decision_function(x[held]), y[held])
    assert cal.temperature_ == direct.temperature_  # type: ignore[union-attr]
    assert ours.predict(x).tolist() == est.predict(x).tolist()


@pytest.mark.parametrize("estimator", [LogisticRegression(C=0.05), GaussianNB()])
def test_prefit_sigmoid_without_a_class_matches_sklearns_maps(estimator: object) -> None:
    """scikit-learn's "sigmoid" fits the absent class's map too (all targets 1 / (n + 2));
    its CalibratedClassifierCV cannot be asked (a FrozenEstimator cross-validates, and fails
    on the missing class), so the reference is its per-class map, normalised as it does."""
    x, y, test, y_test = _data(3)
    fitted = clone(estimator).fit(x, y)
    rows = y_test[:100] != 1
    cal_x, cal_y = test[:100][rows], y_test[:100][rows]
    ours = CalibratedClassifier(fitted, method="sigmoid", cv="prefit").fit(cal_x, cal_y)
    response = getattr(fitted, response_method(fitted))
    maps = [_SigmoidCalibration().fit(response(cal_x)[:, k], cal_y == k) for k in range(3)]
    raw = np.column_stack([m.predict(response(test[100:])[:, k]) for k, m in enumerate(maps)])
    expected = raw / raw.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(ours.predict_proba(test[100:]), expected, rtol=0, atol=1e-6)
