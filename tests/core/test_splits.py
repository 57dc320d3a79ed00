"""Tests for calibkit.core.splits."""

from __future__ import annotations

import numpy as np
import pytest

from calibkit.core.errors import InputError
from calibkit.core.splits import stratified_folds, stratified_split

LABELS = np.repeat(np.arange(4), [500, 300, 150, 50])


def test_split_exact_count_and_proportions() -> None:
    first, second = stratified_split(LABELS, 200, seed=3)
    assert len(second) == 200
    assert len(first) == 800
    np.testing.assert_array_equal(np.bincount(LABELS[second]), [100, 60, 30, 10])
    assert np.intersect1d(first, second).size == 0
    np.testing.assert_array_equal(np.sort(np.concatenate([first, second])), np.arange(1000))


def test_split_fraction_and_rounding_sums_exactly() -> None:
    labels = np.repeat(np.arange(3), [7, 7, 7])
    _, second = stratified_split(labels, 10, seed=0)
    assert len(second) == 10
    assert set(np.bincount(labels[second]).tolist()) <= {3, 4}
    _, second = stratified_split(LABELS, 0.25, seed=0)
    assert len(second) == 250


def test_split_deterministic_and_seed_dependent() -> None:
    a = stratified_split(LABELS, 100, seed=7)
    b = stratified_split(LABELS, 100, seed=7)
    c = stratified_split(LABELS, 100, seed=8)
    np.testing.assert_array_equal(a[1], b[1])
    assert not np.array_equal(a[1], c[1])


def test_split_too_few_samples() -> None:
    labels = np.array([0] * 20 + [1])
    with pytest.raises(InputError, match="class 1"):
        stratified_split(labels, 5, seed=0)
    with pytest.raises(InputError, match="n_second"):
        stratified_split(LABELS, 1000, seed=0)


def test_folds_partition_and_spread() -> None:
    folds = stratified_folds(LABELS, 7, seed=1)
    assert len(folds) == 7
    np.testing.assert_array_equal(np.sort(np.concatenate(folds)), np.arange(1000))
    sizes = [len(f) for f in folds]
    assert max(sizes) - min(sizes) <= 1
    per_class = np.array([np.bincount(LABELS[f], minlength=4) for f in folds])
    assert np.all(per_class.max(axis=0) - per_class.min(axis=0) <= 1)
    again = stratified_folds(LABELS, 7, seed=1)
    assert all(np.array_equal(x, y) for x, y in zip(folds, again, strict=True))


def test_folds_bad_count() -> None:
    with pytest.raises(InputError, match="n_folds"):
        stratified_folds(LABELS, 1, seed=0)
