"""Calibration errors from per-bin sums: hand-computed values, rows as independent weightings."""

from __future__ import annotations

import numpy as np
import pytest

from calibkit.core.binning import bin_stats
from calibkit.core.errors import InputError
from calibkit.metrics.bin_errors import (
    debiased_from_stats,
    error_from_stats,
    errors_from_sums,
    sce_hit_index,
    sce_index,
)


def test_hand_computed_errors() -> None:
    # bin 0: two samples, conf 0.1 and 0.3, one positive; bin 1: one sample, conf 0.9, positive
    stats = bin_stats(np.array([0.1, 0.3, 0.9]), np.array([0.0, 1.0, 1.0]), n_bins=2)
    assert error_from_stats(stats, "l1") == pytest.approx((2 / 3) * 0.3 + (1 / 3) * 0.1)
    assert error_from_stats(stats, "max") == pytest.approx(0.3)
    assert error_from_stats(stats, "l2") == pytest.approx(np.sqrt((2 / 3) * 0.09 + 0.01 / 3))
    # debiased: only bin 0 (2 samples) counts: (0.5 - 0.2)^2 - 0.5 * 0.5 / 1 < 0 -> 0
    assert debiased_from_stats(stats) == 0.0


def test_rows_are_independent_weightings() -> None:
    rng = np.random.default_rng(0)
    counts = rng.integers(0, 5, size=(3, 4)).astype(np.float64)
    counts[:, 0] += 1.0
    conf_sum = counts * rng.random((3, 4))
    acc_sum = np.floor(counts * rng.random((3, 4)))
    rows = errors_from_sums(counts, conf_sum, acc_sum)
    for i in range(3):
        single = errors_from_sums(counts[i], conf_sum[i], acc_sum[i])
        for key, values in rows.items():
            assert values[i] == pytest.approx(float(single[key]), rel=1e-12)


def test_bad_norm_is_an_input_error() -> None:
    stats = bin_stats(np.array([0.5]), np.array([1.0]), n_bins=2)
    with pytest.raises(InputError, match="norm"):
        error_from_stats(stats, "l3")  # type: ignore[arg-type]


def test_sce_indices_put_each_class_in_its_own_block() -> None:
    probs = np.array([[0.05, 0.95], [0.55, 0.45]])
    assert sce_index(probs, 10).tolist() == [0, 19, 5, 14]
    assert sce_hit_index(probs, np.array([1, 1]), 10).tolist() == [19, 14]


@pytest.mark.parametrize("n_bins", [1, 7, 10])
def test_sce_split_map_bins_only_the_entries_above_the_first_bin(n_bins: int) -> None:
    """The map equals the one built from every entry's bin (entries on bin edges included)."""
    from scipy import sparse

    from calibkit.core.binning import equal_width_index
    from calibkit.metrics.bin_errors import sce_hit_index, sce_split_map

    rng = np.random.default_rng(n_bins)
    probs = rng.dirichlet(np.ones(6) * 0.4, size=300)
    probs[:60] = np.round(probs[:60] * n_bins) / n_bins  # on the edges, 0 and 1 included
    labels = rng.integers(0, 6, 300)
    n, k = probs.shape
    idx = equal_width_index(probs.reshape(-1), n_bins).reshape(probs.shape)
    i, c = np.nonzero(idx)
    rows = np.concatenate(
        [sce_hit_index(probs, labels, n_bins), c * n_bins + idx[i, c], k * n_bins + c]
    )
    cols = np.concatenate([np.arange(n), i, i])
    vals = np.concatenate([np.ones(n), -probs[i, c], probs[i, c]])
    want = sparse.csc_matrix((vals, (rows, cols)), shape=(k * n_bins + k, n))
    got = sce_split_map(probs, labels, n_bins)
    assert (got != want).nnz == 0
    np.testing.assert_array_equal(got.indptr, want.indptr)
    np.testing.assert_array_equal(got.indices, want.indices)
    np.testing.assert_array_equal(got.data, want.data)
