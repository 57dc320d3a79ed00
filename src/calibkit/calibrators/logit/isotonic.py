"""Isotonic regression calibration (Zadrozny & Elkan 2002), one-vs-rest.

For every class ``k`` a non-decreasing step-and-ramp map from ``p_k = softmax(logits)_k`` to
the frequency of ``y = k`` is fitted with scikit-learn's ``IsotonicRegression``
(``out_of_bounds="clip"``: scores outside the calibration range get the end values). The
maps combine as class-wise histogram binning's do (:mod:`calibkit.calibrators.logit.histogram`:
the row renormalised, or kept uncalibrated where every map gives 0, as isotonic fits do near
the ends of the score range; with two classes only ``P(y = 1)`` fitted).

Zero probabilities: the maps reach 0 below the lowest score with a positive, so a true
class can get probability 0 (test NLL 14 on the 100-class shared predictions file); the row
is mixed with the uniform distribution as the histogram binnings' are (``smoothing``).

Each map is stored as its thresholds (``x_thresholds_[i]``, ``y_thresholds_[i]``) and
evaluated by linear interpolation (``np.interp``, which clips like the fitted model), so a
saved calibrator needs no scikit-learn object.

>>> z = np.log([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.2, 0.8]])
>>> iso = IsotonicCalibrator(smoothing=0).fit(z, [0, 1, 0, 1])
>>> iso.x_thresholds_[0].round(6).tolist(), iso.y_thresholds_[0].tolist()
([0.1, 0.2, 0.7, 0.8], [0.0, 0.5, 0.5, 1.0])
>>> iso.predict_proba(np.log([[0.85, 0.15], [0.5, 0.5]])).round(6).tolist()
[[0.75, 0.25], [0.5, 0.5]]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import numpy as np

from calibkit.calibrators.base import F64, Calibrator
from calibkit.calibrators.logit.histogram import combine_maps, one_vs_rest_classes
from calibkit.calibrators.logit.temperature_smoothed import (
    SMOOTHING,
    SMOOTHING_DOC,
    default_smoothing,
    mix_uniform,
)
from calibkit.core.fitted_state import Array, ArrayList, Dims
from calibkit.core.outputs import ClassifierOutputs, log_softmax64
from calibkit.core.params import param
from calibkit.core.validation import FRACTION, Constraints

if TYPE_CHECKING:
    from torch import nn


def fit_isotonic(score: F64, outcome: F64, weights: F64 | None = None) -> tuple[F64, F64]:
    """Thresholds ``(x, y)`` of the clipped non-decreasing isotonic fit of outcome on score
    (rows weighted by ``weights``, as scikit-learn's ``sample_weight``)."""
    from sklearn.isotonic import IsotonicRegression  # lazy: sklearn costs seconds at import

    iso = IsotonicRegression(out_of_bounds="clip").fit(score, outcome, sample_weight=weights)
    x = np.asarray(iso.X_thresholds_, dtype=np.float64)
    y = np.asarray(iso.y_thresholds_, dtype=np.float64)
    return x, y


#: The thresholds of one fitted map: probabilities, non-decreasing (as ``np.interp`` needs).
THRESHOLDS = Array(shape=("n",), low=0.0, high=1.0, sorted=True, nonempty=True)


class IsotonicCalibrator(Calibrator):
    """One-vs-rest isotonic regression on the softmax probabilities, renormalised.

    {refuses_absent_class}

    Attributes
    ----------
    x_thresholds_, y_thresholds_ : list of ndarray
        One pair of float64 arrays per fitted class (only class 1 for two classes, else
        every class).
    smoothing_ : float
        The ``eps`` used.

    Examples
    --------
    >>> z = np.log([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.2, 0.8]])
    >>> IsotonicCalibrator(smoothing=0).fit(z, [0, 0, 1, 1]).predict_proba(z)[:, 1].tolist()
    [0.0, 0.0, 1.0, 1.0]
    >>> IsotonicCalibrator().fit(z, [0, 0, 1, 1]).predict_proba(z)[:, 1].tolist()
    [0.1, 0.1, 0.9, 0.9]
    """

    needs_every_class = True

    accepts_sample_weight = True
    smoothing: float | None = param(default=None, check=SMOOTHING, doc=SMOOTHING_DOC)
    #: ``m`` maps (see :func:`one_vs_rest_classes`); map ``i`` has ``n`` thresholds.
    state_constraints: ClassVar[Constraints] = {
        "x_thresholds_": ArrayList(THRESHOLDS, "m"),
        "y_thresholds_": ArrayList(THRESHOLDS, "m"),
        "smoothing_": FRACTION,
    }

    def _state_dims(self, n_classes: int) -> Dims:
        return {"k": n_classes, "m": len(one_vs_rest_classes(n_classes))}

    def _fit(self, out: ClassifierOutputs, weights: F64 | None = None) -> None:
        probs = out.probs
        fits = [
            fit_isotonic(probs[:, k], (out.labels == k).astype(np.float64), weights)
            for k in one_vs_rest_classes(out.n_classes)
        ]
        self.x_thresholds_ = [f[0] for f in fits]
        self.y_thresholds_ = [f[1] for f in fits]
        eps = self.smoothing
        self.smoothing_ = default_smoothing(out.labels.shape[0], weights) if eps is None else eps

    def _predict_proba(self, logits: F64) -> F64:
        probs = np.exp(log_softmax64(logits))
        q = np.column_stack(
            [
                np.interp(probs[:, k], self.x_thresholds_[i], self.y_thresholds_[i])
                for i, k in enumerate(one_vs_rest_classes(self.n_classes_))
            ]
        )
        return mix_uniform(combine_maps(q, probs), self.smoothing_)

    def _module(self) -> nn.Module:
        from calibkit.calibrators.modules import Interpolation, OneVsRest, with_smoothing  # torch

        maps = Interpolation(self.x_thresholds_, self.y_thresholds_)
        return with_smoothing(OneVsRest(maps, binary=self.n_classes_ == 2), self.smoothing_)
