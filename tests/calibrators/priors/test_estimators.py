"""The prior estimators and the reweighting (:mod:`calibkit.calibrators.priors.estimators`),
on cases computed by hand."""

from __future__ import annotations

import numpy as np
import pytest

from calibkit.calibrators.priors.estimators import (
    adapt_priors,
    confusion_matrix,
    estimate_priors_bbse,
    estimate_priors_em,
)
from calibkit.core.errors import ConvergenceWarning


# ----- hand-computed cases ----------------------------------------------------------------
def test_em_fixed_point_by_hand() -> None:
    """Class-0 posteriors 0.9, 0.9, 0.2 under priors (1/2, 1/2): the fixed point solves
    1 = mean_i p_i / (pi p_i + (1 - pi)(1 - p_i)), i.e. 1.44 pi^2 - 2.66 pi + 1.22 = 0,
    whose roots are 61/72 (the maximum) and 1."""
    probs = np.array([[0.9, 0.1], [0.9, 0.1], [0.2, 0.8]])
    pi, n_iter = estimate_priors_em(probs, [0.5, 0.5], tol=1e-14, max_iter=100_000)
    # EM converges linearly: tol 1e-14 on the step leaves an error of a few 1e-13
    np.testing.assert_allclose(pi, [61 / 72, 11 / 72], atol=1e-11)
    assert 10 < n_iter < 100_000
    # one EM step by hand from (1/2, 1/2): the mean of the posteriors (not converged)
    with pytest.warns(ConvergenceWarning, match="max_iter=1"):
        pi1, n1 = estimate_priors_em(probs, [0.5, 0.5], max_iter=1)
    np.testing.assert_allclose(pi1, [2.0 / 3, 1.0 / 3], atol=1e-15)  # (0.9+0.9+0.2)/3
    assert n1 == 1


def test_em_without_shift_stays_at_the_source_priors() -> None:
    """Posteriors whose mean is the source priors are a fixed point: one iteration."""
    probs = np.array([[0.8, 0.2], [0.4, 0.6]])  # mean (0.6, 0.4)
    pi, n_iter = estimate_priors_em(probs, [0.6, 0.4])
    np.testing.assert_allclose(pi, [0.6, 0.4], atol=1e-15)
    assert n_iter == 1


def test_bbse_by_hand() -> None:
    """Source: 10 rows of each class, 8 of each predicted right: C = [[.4, .1], [.1, .4]].
    Target: 62 rows predicted 0 and 38 predicted 1; 0.4 w0 + 0.1 w1 = 0.62 and
    0.1 w0 + 0.4 w1 = 0.38 give w = (1.4, 0.6), priors (0.7, 0.3)."""
    right, wrong = [0.9, 0.1], [0.3, 0.7]
    probs = np.array([right] * 8 + [wrong] * 2 + [right[::-1]] * 8 + [wrong[::-1]] * 2)
    labels = np.array([0] * 10 + [1] * 10)
    c = confusion_matrix(probs, labels)
    np.testing.assert_allclose(c, [[0.4, 0.1], [0.1, 0.4]], atol=1e-15)
    target = np.array([[0.7, 0.3]] * 62 + [[0.1, 0.9]] * 38)
    np.testing.assert_allclose(estimate_priors_bbse(c, target), [0.7, 0.3], atol=1e-12)
    # soft: C[i, j] = mean of p_i over the rows of label j, times their share
    soft = confusion_matrix(probs, labels, soft=True)
    np.testing.assert_allclose(soft, [[0.39, 0.11], [0.11, 0.39]], atol=1e-15)


def test_bbse_clips_an_impossible_target_to_valid_priors() -> None:
    """A target predicting class 0 more often than any prior can explain (C w = mu would
    need w1 < 0): NNLS gives w1 = 0, so the priors are (1, 0), never negative."""
    c = np.array([[0.4, 0.1], [0.1, 0.4]])
    target = np.array([[0.9, 0.1]] * 99 + [[0.1, 0.9]])
    pi = estimate_priors_bbse(c, target)
    np.testing.assert_allclose(pi, [1.0, 0.0], atol=1e-12)


def test_adapt_priors_by_hand() -> None:
    # p = (0.6, 0.4), w = (0.8/0.5, 0.2/0.5) = (1.6, 0.4): (0.96, 0.16) / 1.12
    q = adapt_priors([[0.6, 0.4]], [0.5, 0.5], [0.8, 0.2])
    np.testing.assert_allclose(q, [[0.96 / 1.12, 0.16 / 1.12]], atol=1e-15)
