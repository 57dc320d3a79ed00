"""The target priors under label shift, and the reweighting that adapts posteriors to them.

Under label shift the class priors change between the source (where the model and its
calibrator were fitted) and the target, while the class-conditionals ``p(x | y)`` stay.
Bayes' rule then gives the target posterior from the source one (Saerens et al. 2002)::

    p_t(y | x) = p_s(y | x) w_y / sum_j p_s(j | x) w_j,    w_y = pi_t(y) / pi_s(y)

(:func:`adapt_priors`). The target priors ``pi_t`` are unknown; two estimators from the
unlabelled target rows, each also an object with its parameters (:class:`EM`, :class:`BBSE`,
registered in :data:`ESTIMATORS`) that
:class:`~calibkit.calibrators.priors.label_shift.PriorShiftAdapter` takes:

- :func:`estimate_priors_em` (Saerens et al. 2002): the maximum-likelihood priors, by EM on
  the source posteriors: E step the adapted posteriors under the current priors, M step
  their mean; from ``pi_s``, until no prior moves by more than ``tol``. It needs
  *calibrated* source posteriors: Alexandari, Kundaje & Shrikumar (ICML 2020) show that
  EM on bias-corrected temperature scaling (BCTS,
  :class:`~calibkit.calibrators.logit.bias_corrected.BiasCorrectedTemperatureScaling`) is
  hard to beat.
- :func:`estimate_priors_bbse` (Lipton et al. 2018, black-box shift estimation): with ``C``
  the joint confusion matrix ``C[i, j] = P_s(prediction i, label j)`` of held-out labelled
  source rows and ``mu[i] = P_t(prediction i)`` on the target, ``C w = mu`` for the weights
  ``w``; solved by non-negative least squares (so an ill-conditioned ``C`` gives no negative
  weight), then ``pi_t = w pi_s`` renormalised to sum 1 (``pi_s`` the column sums of ``C``).
  Hard predictions (argmax, one-hot) as in Lipton et al., or soft (the probabilities).

:class:`~calibkit.calibrators.priors.label_shift.PriorShiftAdapter` puts a calibrator, an
estimator and this reweighting together on the calibrator contract.

>>> probs = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]])
>>> adapt_priors(probs, [0.5, 0.5], [0.8, 0.2]).round(4).tolist()
[[0.973, 0.027], [0.5, 0.5], [0.8571, 0.1429]]
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from calibkit.calibrators.component import Component, ComponentSpec, set_component_name
from calibkit.calibrators.priors.prior_diagnostics import (
    bbse_conditioning,
    not_converged,
    singular,
    small_sample,
)
from calibkit.core import catalog
from calibkit.core.errors import InputError
from calibkit.core.outputs import as_outputs, check_scores
from calibkit.core.params import param
from calibkit.core.registry import Registry
from calibkit.core.validation import POSITIVE, Boolean, Integer

__all__ = [
    "BBSE",
    "EM",
    "ESTIMATOR",
    "ESTIMATORS",
    "PRIOR_SUM_TOL",
    "adapt_priors",
    "check_priors",
    "confusion_matrix",
    "estimate_priors_bbse",
    "estimate_priors_em",
]

F64 = npt.NDArray[np.float64]
#: How far from 1 a prior vector's sum may be (float32 frequencies written as text).
PRIOR_SUM_TOL = 1e-6


def check_priors(priors: object, name: str, n_classes: int, *, positive: bool = False) -> F64:
    """``priors`` as a float64 vector of ``n_classes`` finite values >= 0 (> 0 with
    ``positive``) summing to 1 within :data:`PRIOR_SUM_TOL`, renormalised; else an InputError.

    >>> check_priors([0.25, 0.75], "priors", 2).tolist()
    [0.25, 0.75]
    >>> check_priors([0.5, 0.6], "priors", 2)
    Traceback (most recent call last):
    ...
    calibkit.core.errors.InputError: priors: expected 2 priors >= 0 summing to 1, got a sum of 1.1
    """
    try:
        p = np.asarray(priors, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(name, f"{n_classes} numbers", repr(priors)[:60]) from None
    sign = "> 0" if positive else ">= 0"
    expected = f"{n_classes} priors {sign} summing to 1"
    if p.shape != (n_classes,):
        raise InputError(name, expected, f"{p.size} values" if p.ndim == 1 else f"shape {p.shape}")
    if not np.isfinite(p).all():
        raise InputError(name, expected, "a value that is not finite")
    if (p <= 0 if positive else p < 0).any():
        bad = int(np.flatnonzero(p <= 0 if positive else p < 0)[0])
        raise InputError(name, expected, f"{p[bad]:g} for class {bad}")
    total = float(p.sum())
    if abs(total - 1.0) > PRIOR_SUM_TOL:
        raise InputError(name, expected, f"a sum of {total:.6g}")
    return np.asarray(p / total, dtype=np.float64)


def _check_probs(probs: object, name: str) -> F64:
    return np.asarray(check_scores(probs, "probs", name=name), dtype=np.float64)


def adapt_priors(probs: object, source_priors: object, target_priors: object) -> F64:
    """The Bayes reweighting ``p'(y|x) = p(y|x) w_y / sum_j p(j|x) w_j``, ``w = pi_t / pi_s``.

    ``source_priors`` must be positive; ``target_priors`` may hold zeros. A row giving no
    probability to any class of positive target prior (possible only through underflow)
    gets the target priors.

    Examples
    --------
    From balanced source priors to a target with four times more of class 1:

    >>> adapt_priors([[0.5, 0.5], [0.8, 0.2]], [0.5, 0.5], [0.2, 0.8]).round(4).tolist()
    [[0.2, 0.8], [0.5, 0.5]]
    """
    p = _check_probs(probs, "probs")
    k = p.shape[1]
    ps = check_priors(source_priors, "source_priors", k, positive=True)
    pt = check_priors(target_priors, "target_priors", k)
    return reweight(p, pt / ps, pt)


def reweight(p: F64, w: F64, fallback: F64) -> F64:
    q = p * w
    total = q.sum(axis=1, keepdims=True)
    empty = total[:, 0] <= 0  # NaN is not empty: a row with a NaN stays all NaN
    q = q / np.where(total <= 0, 1.0, total)
    if empty.any():
        q[empty] = fallback
    return np.asarray(q, dtype=np.float64)


def estimate_priors_em(
    probs: object,
    source_priors: object,
    *,
    tol: float = 1e-8,
    max_iter: int = 10_000,
) -> tuple[F64, int]:
    """Target priors by EM (Saerens et al. 2002) on the calibrated source posteriors
    ``probs`` of unlabelled target rows; returns ``(priors, iterations)``.

    Starts at ``source_priors`` (positive); each iteration reweights the posteriors by the
    current priors and takes their mean; stops when no prior moves by more than ``tol``,
    or after ``max_iter`` iterations, with a
    :class:`~calibkit.core.errors.ConvergenceWarning` (the priors are then the last
    iterate). The likelihood never decreases along the way.

    Hand case: two classes, source priors (1/2, 1/2), three rows whose class-0 posteriors
    are 0.9, 0.9 and 0.2. A fixed point ``pi`` of class 0 solves ``1 = mean_i p_i / (pi p_i +
    (1 - pi)(1 - p_i))``, i.e. ``1.44 pi^2 - 2.66 pi + 1.22 = 0``: ``pi = 61/72`` (the
    maximum: the likelihood decreases towards ``pi = 1``, the other root).

    >>> pi, n = estimate_priors_em([[0.9, 0.1], [0.9, 0.1], [0.2, 0.8]], [0.5, 0.5], tol=1e-13)
    >>> round(float(pi[0]) * 72, 9), n > 10
    (61.0, True)
    >>> pi, n = estimate_priors_em([[0.5, 0.5], [0.5, 0.5]], [0.5, 0.5])
    >>> pi.tolist(), n
    ([0.5, 0.5], 1)
    """
    p = _check_probs(probs, "probs")
    k = p.shape[1]
    ps = check_priors(source_priors, "source_priors", k, positive=True)
    em = EM(tol=tol, max_iter=max_iter)
    pi, n_iter, converged = em_priors(p, ps, em.tol, em.max_iter)
    if not converged:
        warnings.warn(not_converged(max_iter, tol), stacklevel=2)
    return pi, n_iter


def em_priors(p: F64, ps: F64, tol: float, max_iter: int) -> tuple[F64, int, bool]:
    """EM's priors, iterations, and whether a step moved no prior by more than ``tol``."""
    pi = ps.copy()
    for it in range(1, max_iter + 1):
        new = reweight(p, pi / ps, pi).mean(axis=0)
        new /= new.sum()
        if float(np.abs(new - pi).max()) <= tol:
            return new, it, True
        pi = new
    return pi, max_iter, False


