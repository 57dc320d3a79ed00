"""scikit-learn's estimator checks on CalibratedClassifier itself.

Every check passes for cross-fitted calibration (no skips; the array-API check skips itself
unless ``SCIPY_ARRAY_API`` is set). ``cv="prefit"`` is not run through the checks: they
clone the estimator, and a clone of a fitted estimator is unfitted, so every prefit fit
would (rightly) refuse it; ``test_sklearn_classifier.py`` tests prefit against scikit-learn.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.naive_bayes import GaussianNB
from sklearn.utils.estimator_checks import parametrize_with_checks

from calibkit.calibrators.sklearn_wrapper import CalibratedClassifier

ESTIMATORS = [
    CalibratedClassifier(LogisticRegression(), method="temperature", cv=3),
    CalibratedClassifier(GaussianNB(), method="sigmoid", cv=3),
    CalibratedClassifier(LogisticRegression(), method="isotonic", cv=3, ensemble=False),
]


@parametrize_with_checks(ESTIMATORS)  # type: ignore[misc]
def test_sklearn_estimator_checks(estimator: Any, check: Callable[[Any], None]) -> None:
    with warnings.catch_warnings():  # the checks' own notes (convergence, data conversion)
        warnings.simplefilter("ignore")
        check(estimator)


pytestmark = pytest.mark.filterwarnings("ignore")
