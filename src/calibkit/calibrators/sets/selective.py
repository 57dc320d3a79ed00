"""Selective prediction on a fitted conformal predictor's calibration rows, and its three
answers.

A :class:`~calibkit.calibrators.sets.conformal.ConformalClassifier` keeps, besides its
quantile, each calibration row's calibrated top-label confidence and whether its top class
was wrong (most confident first). :func:`selective_risk` reads them: at a coverage (the
fraction of rows answered), the confidence threshold that keeps that fraction, the error
rate among the rows kept and its one-sided 95% Clopper-Pearson upper bound
(:class:`SelectiveRisk`). :class:`Answers` holds the three answers of
:meth:`~calibkit.calibrators.sets.conformal.ConformalClassifier.predict_all`: calibrated
probabilities, prediction sets and whether to answer each row.

>>> risk = selective_risk(np.array([0.9, 0.8, 0.7, 0.6]), np.array([0, 0, 1, 1]), 0.5)
>>> risk.threshold, risk.risk, risk.n_kept
(0.8, 0.0, 2)
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from calibkit.core.validation import Real

F64 = npt.NDArray[np.float64]
Mask = npt.NDArray[np.bool_]
#: A selective coverage: the fraction of rows answered, in (0, 1].
COVERAGE = Real(0.0, 1.0, closed="right")


class SelectiveRisk(NamedTuple):
    """Selective prediction at a coverage, on the calibration rows
    (:meth:`ConformalClassifier.selective
    <calibkit.calibrators.sets.conformal.ConformalClassifier.selective>`).

    Parameters
    ----------
    coverage : float
        The fraction of the calibration rows kept (at least the one asked; ties at the
        threshold are kept too).
    threshold : float
        The calibrated top-label confidence at or above which a row is answered.
    risk : float
        The error rate among the rows kept.
    risk_upper : float
        Its one-sided 95% Clopper-Pearson upper bound.
    n_kept, n_calibration : int
        The rows kept, and the calibration rows they are taken from.

    Examples
    --------
    >>> SelectiveRisk(0.5, 0.9, 0.1, 0.4, 5, 10).risk
    0.1
    """

    coverage: float
    threshold: float
    risk: float
    risk_upper: float
    n_kept: int
    n_calibration: int


class Answers(NamedTuple):
    """The three answers of :meth:`ConformalClassifier.predict_all
    <calibkit.calibrators.sets.conformal.ConformalClassifier.predict_all>`.

    Parameters
    ----------
    probs : ndarray of shape (N, K)
        Calibrated probabilities.
    sets : ndarray of bool, shape (N, K)
        Prediction sets.
    accept : ndarray of bool, shape (N,)
        Whether to answer each row (else abstain).

    Examples
    --------
    >>> a = Answers(np.array([[0.9, 0.1]]), np.array([[True, False]]), np.array([True]))
    >>> a.sets.sum(), bool(a.accept[0])
    (np.int64(1), True)
    """

    probs: F64
    sets: Mask
    accept: Mask


def _clopper_pearson_upper(errors: int, n: int, delta: float) -> float:
    """The one-sided ``1 - delta`` Clopper-Pearson upper bound of a rate ``errors / n``.

    >>> round(_clopper_pearson_upper(0, 100, 0.05), 6)  # the "rule of three": about 3/n
    0.029513
    """
    if errors >= n:
        return 1.0
    from scipy.stats import beta  # lazy: scipy.stats costs a second at import

    return float(beta.ppf(1.0 - delta, errors + 1, n - errors))


def selective_risk(
    confidences: F64, errors: npt.NDArray[np.int64], coverage: float
) -> SelectiveRisk:
    """Selective prediction at ``coverage`` on rows sorted most confident first
    (``confidences`` non-increasing, ``errors`` 1 where the top class was wrong): the
    threshold that keeps that fraction of the rows (ties at it kept too), and the risk among
    the rows kept with its one-sided 95% Clopper-Pearson upper bound.

    >>> selective_risk(np.array([0.9, 0.8, 0.8, 0.6]), np.array([0, 0, 1, 1]), 0.25).n_kept
    1
    """
    c = COVERAGE.check("coverage", coverage)
    n = confidences.shape[0]
    keep = max(1, math.ceil(Fraction(c) * n))
    threshold = float(confidences[keep - 1])
    kept = int(np.count_nonzero(confidences >= threshold))  # ties are kept too
    n_errors = int(errors[:kept].sum())
    return SelectiveRisk(
        coverage=kept / n,
        threshold=threshold,
        risk=n_errors / kept,
        risk_upper=_clopper_pearson_upper(n_errors, kept, 0.05),
        n_kept=kept,
        n_calibration=n,
    )
