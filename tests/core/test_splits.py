"""Tests for calibkit.core.splits: index splits and folds, and the one calibration / test
split of classifier outputs (calibration part first)."""

from __future__ import annotations

import numpy as np
import pytest

from calibkit.core.errors import InputError
from calibkit.core.outputs import ClassifierOutputs, as_outputs
from calibkit.core.splits import (
    split_indices,
    split_outputs,
    stratified_folds,
    stratified_split,
    take,
)

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


# ----- the calibration / test split of outputs ------------------------------------------------
def synthetic(n: int = 600, k: int = 3, seed: int = 0) -> ClassifierOutputs:
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 3.0
    return as_outputs(np.argmax(z / 2.0 + rng.gumbel(size=z.shape), axis=1), logits=z)


@pytest.mark.parametrize(("n_cal", "expected"), [(250, 250), (0.3, 180), (1, 1), (599, 599)])
def test_split_sizes_are_exact_and_parts_partition(n_cal: int | float, expected: int) -> None:
    out = synthetic()
    cal_idx, test_idx = split_indices(out.labels, n_cal, seed=4)
    assert cal_idx.shape == (expected,)
    np.testing.assert_array_equal(np.sort(np.concatenate([cal_idx, test_idx])), np.arange(600))
    cal, test = split_outputs(out, n_cal, seed=4)
    np.testing.assert_array_equal(cal.scores, out.scores[cal_idx])
    np.testing.assert_array_equal(test.labels, out.labels[test_idx])


def test_the_calibration_part_comes_first_as_in_stratified_split_s_second() -> None:
    """One order: the calibration part is the part of ``n_cal`` rows, returned first."""
    y = synthetic().labels
    cal, test = split_indices(y, 100, seed=5)
    rest, taken = stratified_split(y, 100, seed=5, every_class_in_both=False)
    np.testing.assert_array_equal(cal, taken)
    np.testing.assert_array_equal(test, rest)


def test_split_is_stratified() -> None:
    y = np.repeat([0, 1, 2, 3], [500, 300, 150, 50])
    cal_idx, _ = split_indices(y, 0.5, seed=0)
    np.testing.assert_array_equal(np.bincount(y[cal_idx]), [250, 150, 75, 25])
    cal_idx, _ = split_indices(y, 333, seed=1)
    ideal = 333 * np.bincount(y) / y.size
    assert np.all(np.abs(np.bincount(y[cal_idx]) - ideal) < 1)
    assert cal_idx.size == 333


def test_split_depends_on_the_seed_only() -> None:
    y = synthetic().labels
    a, _ = split_indices(y, 300, seed=7)
    b, _ = split_indices(y, 300, seed=7)
    c, _ = split_indices(y, 300, seed=8)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


@pytest.mark.parametrize("bad", [0, 600, -3, 0.0, 1.0, float("nan"), True, "half", None])
def test_bad_split_sizes_are_input_errors(bad: object) -> None:
    with pytest.raises(InputError, match="n_cal"):
        split_outputs(synthetic(), bad, seed=0)  # type: ignore[arg-type]


@pytest.mark.parametrize("fraction", [0.0005, 0.9995])
def test_a_fraction_leaving_a_part_empty_is_refused_not_rounded_into_range(
    fraction: float,
) -> None:
    """Issue #45: the one split takes the shift study's rule (before, compare clamped 0.9995
    of 600 rows to 599 and 0.0005 to 1, silently)."""
    with pytest.raises(InputError, match=r"n_cal: .*leaving samples for both parts"):
        split_indices(synthetic().labels, fraction, seed=0)


def test_the_test_part_is_cut_to_test_size_stratified() -> None:
    y = np.repeat(np.arange(4), 10)
    cal, test = split_indices(y, 20, seed=0, test_size=8)
    assert (len(cal), len(test)) == (20, 8)
    assert np.bincount(y[test]).tolist() == [2, 2, 2, 2]
    assert not set(cal) & set(test)
    with pytest.raises(InputError, match="test_size"):
        split_indices(y, 20, seed=0, test_size=3, every_class=True)


def test_every_class_in_both_parts_when_asked() -> None:
    y = np.repeat(np.arange(4), 10)
    split_indices(y, 2, seed=0)  # two classes left out of the calibration part: allowed
    with pytest.raises(InputError, match="labels"):
        split_indices(y, 2, seed=0, every_class=True)


def test_take_keeps_the_kind() -> None:
    out = as_outputs([0, 1, 1], probs=[[0.9, 0.1], [0.2, 0.8], [0.4, 0.6]])
    part = take(out, np.array([0, 2]))
    assert (part.kind, part.labels.tolist()) == (out.kind, [0, 1])
    np.testing.assert_array_equal(part.scores, out.scores[[0, 2]])
