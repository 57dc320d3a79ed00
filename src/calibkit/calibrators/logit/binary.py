"""Binary calibrators: Platt scaling and beta calibration (two classes only).

Both are logistic regressions of ``y`` on features of the positive-class score, fitted by
maximum likelihood (plain NLL with its exact gradient, scipy L-BFGS, float64, started at the
identity map so the calibration-set NLL can only go down):

``"platt"`` (Platt 1999)
    ``P(y = 1) = sigmoid(a s + b)`` with ``s = z_1 - z_0``, the positive-class logit (for
    probabilities passed as ``log(probs)``, ``s = logit(p)``). By default
    (``targets="labels"``) this is the maximum-likelihood fit, as ``LogisticRegression``
    without penalty on ``s`` would give; ``targets="platt"`` fits Platt's smoothed targets
    instead, ``(N+ + 1) / (N+ + 2)`` for the positives and ``1 / (N- + 2)`` for the
    negatives (``N+``, ``N-``: the positives' and negatives' counts, or weight sums), the
    prior Platt puts on the labels against overfitting small calibration sets, and what
    scikit-learn's ``CalibratedClassifierCV(method="sigmoid")`` fits. ``a`` may be negative.

``"beta"`` (Kull, Silva Filho & Flach 2017)
    ``P(y = 1) = sigmoid(a ln p + b (-ln(1 - p)) + c)`` with ``p = softmax(z)_1``, and
    ``a, b >= 0`` (a monotone map). As in the paper, a fit with a negative ``a`` (or else a
    negative ``b``) is redone without that feature, whose coefficient becomes 0; should the
    remaining coefficient also come out negative, only the intercept is kept. ``a`` and ``b``
    can be exactly 0, so they are stored as they are, not in log space.

On perfectly separable calibration data the maximum-likelihood slope is infinite; the fit
stops at a large finite slope (the optimiser's gradient tolerance).

>>> z = np.array([[0.0, -2.0], [0.0, -1.0], [0.0, 0.0], [0.0, 1.0], [0.0, 2.0], [0.0, 3.0]])
>>> platt = PlattScaling().fit(z, [0, 1, 0, 0, 1, 1])
>>> bool(0 < platt.slope_ < 1), platt.predict_proba(z).sum(axis=1).round(12).tolist()
(True, [1.0, 1.0, 1.0, 1.0, 1.0, 1.0])
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

import numpy as np

from calibkit.calibrators.base import COEFFICIENT, F64, MAX_COEFFICIENT, Calibrator
from calibkit.core.outputs import ClassifierOutputs, FloatArray, log_softmax64
from calibkit.core.params import param
from calibkit.core.validation import Choice, Constraints, Real

if TYPE_CHECKING:
    from calibkit.calibrators.modules import BinaryLogistic


def logistic_nll(
    weights: F64, features: F64, y: F64, sample_weight: F64 | None = None
) -> tuple[float, F64]:
    """Mean NLL of ``sigmoid(features @ w[:-1] + w[-1])`` and its exact gradient (the
    ``sample_weight``-weighted mean when given)."""
    from scipy.special import expit  # lazy: scipy costs a quarter second at import

    t = features @ weights[:-1] + weights[-1]
    resid = expit(t) - y
    if sample_weight is None:
        loss = float(np.mean(np.logaddexp(0.0, t) - y * t))
        grad = np.append(features.T @ resid, resid.sum()) / y.shape[0]
        return loss, grad
    w = sample_weight / sample_weight.sum()
    loss = float(w @ (np.logaddexp(0.0, t) - y * t))
    resid *= w
    return loss, np.append(features.T @ resid, resid.sum())


def fit_logistic(features: F64, y: F64, start: F64, sample_weight: F64 | None = None) -> F64:
    """Maximum-likelihood weights (coefficients, then intercept), L-BFGS from ``start``."""
    from scipy.optimize import minimize  # lazy: scipy costs a quarter second at import

    res = minimize(
        logistic_nll,
        np.asarray(start, dtype=np.float64),
        args=(features, y, sample_weight),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": 2000, "gtol": 1e-10, "ftol": 1e-15},
    )
    return np.asarray(res.x, dtype=np.float64)


def two_class_probs(t: F64) -> F64:
    """``[1 - sigmoid(t), sigmoid(t)]`` as an (N, 2) array."""
    from scipy.special import expit  # lazy: scipy costs a quarter second at import

    return np.column_stack([expit(-t), expit(t)])


#: The targets :class:`PlattScaling` can fit: the labels, or Platt's smoothed ones.
PLATT_TARGETS = ("labels", "platt")


def platt_targets(y: F64, sample_weight: F64 | None = None) -> F64:
    """Platt's targets: ``(N+ + 1) / (N+ + 2)`` for the positives, ``1 / (N- + 2)`` else.

    ``N+`` and ``N-`` count the positives and the negatives (sum their weights when
    ``sample_weight`` is given).

    >>> platt_targets(np.array([1.0, 0.0, 0.0])).round(4).tolist()
    [0.6667, 0.25, 0.25]
    """
    pos = y > 0
    w = np.ones_like(y) if sample_weight is None else sample_weight
    n_pos, n_neg = float(w[pos].sum()), float(w[~pos].sum())
    return np.where(pos, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))


class PlattScaling(Calibrator):
    """Platt scaling: ``sigmoid(slope_ * (z_1 - z_0) + intercept_)`` fitted by NLL.

    Two classes only.

    Attributes
    ----------
    slope_, intercept_ : float
        The fitted logistic map of the positive-class logit.

    Examples
    --------
    {fit_example}

    >>> z = np.array([[0.0, -1.0], [0.0, 0.0], [0.0, 1.0], [0.0, 2.0]])
    >>> platt = PlattScaling().fit(z, [0, 1, 0, 1])
    >>> bool(platt.slope_ > 0)
    True
    """

    accepts_sample_weight = True
    state_constraints: ClassVar[Constraints] = {"slope_": COEFFICIENT, "intercept_": COEFFICIENT}
    targets: Literal["labels", "platt"] = param(
        default="labels",
        check=Choice(*PLATT_TARGETS),
        doc="Fit the labels (maximum likelihood) or Platt's smoothed targets "
        "(:func:`platt_targets`; scikit-learn's ``method='sigmoid'``).",
    )

    def _fit(self, out: ClassifierOutputs, weights: F64 | None = None) -> None:
        s = _positive_logit(out.as_logits())
        y = out.labels.astype(np.float64)
        if self.targets == "platt":
            y = platt_targets(y, weights)
        slope, intercept = fit_logistic(s[:, None], y, np.array([1.0, 0.0]), weights)
        self.slope_ = float(slope)
        self.intercept_ = float(intercept)

    def _predict_proba(self, logits: F64) -> F64:
        return two_class_probs(self.slope_ * _positive_logit(logits) + self.intercept_)

    def _module(self) -> BinaryLogistic:
        from calibkit.calibrators.modules import BinaryLogistic  # torch: only when exported

        return BinaryLogistic([self.slope_], self.intercept_, on_log_probs=False)


class BetaCalibration(Calibrator):
    """Beta calibration: ``sigmoid(a_ ln p - b_ ln(1 - p) + c_)`` with ``a_, b_ >= 0``.

    Takes no parameters; two classes only.

    Attributes
    ----------
    a_, b_, c_ : float
        The fitted coefficients (``a_, b_ >= 0``).

    Examples
    --------
    {fit_example}

    >>> z = np.array([[0.0, -1.0], [0.0, 0.0], [0.0, 1.0], [0.0, 2.0]])
    >>> beta = BetaCalibration().fit(z, [0, 1, 0, 1])
    >>> bool(beta.a_ >= 0 and beta.b_ >= 0)
    True
    """

    accepts_sample_weight = True
    state_constraints: ClassVar[Constraints] = {
        "a_": Real(0.0, MAX_COEFFICIENT),
        "b_": Real(0.0, MAX_COEFFICIENT),
        "c_": COEFFICIENT,
    }

    def _fit(self, out: ClassifierOutputs, weights: F64 | None = None) -> None:
        feats = _beta_features(out.as_logits())
        y = out.labels.astype(np.float64)
        a, b, c = fit_logistic(feats, y, np.array([1.0, 1.0, 0.0]), weights)
        if a < 0 or b < 0:
            keep = 1 if a < 0 else 0  # drop the offending feature (a first, as in the paper)
            coef, c = fit_logistic(feats[:, [keep]], y, np.array([1.0, 0.0]), weights)
            if coef < 0:  # no monotone use of the remaining feature either
                rate = y.mean() if weights is None else np.average(y, weights=weights)
                coef, c = 0.0, float(np.log(rate) - np.log1p(-rate))
            a, b = (0.0, coef) if keep == 1 else (coef, 0.0)
        self.a_, self.b_, self.c_ = float(a), float(b), float(c)

    def _predict_proba(self, logits: F64) -> F64:
        return two_class_probs(_beta_features(logits) @ np.array([self.a_, self.b_]) + self.c_)

    def _module(self) -> BinaryLogistic:
        from calibkit.calibrators.modules import BinaryLogistic  # torch: only when exported

        return BinaryLogistic([self.a_, self.b_], self.c_, on_log_probs=True)


def _positive_logit(logits: FloatArray) -> F64:
    z = np.asarray(logits, dtype=np.float64)
    return z[:, 1] - z[:, 0]


def _beta_features(logits: FloatArray) -> F64:
    """``[ln p, -ln(1 - p)]`` for ``p = softmax(logits)_1``, from the log-softmax."""
    log_p = log_softmax64(logits)
    return np.column_stack([log_p[:, 1], -log_p[:, 0]])
