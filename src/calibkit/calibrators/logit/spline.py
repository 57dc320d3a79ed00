"""Spline calibration (Gupta et al. 2021): the top-label confidence recalibrated through a
cubic spline fitted to the cumulative calibration curve.

On the calibration set, sort the top-label confidences ``c_1 <= ... <= c_N`` with their
correctness ``a_i`` (1 if the top class is the label) and take the cumulative gap
``h_i = (sum_{j <= i} a_j - sum_{j <= i} c_j) / N`` against the fractile
``u_i = (i - 1) / (N - 1)``. A natural cubic spline ``s`` with ``n_knots`` equally spaced
knots on ``[0, 1]`` is fitted to ``(u_i, h_i)`` by least squares (the paper's choice: six
knots, natural run-out); its derivative estimates the local gap between accuracy and
confidence, so ``c_i + s'(u_i)`` is the recalibrated confidence at ``c_i``. A new
confidence is mapped by linear interpolation between these points (tied ``c_i`` share
the mean of their values), flat beyond the smallest and the largest.

The recalibrated confidences are clipped to ``[1/K, 1 - 1/(2 (N + 1))]`` before
interpolating: a top-label probability below ``1/K`` is not the top one, and the upper
bound keeps half an observation in ``N + 1`` for the other classes, so no class ever gets
probability 0. As in top-label histogram binning
(:mod:`calibkit.calibrators.logit.histogram`), the top class gets the new confidence and the
other classes share the rest in proportion to their probabilities. The map is
not monotone in general (the spline's derivative need not be increasing), so the argmax
can change where it is not.

>>> c = np.array([0.5, 0.6, 0.7, 0.8, 0.9])
>>> z = np.log(np.column_stack([1 - c, c]))
>>> s = SplineCalibration(n_knots=2).fit(z, [0, 1, 0, 1, 1])  # 2 knots: a straight line
>>> s.confidences_.round(6).tolist(), s.recalibrated_.round(6).tolist()  # its slope is -0.04
([0.5, 0.6, 0.7, 0.8, 0.9], [0.5, 0.56, 0.66, 0.76, 0.86])
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import numpy as np

from calibkit.calibrators.base import F64, Calibrator
from calibkit.calibrators.logit.histogram import replace_top_label
from calibkit.core.errors import InputError
from calibkit.core.fitted_state import Array
from calibkit.core.outputs import ClassifierOutputs, log_softmax64
from calibkit.core.params import param
from calibkit.core.validation import Constraints, Integer

if TYPE_CHECKING:
    from calibkit.calibrators.modules import TopLabel


def natural_spline_basis(x: F64, knots: F64, derivative: bool = False) -> F64:
    """The natural cubic spline basis at ``x`` (or its derivative), one column per knot.

    The truncated-power form (Hastie, Tibshirani & Friedman, eq. 5.4): ``1``, ``x`` and
    ``d_k(x) - d_{K-1}(x)`` with ``d_k(x) = ((x - t_k)_+^3 - (x - t_K)_+^3) / (t_K - t_k)``;
    linear beyond the end knots.

    Examples
    --------
    >>> natural_spline_basis(np.array([0.0, 1.0]), np.array([0.0, 1.0])).tolist()
    [[1.0, 0.0], [1.0, 1.0]]
    """
    last = knots[-1]
    power = 2 if derivative else 3
    scale = 3.0 if derivative else 1.0

    def d(k: int) -> F64:
        tail = np.maximum(x - knots[k], 0.0) ** power - np.maximum(x - last, 0.0) ** power
        return np.asarray(scale * tail / (last - knots[k]), dtype=np.float64)

    lead = [np.zeros_like(x), np.ones_like(x)] if derivative else [np.ones_like(x), x]
    inner = [d(k) - d(len(knots) - 2) for k in range(len(knots) - 2)]
    return np.column_stack(lead + inner)


def spline_slopes(u: F64, h: F64, n_knots: int) -> F64:
    """The derivative at ``u`` of the least-squares natural cubic spline of ``h`` on ``u``
    (``n_knots`` knots equally spaced on ``[0, 1]``)."""
    knots = np.linspace(0.0, 1.0, n_knots)
    coef = np.linalg.lstsq(natural_spline_basis(u, knots), h, rcond=None)[0]
    return np.asarray(natural_spline_basis(u, knots, derivative=True) @ coef, dtype=np.float64)


def top_label(probs: F64) -> tuple[np.ndarray, F64]:
    """The top class of every row and its probability."""
    top = np.argmax(probs, axis=1)
    return top, probs[np.arange(probs.shape[0]), top]


class SplineCalibration(Calibrator):
    """Top-label spline calibration with ``n_knots`` knots (see the module docstring).

    A class absent from the calibration labels keeps its column by construction:
    the map of the top-label confidence is shared by all classes.

    Attributes
    ----------
    confidences_ : ndarray of shape (n,)
        The distinct calibration-set top-label confidences, increasing.
    recalibrated_ : ndarray of shape (n,)
        Their recalibrated confidences (clipped as the module docstring says).

    References
    ----------
    K. Gupta, A. Rahimi, T. Ajanthan, T. Mensink, C. Sminchisescu and R. Hartley,
    "Calibration of neural networks using splines", ICLR 2021.

    Examples
    --------
    {fit_example}

    >>> SplineCalibration().get_params()
    {'n_knots': 6}
    """

    state_constraints: ClassVar[Constraints] = {
        "confidences_": Array(shape=("n",), low=0.0, high=1.0, sorted=True, nonempty=True),
        "recalibrated_": Array(shape=("n",), low=0.0, high=1.0),
    }
    n_knots: int = param(
        default=6,
        check=Integer(low=2, high=100),
        doc="Knots of the natural cubic spline (2 fits a straight line); the default is "
        "that of the paper's experiments.",
    )

    def _check_state(self) -> None:
        if np.any(np.diff(self.confidences_) <= 0):
            raise InputError(
                "state.confidences_", "strictly increasing confidences", "a repeated value"
            )

    def _fit(self, out: ClassifierOutputs, weights: F64 | None = None) -> None:
        top, conf = top_label(out.probs)
        order = np.argsort(conf, kind="stable")
        c = conf[order]
        a = (top == out.labels)[order].astype(np.float64)
        n = c.shape[0]
        h = (np.cumsum(a) - np.cumsum(c)) / n
        values = c + spline_slopes(np.linspace(0.0, 1.0, n), h, self.n_knots)
        x, inverse = np.unique(c, return_inverse=True)
        mean = np.bincount(inverse, weights=values) / np.bincount(inverse)
        self.confidences_ = x
        self.recalibrated_ = np.clip(mean, 1.0 / out.n_classes, 1.0 - 0.5 / (n + 1))

    def _predict_proba(self, logits: F64) -> F64:
        probs = np.exp(log_softmax64(logits))
        top, conf = top_label(probs)
        return replace_top_label(probs, top, np.interp(conf, self.confidences_, self.recalibrated_))

    def _module(self) -> TopLabel:
        from calibkit.calibrators.modules import (  # torch: only when exported
            Interpolation,
            TopLabel,
        )

        return TopLabel(Interpolation([self.confidences_], [self.recalibrated_]))  # type: ignore[arg-type]
