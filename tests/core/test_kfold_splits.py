"""kfold_splits and kendall_tau_b give scikit-learn's folds and scipy's tau-b, the same
numbers, without importing either (the compare command's start-up, issue #44 item 4)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import chdtrc
from scipy.stats import chi2, kendalltau
from sklearn.model_selection import KFold, StratifiedKFold

from calibkit.core.splits import kfold_splits
from calibkit.metrics.selective import kendall_tau_b


@pytest.mark.filterwarnings("ignore:The least populated class")
@pytest.mark.parametrize("seed", range(40))
def test_folds_are_scikit_learns(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(10, 400)), int(rng.integers(2, 6))
    y = rng.integers(0, int(rng.integers(2, 6)), n) + 3 * (seed % 2)
    pairs = [
        (
            kfold_splits(y, k, seed, stratified=False),
            KFold(k, shuffle=True, random_state=seed).split(y),
        )
    ]
    if np.bincount(y).max() >= k:
        pairs.append(
            (
                kfold_splits(y, k, seed),
                StratifiedKFold(k, shuffle=True, random_state=seed).split(y, y),
            )
        )
    for ours, theirs in pairs:
        theirs = list(theirs)
        assert len(ours) == len(theirs)
        for (a_train, a_test), (b_train, b_test) in zip(ours, theirs, strict=True):
            np.testing.assert_array_equal(a_train, b_train)
            np.testing.assert_array_equal(a_test, b_test)


@pytest.mark.parametrize("seed", range(60))
def test_tau_b_is_scipys_bit_for_bit(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, r = int(rng.integers(2, 2000)), int(rng.integers(1, 40))
    a = rng.integers(0, r, n).astype(float) if seed % 2 else rng.normal(size=n)
    b = a + rng.integers(0, 3, n) * rng.normal(size=n) if seed % 3 else rng.integers(0, r, n) / 7
    want, got = kendalltau(a, b).statistic, kendall_tau_b(a, b)
    assert (np.isnan(want) and np.isnan(got)) or got == want


def test_chi_square_tail_is_scipy_stats() -> None:
    for df in range(1, 12):
        for x in (0.0, 0.1, 3.3, 50.0, 1e4, np.inf):
            assert chdtrc(df, x) == chi2.sf(x, df)
