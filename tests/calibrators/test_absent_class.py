"""A calibration set in which one class never occurs: every calibrator of logits (and
group calibrator, fitted without groups) refuses it or keeps it.

Methods that fit each class from its own rows (``needs_every_class``) refuse with an
InputError naming ``labels`` and the class; the others keep the class by construction, so the
test NLL on data that includes it stays finite and near the uncalibrated NLL (Dirichlet
calibration used to fit without a word and reach a test NLL of 145 from 0.92).
"""

from __future__ import annotations

import numpy as np
import pytest

from calibkit.calibrators import CALIBRATORS, create_calibrator
from calibkit.core.errors import InputError
from calibkit.core.outputs import log_softmax64
from tests.calibrators.problems import random_problem

pytestmark = pytest.mark.usefixtures("one_thread")

#: A calibrated NLL at most this many times the uncalibrated one is "sane": the uncalibrated
#: logits here are overconfident by 2, so a method that keeps the absent class improves on
#: them (temperature: 0.86x); one that loses the class reaches 7x (vector) to 100x (Dirichlet).
SANE_FACTOR = 2.0


def _nll(probs: np.ndarray, labels: np.ndarray) -> float:
    return float(-np.mean(np.log(probs[np.arange(labels.shape[0]), labels])))


@pytest.mark.parametrize("name", CALIBRATORS.names(kind=("logits", "groups")))
def test_a_class_absent_from_the_labels_is_refused_or_kept(name: str) -> None:
    klass = CALIBRATORS.get(name)
    k = 2 if klass.binary_only else 4
    z, y = random_problem(2000, k, seed=1)
    absent = k - 1
    fit_rows = np.flatnonzero((np.arange(2000) < 1000) & (y != absent))
    z_test, y_test = z[1000:], y[1000:]
    assert np.any(y_test == absent)
    if klass.binary_only or klass.needs_every_class:
        with pytest.raises(InputError, match="labels") as info:
            create_calibrator(name).fit(z[fit_rows], y[fit_rows])
        if not klass.binary_only:  # a binary set without a class has one label, named so
            assert f"no row of class {absent}" in str(info.value)
        return
    probs = create_calibrator(name).fit(z[fit_rows], y[fit_rows]).predict_proba(z_test)
    calibrated = _nll(probs, y_test)
    uncalibrated = _nll(np.exp(log_softmax64(z_test)), y_test)
    assert np.isfinite(calibrated)
    assert calibrated <= SANE_FACTOR * uncalibrated, (calibrated, uncalibrated)


def test_a_class_of_only_zero_weight_rows_is_absent() -> None:
    z, y = random_problem(400, 3, seed=0)
    weights = np.where(y == 1, 0.0, 1.0)
    with pytest.raises(InputError, match=r"labels: .* got no row of class 1"):
        create_calibrator("vector").fit(z, y, sample_weight=weights)
    create_calibrator("vector").fit(z, y, sample_weight=weights + 0.5)  # every class weighs


def test_auto_leaves_out_the_methods_that_need_every_class() -> None:
    z, y = random_problem(600, 4, seed=2)
    rows = y != 2
    auto = create_calibrator("auto").fit(z[rows], y[rows])
    assert auto.cv_scores_  # type: ignore[attr-defined]
    for name in auto.cv_scores_:  # type: ignore[attr-defined]
        assert not CALIBRATORS.get(name).needs_every_class, name
    assert "temperature" in auto.cv_scores_  # type: ignore[attr-defined]
