"""What the target-prior estimators of :mod:`calibkit.calibrators.priors.label_shift` can
meet, and the words for it: whether BBSE's confusion matrix identifies the priors
(:func:`bbse_conditioning`), and the warnings (EM stopped by its budget,
BBSE's system singular, fewer target rows than classes) that the estimators give and the
fitted adapter's ``caveats()`` repeats.

>>> round(bbse_conditioning([[0.4, 0.1], [0.1, 0.4]])[0], 12)  # M's singular values: 1, 0.6
0.6
"""

from __future__ import annotations

import numpy as np

from calibkit.core.errors import ConvergenceWarning, SingularSystemWarning, SmallSampleWarning


def not_converged(max_iter: int, tol: float) -> ConvergenceWarning:
    """The :class:`~calibkit.core.errors.ConvergenceWarning` of EM that used its budget.

    >>> str(not_converged(1, 1e-8))[:55]
    'EM did not converge in max_iter=1 iteration (a prior st'
    """
    its = "iteration" if max_iter == 1 else "iterations"
    return ConvergenceWarning(
        f"EM did not converge in max_iter={max_iter} {its} (a prior still moved by more "
        f"than tol={tol:g}): the target priors are its last iterate; raise max_iter"
    )


def bbse_conditioning(confusion: object, n_source: int | None = None) -> tuple[float, float]:
    """How far BBSE's confusion matrix is from singular: ``(sigma, floor)``, BBSE's system
    being solvable when ``sigma > floor``.

    ``sigma`` is the smallest singular value of ``M = P(prediction | label)`` (the joint
    ``confusion``'s columns divided by their sums: the source priors, which only rescale
    ``w``, are left out, so a perfect classifier has ``M = I``, ``sigma = 1`` however
    imbalanced its source). ``floor`` is the larger of the numerical floor ``sigma_max K
    eps`` (NumPy's rank rule) and, with ``n_source`` (the rows ``confusion`` was counted
    on), the sampling error of ``M``'s worst column: column ``j`` is the mean prediction of
    the ``n_j`` source rows of class ``j``, each of squared norm at most 1, so its error
    has a norm of about ``sqrt((1 - |M_j|^2) / n_j)``; a change of one column by ``d``
    moves ``sigma`` by at most ``d`` (Weyl), so ``sigma <= floor`` means a matrix within
    one column's sampling error of ``M`` is singular: the data cannot tell ``M`` from one.

    Parameters
    ----------
    confusion : array-like of shape (K, K)
        A joint confusion matrix (:func:`confusion_matrix`), every column sum positive.
    n_source : int, optional
        The labelled rows it was counted on; without it, the numerical floor alone.

    Returns
    -------
    sigma, floor : float

    Examples
    --------
    A perfect classifier; one that always predicts class 0 (``M``'s second row is 0):

    >>> sigma, floor = bbse_conditioning([[0.3, 0.0], [0.0, 0.7]], 100)
    >>> sigma, floor < 1e-15
    (1.0, True)
    >>> sigma, floor = bbse_conditioning([[0.3, 0.7], [0.0, 0.0]], 100)
    >>> sigma, floor > 0
    (0.0, True)
    """
    c = np.asarray(confusion, dtype=np.float64)
    k = c.shape[0]
    sums = c.sum(axis=0)
    if not (sums > 0).all():
        return 0.0, 0.0
    m = c / sums
    s = np.linalg.svd(m, compute_uv=False)
    floor = float(s[0]) * k * float(np.finfo(np.float64).eps)
    if n_source is not None:
        rows = np.maximum(np.rint(sums * n_source), 1.0)
        spread = np.clip(1.0 - (m**2).sum(axis=0), 0.0, None)
        floor = max(floor, float(np.sqrt(spread / rows).max()))
    return float(s[-1]), floor


def singular(sigma: float, floor: float) -> SingularSystemWarning:
    """The :class:`~calibkit.core.errors.SingularSystemWarning` of BBSE when it cannot
    identify the target priors.

    >>> str(singular(0.0, 1e-15))[:46]
    'BBSE: the confusion matrix is singular (its sm'
    """
    how = "singular" if sigma <= 1e-12 else "singular within its sampling error"
    return SingularSystemWarning(
        f"BBSE: the confusion matrix is {how} (its smallest singular value, {sigma:.3g}, is "
        f"not above {floor:.3g}): the source rows do not identify the target priors, so the "
        "source priors were kept (no adaptation); EM (estimator em) needs no such inverse"
    )


def small_sample(n_target: int, n_classes: int) -> SmallSampleWarning:
    """The :class:`~calibkit.core.errors.SmallSampleWarning` about a target of fewer rows
    than classes.

    >>> str(small_sample(1, 3))[:50]
    '1 target row for 3 classes: too few to estimate 3 '
    """
    rows = "row" if n_target == 1 else "rows"
    return SmallSampleWarning(
        f"{n_target} target {rows} for {n_classes} classes: too few to estimate "
        f"{n_classes} priors (from n rows the maximum-likelihood priors can put all their "
        f"mass on n classes, Lindsay 1983): the estimate says more about these rows than "
        "about the target; give at least as many rows as classes"
    )