def confusion_matrix(probs: object, labels: object, *, soft: bool = False) -> F64:
    """The joint confusion matrix ``C[i, j] = P(prediction i, label j)`` of labelled rows:
    hard (argmax) or ``soft`` (each row's probabilities in its label's column). Columns sum
    to the label frequencies, the whole to 1.

    >>> confusion_matrix([[0.9, 0.1], [0.3, 0.7], [0.6, 0.4], [0.2, 0.8]], [0, 0, 1, 1]).tolist()
    [[0.25, 0.25], [0.25, 0.25]]
    """
    out = as_outputs(labels, probs)
    p = np.asarray(out.probs, dtype=np.float64)
    pred = _predicted(p, soft)
    k = p.shape[1]
    c = np.zeros((k, k))
    np.add.at(c.T, out.labels, pred)  # column j gathers the rows of label j
    return np.asarray(c / p.shape[0], dtype=np.float64)


def _predicted(p: F64, soft: bool) -> F64:
    """Each row's prediction: its probabilities (soft) or the one-hot argmax (hard)."""
    if soft:
        return p
    return np.asarray(np.eye(p.shape[1])[np.argmax(p, axis=1)], dtype=np.float64)


def estimate_priors_bbse(
    confusion: object, target_probs: object, *, soft: bool = False, n_source: int | None = None
) -> F64:
    """Target priors by black-box shift estimation (Lipton et al. 2018).

    ``confusion`` is :func:`confusion_matrix` of held-out labelled source rows (made with
    the same ``soft``), ``target_probs`` the calibrated probabilities of the target rows.
    Solves ``C w = mu`` (``mu`` the target's mean prediction) for ``w >= 0`` by
    non-negative least squares, then returns ``w pi_s`` renormalised (``pi_s`` the columns'
    sums). A source class without rows (a zero column) gets no target prior.

    BBSE assumes ``C`` invertible (Lipton et al.'s identifiability condition). When it is
    not, or cannot be told from a singular matrix given the ``n_source`` rows it was
    counted on (:func:`~calibkit.calibrators.priors.prior_diagnostics.bbse_conditioning`),
    ``C w = mu`` has a whole family of solutions (or one made of sampling noise) and NNLS
    picks one arbitrarily, typically a vertex such as ``(1, 0, ..., 0)``, whose adapted
    posteriors can be far worse than none. Then the source priors are returned (no
    adaptation: the calibrated posteriors unchanged, never worse than not adapting) with a
    :class:`~calibkit.core.errors.SingularSystemWarning` saying so and naming EM, which
    needs no matrix inverse. Refusing instead would deny the rest of a run (the unadapted
    scores, EM) for a fact about the model, not about the input.

    Hand case: ``C = [[0.4, 0.1], [0.1, 0.4]]`` (source priors 1/2, 80% recall each) and a
    target predicting class 0 for 62% of its rows: ``0.4 w0 + 0.1 w1 = 0.62`` and ``0.1 w0 +
    0.4 w1 = 0.38`` give ``w = (1.4, 0.6)``, priors ``(0.7, 0.3)``.

    >>> target = np.array([[0.9, 0.1]] * 62 + [[0.2, 0.8]] * 38)
    >>> estimate_priors_bbse([[0.4, 0.1], [0.1, 0.4]], target).round(12).tolist()
    [0.7, 0.3]

    A source model that always predicts class 0 (``C``'s second row is 0): no estimate,
    the source priors, with a warning:

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as seen:
    ...     warnings.simplefilter("always")
    ...     estimate_priors_bbse([[0.3, 0.7], [0.0, 0.0]], target).tolist()
    [0.3, 0.7]
    >>> seen[0].category.__name__
    'SingularSystemWarning'
    """
    p = _check_probs(target_probs, "target_probs")
    k = p.shape[1]
    c = np.asarray(check_scores(confusion, "logits", name="confusion"), dtype=np.float64)
    if c.shape != (k, k):
        raise InputError("confusion", f"a ({k}, {k}) matrix, as the target's classes", str(c.shape))
    if (c < 0).any() or abs(float(c.sum()) - 1.0) > PRIOR_SUM_TOL:
        raise InputError("confusion", "a joint confusion matrix (entries >= 0, sum 1)", "other")
    if n_source is not None:
        Integer(1).check("n_source", n_source)
    if p.shape[0] < k:
        warnings.warn(small_sample(p.shape[0], k), stacklevel=2)
    pi, identifiable = bbse_priors(c, p, soft, n_source)
    if not identifiable:
        sigma, floor = bbse_conditioning(c, n_source)
        warnings.warn(singular(sigma, floor), stacklevel=2)
    return pi


