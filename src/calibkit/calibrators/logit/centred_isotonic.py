"""Centred isotonic regression (Oron & Flournoy 2017), one-vs-rest: never probability 0.

Isotonic regression (:mod:`calibkit.calibrators.logit.isotonic`) is a step function: every level
set (a run of scores with the same fitted value) is flat, and a class whose lowest scores
were never the label gets exactly 0. Centred isotonic regression (CIR) keeps the isotonic
values but collapses every level set to one point: its value at the (sample-weighted) mean
score of the level set. The calibration map interpolates linearly between these centred
points, so it is *strictly* increasing between the first and the last centre, and flat
(the end values) outside them.

Zero and one: the isotonic values are strictly increasing across level sets, so only the
first can be 0 and only the last 1. With ``eps = 1 / (2 (n + 1))`` (half an observation
in ``n + 1``, ``n`` the number of calibration rows), a first value of 0 becomes
``eps`` and a last value of 1 becomes ``1 - eps``; every other value is a frequency of at
least ``1 / n > eps`` (at most ``1 - 1/n``), so the map stays strictly increasing and its
values lie in ``[eps, 1 - eps]``. The row is then renormalised (two classes: only class 1
is fitted and ``P(y = 0) = 1 - P(y = 1)``), so no class ever gets probability 0.

>>> z = np.log([[0.9, 0.1], [0.8, 0.2], [0.4, 0.6], [0.3, 0.7], [0.2, 0.8]])
>>> cir = CentredIsotonicCalibrator().fit(z, [0, 1, 0, 1, 1])
>>> cir.x_thresholds_[0].round(6).tolist(), cir.y_thresholds_[0].round(6).tolist()
([0.1, 0.4, 0.75], [0.083333, 0.5, 0.916667])
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import numpy as np

from calibkit.calibrators.base import F64, Calibrator
from calibkit.calibrators.logit.histogram import one_vs_rest_classes
from calibkit.calibrators.logit.isotonic import THRESHOLDS
from calibkit.core.errors import InputError
from calibkit.core.fitted_state import ArrayList, Dims
from calibkit.core.outputs import ClassifierOutputs, log_softmax64
from calibkit.core.validation import Constraints

if TYPE_CHECKING:
    from calibkit.calibrators.modules import OneVsRest


def centred_points(score: F64, outcome: F64, weights: F64 | None = None) -> tuple[F64, F64]:
    """The centred points ``(x, y)`` of the isotonic fit of ``outcome`` on ``score``.

    One point per level set of the fit: ``x`` its weighted mean score, ``y`` its value;
    rows of zero weight are left out.

    Examples
    --------
    >>> x, y = centred_points(np.array([0.1, 0.2, 0.3, 0.4]), np.array([0.0, 1.0, 0.0, 1.0]))
    >>> x.round(6).tolist(), y.tolist()
    ([0.1, 0.25, 0.4], [0.0, 0.5, 1.0])
    """
    from sklearn.isotonic import IsotonicRegression  # lazy: sklearn costs seconds at import

    w = np.ones_like(score) if weights is None else weights
    keep = w > 0
    order = np.argsort(score[keep], kind="stable")
    x, yy, ww = score[keep][order], outcome[keep][order], w[keep][order]
    # clip: scikit-learn merges scores within a few units in the last place, so its largest
    # threshold can sit just below a score it was fitted on (which "nan" made NaN)
    iso = IsotonicRegression(out_of_bounds="clip").fit(x, yy, sample_weight=ww)
    fitted = iso.predict(x)
    starts = np.flatnonzero(np.concatenate(([True], np.diff(fitted) != 0)))
    centre = np.add.reduceat(ww * x, starts) / np.add.reduceat(ww, starts)
    return np.asarray(centre, dtype=np.float64), np.asarray(fitted[starts], dtype=np.float64)


def clear_of_ends(y: F64, n: int) -> F64:
    """``y`` with a value of 0 raised to ``1 / (2 (n + 1))`` and of 1 lowered to one minus it."""
    eps = 0.5 / (n + 1)
    return np.clip(y, eps, 1.0 - eps)


class CentredIsotonicCalibrator(Calibrator):
    """One-vs-rest centred isotonic regression, renormalised; never probability 0.

    {refuses_absent_class}

    Takes no parameters. Rows cannot be weighted: the floor ``eps`` counts rows, so
    weights could not mean both repeated rows and relative importance.

    Attributes
    ----------
    x_thresholds_, y_thresholds_ : list of ndarray
        The centred points of every fitted class (only class 1 for two classes): ``x``
        strictly increasing, ``y`` strictly increasing inside ``(0, 1)``.

    References
    ----------
    A. P. Oron and N. Flournoy, "Centered isotonic regression: point and interval
    estimation for dose-response studies", Statistics in Biopharmaceutical Research 9(3),
    2017.

    Examples
    --------
    >>> z = np.log([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.2, 0.8]])
    >>> p = CentredIsotonicCalibrator().fit(z, [0, 0, 1, 1]).predict_proba(z)
    >>> p[:, 1].round(6).tolist()  # centres 0.15 -> 0.1 and 0.75 -> 0.9, linear between
    [0.1, 0.166667, 0.833333, 0.9]
    """

    needs_every_class = True

    #: ``m`` maps (see :func:`one_vs_rest_classes`); map ``i`` has ``n`` centred points.
    state_constraints: ClassVar[Constraints] = {
        "x_thresholds_": ArrayList(THRESHOLDS, "m"),
        "y_thresholds_": ArrayList(THRESHOLDS, "m"),
    }

    def _state_dims(self, n_classes: int) -> Dims:
        return {"k": n_classes, "m": len(one_vs_rest_classes(n_classes))}

    def _check_state(self) -> None:
        for i, y in enumerate(self.y_thresholds_):  # x[i], y[i] alike: the declared "n"
            if y[0] <= 0.0 or y[-1] >= 1.0:
                expected = "values strictly between 0 and 1"
                raise InputError(f"state.y_thresholds_[{i}]", expected, "0 or 1")

    def _fit(self, out: ClassifierOutputs, weights: F64 | None = None) -> None:
        probs = out.probs
        n = out.labels.shape[0]
        points = [
            centred_points(probs[:, k], (out.labels == k).astype(np.float64))
            for k in one_vs_rest_classes(out.n_classes)
        ]
        self.x_thresholds_ = [p[0] for p in points]
        self.y_thresholds_ = [clear_of_ends(p[1], n) for p in points]

    def _predict_proba(self, logits: F64) -> F64:
        probs = np.exp(log_softmax64(logits))
        q = np.column_stack(
            [
                np.interp(probs[:, k], self.x_thresholds_[i], self.y_thresholds_[i])
                for i, k in enumerate(one_vs_rest_classes(self.n_classes_))
            ]
        )
        if self.n_classes_ == 2:
            return np.column_stack([1.0 - q[:, 0], q[:, 0]])
        return np.asarray(q / q.sum(axis=1, keepdims=True), dtype=np.float64)

    def _module(self) -> OneVsRest:
        from calibkit.calibrators.modules import (  # torch: only when exported
            Interpolation,
            OneVsRest,
        )

        maps = Interpolation(self.x_thresholds_, self.y_thresholds_)
        return OneVsRest(maps, binary=self.n_classes_ == 2)
