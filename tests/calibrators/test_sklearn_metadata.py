"""CalibratedClassifier routes the per-row inputs a calibrator declares (``fit_metadata``)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import KFold

from calibkit.calibrators import CALIBRATORS, GroupwiseTemperatureScaling
from calibkit.calibrators.sklearn_wrapper import CalibratedClassifier, estimator_logits
from calibkit.core.errors import InputError


def _data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x, y = make_classification(
        n_samples=600, n_classes=3, n_informative=5, random_state=0, flip_y=0.1
    )
    groups = np.where(np.arange(600) % 3 == 0, "site_a", "site_b")
    return x, y, groups


def test_prefit_groups_reach_the_calibrator() -> None:
    x, y, g = _data()
    est = LogisticRegression(max_iter=500).fit(x[:300], y[:300])
    clf = CalibratedClassifier(est, method="temperature_groupwise", cv="prefit")
    clf.fit(x[300:], y[300:], groups=g[300:])
    direct = GroupwiseTemperatureScaling().fit(
        estimator_logits(est, x[300:]), y[300:], groups=g[300:]
    )
    got = clf.predict_proba(x[:50], groups=g[:50])
    want = direct.predict_proba(estimator_logits(est, x[:50]), groups=g[:50])
    np.testing.assert_allclose(got, want, rtol=1e-12)
    ((_, cal),) = clf.calibrated_classifiers_
    assert cal.group_names_ == ["site_a", "site_b"]
    # without the groups each row gets the global temperature: other probabilities
    assert not np.allclose(clf.predict_proba(x[:50]), got)


def test_each_fold_gets_its_held_out_rows_groups() -> None:
    x, y, g = _data()
    folds = KFold(3)
    clf = CalibratedClassifier(LogisticRegression(max_iter=500), "temperature_groupwise", folds)
    clf.fit(x, y, groups=g)
    for (_train, test), (est, cal) in zip(folds.split(x), clf.calibrated_classifiers_, strict=True):
        want = GroupwiseTemperatureScaling().fit(
            estimator_logits(est, x[test]), y[test], groups=g[test]
        )
        np.testing.assert_allclose(cal.group_temperatures_, want.group_temperatures_, rtol=1e-12)
        np.testing.assert_array_equal(
            cal.group_sizes_, [np.sum(g[test] == s) for s in ("site_a", "site_b")]
        )


def test_an_undeclared_input_is_refused_before_any_fit() -> None:
    x, y, g = _data()
    clf = CalibratedClassifier(LogisticRegression(), method="temperature", cv=3)
    with pytest.raises(
        InputError, match=r"groups: expected only the inputs 'temperature' declares \(none\)"
    ):
        clf.fit(x, y, groups=g)
    assert not hasattr(clf, "calibrated_classifiers_")


def test_a_groups_vector_of_the_wrong_length_is_named() -> None:
    x, y, g = _data()
    clf = CalibratedClassifier(LogisticRegression(), method="multicalibration", cv=3)
    with pytest.raises(InputError, match=r"groups: expected one value per row of X \(600\)"):
        clf.fit(x, y, groups=g[:10])


def test_only_calibrators_of_the_estimator_logits_are_methods() -> None:
    x, y, _ = _data()
    for name in CALIBRATORS.names(kind=("sets", "priors", "model")):
        with pytest.raises(InputError, match="method: expected a calibrator of logits"):
            CalibratedClassifier(LogisticRegression(), method=name, cv=3).fit(x, y)
