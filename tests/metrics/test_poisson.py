"""Poisson(1) resample weights (metrics/poisson.py): the table and the draws."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from calibkit.metrics.poisson import POISSON_BITS, poisson_counts, poisson_table


def _pmf(top: int) -> np.ndarray:
    """Poisson(1) probabilities of 0 .. top - 1, and of ``top`` or more last."""
    p = np.array([math.exp(-1.0) / math.factorial(k) for k in range(top)])
    return np.append(p, 1.0 - p.sum())


def test_table_matches_the_poisson_pmf_to_its_resolution() -> None:
    table = poisson_table()
    assert table.dtype == np.uint8
    assert table.shape == (1 << POISSON_BITS,)
    share = np.bincount(table) / table.size
    assert table.max() == 8
    # each share is within one entry of its probability (two rounded CDF ends); the tail
    # beyond 8 (1.1e-6) is folded in
    assert np.abs(share[:8] - _pmf(8)[:8]).max() <= 1.0 / table.size
    assert share[8] == pytest.approx(_pmf(8)[8], abs=1.0 / table.size)
    assert table.mean() == 1.0  # exactly
    assert table.var() == pytest.approx(1.0, abs=1e-4)


def test_drawn_weights_are_poisson_one() -> None:
    w = poisson_counts(np.random.default_rng(0), 40, 50_001).reshape(-1)  # 2e6 weights
    assert w.dtype == np.uint8
    assert w.mean() == pytest.approx(1.0, abs=3e-3)  # sd of the mean: 7e-4
    assert w.var() == pytest.approx(1.0, abs=6e-3)
    observed = np.bincount(np.minimum(w, 5), minlength=6)
    expected = _pmf(5) * w.size
    assert stats.chisquare(observed, expected).pvalue > 1e-3


def test_weights_do_not_depend_on_the_block_size() -> None:
    for n in (7, 8, 50_001):
        whole = poisson_counts(np.random.default_rng(3), 3, n)
        rng = np.random.default_rng(3)
        rows = np.vstack([poisson_counts(rng, 1, n) for _ in range(3)])
        np.testing.assert_array_equal(whole, rows)