def bbse_priors(c: F64, p: F64, soft: bool, n_source: int | None) -> tuple[F64, bool]:
    """BBSE's priors and whether ``c`` identifies them (else the source priors)."""
    from scipy.optimize import nnls  # lazy: scipy costs a quarter second at import

    source = np.asarray(c.sum(axis=0), dtype=np.float64)
    sigma, floor = bbse_conditioning(c, n_source)
    if not sigma > floor:
        return source, False
    mu = _predicted(p, soft).mean(axis=0)
    w, _ = nnls(c, mu)
    pi = w * source
    total = float(pi.sum())
    if not total > 0:  # C w = mu has no non-negative solution but 0: keep the source
        return source, True
    return np.asarray(pi / total, dtype=np.float64), True


# ----- the estimators as objects ------------------------------------------------------------
class Estimate(NamedTuple):
    """One estimate of the target priors and what it found."""

    #: The target priors.
    priors: F64
    #: EM's iterations (0 for BBSE).
    n_iter: int
    #: Whether EM met its tolerance (True for BBSE).
    converged: bool
    #: False when BBSE's system is singular (the priors are then the source's).
    identified: bool


class PriorEstimator(Component):
    """How :class:`~calibkit.calibrators.priors.label_shift.PriorShiftAdapter` estimates the
    target priors from the calibrated posteriors of unlabelled target rows."""

    def soft_confusion(self) -> bool:
        """Whether the adapter's fit keeps the soft confusion matrix (else the hard one)."""
        return False

    def estimate(self, probs: F64, source_priors: F64, confusion: F64, n_source: int) -> Estimate:
        """The target priors of ``probs`` (checked posteriors), from the source's priors,
        joint confusion matrix and number of rows."""
        raise NotImplementedError


