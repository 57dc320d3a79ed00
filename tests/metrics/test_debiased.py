"""Tests of the debiased marginal calibration error against the authors' package.

The reference values were computed with ``uncertainty-calibration`` 0.1.4 (Kumar et al.'s
``calibration`` package, installed outside the project) on the seeded data built here:
``lower_bound_scaling_ce(probs, labels, p=2, debias=True, num_bins=15, mode=...)`` and
``get_binning_ce(probs, labels, p=2, debias=True, mode="marginal")``. With 300 distinct
values and 15 bins, their equal-mass bins (``np.array_split`` of the sorted values) are
calibkit's.
"""

from __future__ import annotations

import numpy as np
import pytest

from calibkit.core.errors import InputError
from calibkit.metrics import debiased_ece, debiased_marginal_ce


def _continuous() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    z = rng.normal(size=(300, 3)) * 2
    p = np.exp(z)
    p /= p.sum(1, keepdims=True)
    q = np.exp(z / 1.5) / np.exp(z / 1.5).sum(1, keepdims=True)
    y = np.array([rng.choice(3, p=row) for row in q])
    return p, y


def test_marginal_matches_the_authors_package() -> None:
    p, y = _continuous()
    got = debiased_marginal_ce(y, probs=p, n_bins=15)
    # the reference values: float64 numpy, no BLAS, 300 samples; another implementation's
    # sums (~1e-15) and a CPU's exp (an ulp) stay far below 1e-12
    assert got == pytest.approx(0.0627189386012583, rel=1e-12)


def test_top_label_is_calibkits_debiased_ece() -> None:
    # the same estimator, top-label: calibkit's existing metric, reused rather than copied
    p, y = _continuous()
    got = debiased_ece(y, probs=p, n_bins=15, scheme="equal_mass")
    assert got == pytest.approx(0.09006561572221863, rel=1e-12)


def test_distinct_bins_match_the_authors_binned_estimator() -> None:
    rng = np.random.default_rng(8)
    p1 = rng.choice([0.2, 0.5, 0.8], size=200)
    y = (rng.random(200) < p1 * 0.9 + 0.05).astype(int)
    probs = np.column_stack([1 - p1, p1])
    got = debiased_marginal_ce(y, probs=probs, scheme="distinct")
    assert got == pytest.approx(0.07313473592411193, rel=1e-12)
    assert debiased_marginal_ce(y, probs=p1, scheme="distinct") == pytest.approx(got, rel=1e-12)


def test_hand_computed_two_bins() -> None:
    # class 1: bins {0.2, 0.3} (acc 0, conf 0.25) and {0.7, 0.8} (acc 1, conf 0.75); the
    # variance terms are 0, so E_1 = 0.25^2; class 0 mirrors it
    probs = [[0.8, 0.2], [0.7, 0.3], [0.3, 0.7], [0.2, 0.8]]
    assert debiased_marginal_ce([0, 0, 1, 1], probs=probs, n_bins=2) == pytest.approx(0.25)


def test_bias_correction_can_reach_zero() -> None:
    # one bin, frequency 1/2 at confidence 1/2: (0)^2 - 0.25 / 3 < 0 -> clipped to 0
    assert debiased_marginal_ce([0, 1, 0, 1], probs=[[0.5, 0.5]] * 4, n_bins=1) == 0.0


def test_logits_give_the_same_value() -> None:
    p, y = _continuous()
    by_logits = debiased_marginal_ce(y, logits=np.log(p))
    assert by_logits == pytest.approx(debiased_marginal_ce(y, probs=p), rel=1e-9)


def test_an_unknown_scheme_is_named() -> None:
    with pytest.raises(InputError, match="scheme"):
        debiased_marginal_ce([0, 1], probs=[[0.5, 0.5]] * 2, scheme="quantile")  # type: ignore[arg-type]