class EM(PriorEstimator):
    """EM (Saerens et al. 2002; :func:`estimate_priors_em`): the maximum-likelihood priors.

    Examples
    --------
    >>> EM(max_iter=100)
    EM(tol=1e-08, max_iter=100)
    """

    tol: float = param(
        default=1e-8, check=POSITIVE, doc="Convergence: the largest change of a prior in a step."
    )
    max_iter: int = param(default=10_000, check=Integer(1, 10_000_000), doc="The most iterations.")

    def estimate(self, probs: F64, source_priors: F64, confusion: F64, n_source: int) -> Estimate:
        pi, n_iter, converged = em_priors(probs, source_priors, self.tol, self.max_iter)
        return Estimate(pi, n_iter, converged, True)


class BBSE(PriorEstimator):
    """Black-box shift estimation (Lipton et al. 2018; :func:`estimate_priors_bbse`).

    Examples
    --------
    >>> BBSE(soft=True)
    BBSE(soft=True)
    """

    soft: bool = param(
        default=False,
        check=Boolean(),
        doc="Soft predictions (the probabilities) instead of hard ones (the argmax), in the "
        "confusion matrix and the target's mean prediction.",
    )

    def soft_confusion(self) -> bool:
        return self.soft

    def estimate(self, probs: F64, source_priors: F64, confusion: F64, n_source: int) -> Estimate:
        pi, identified = bbse_priors(confusion, probs, self.soft, n_source)
        return Estimate(pi, 0, True, identified)


#: The prior estimators by name (``calibkit labelshift --estimator``).
ESTIMATORS: Registry[type[PriorEstimator]] = Registry("estimator", on_register=set_component_name)
for _name in catalog.PRIOR_ESTIMATORS:  # the catalog names them; each class is the name's capitals
    ESTIMATORS.register(_name)(globals()[_name.upper()])
#: What ``PriorShiftAdapter(estimator=...)`` accepts: an estimator, or an estimator's name.
ESTIMATOR = ComponentSpec(ESTIMATORS)
