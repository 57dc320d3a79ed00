"""Seeded stratified splits and folds of sample indices (plain numpy).

Every class is represented in proportion: the per-class counts of the second part are the
largest-remainder rounding of ``n_second * class_count / N``, so they sum exactly to
``n_second``. The same labels and seed always give the same indices.

>>> labels = np.array([0] * 6 + [1] * 4)
>>> first, second = stratified_split(labels, 5, seed=0)
>>> len(first), len(second), np.bincount(labels[second]).tolist()
(5, 5, [3, 2])
>>> [np.bincount(labels[f]).tolist() for f in stratified_folds(labels, 2, seed=0)]
[[3, 2], [3, 2]]
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from calibkit.core.errors import InputError

IntArray = npt.NDArray[np.int64]


def _check_labels(labels: npt.ArrayLike) -> IntArray:
    arr = np.asarray(labels)
    if arr.ndim != 1 or arr.size == 0 or not np.issubdtype(arr.dtype, np.integer):
        raise InputError("labels", "a non-empty 1-D integer array", f"{arr.dtype} {arr.shape}")
    return arr.astype(np.int64, copy=False)


def _class_order(labels: IntArray, rng: np.random.Generator) -> tuple[IntArray, IntArray]:
    """Indices grouped by class (in class order, shuffled within each class), class counts."""
    perm = rng.permutation(labels.shape[0])
    order = perm[np.argsort(labels[perm], kind="stable")].astype(np.int64)
    return order, np.unique(labels, return_counts=True)[1].astype(np.int64)


def _allocate(counts: IntArray, total: int, rng: np.random.Generator) -> IntArray:
    """Largest-remainder split of ``total`` in proportion to ``counts`` (ties: at random)."""
    quota: npt.NDArray[np.float64] = counts * total / counts.sum()
    base = np.floor(quota).astype(np.int64)
    rest = total - int(base.sum())
    order = np.lexsort((rng.random(counts.size), base - quota))
    base[order[:rest]] += 1
    return base.astype(np.int64)


def stratified_split(
    labels: npt.ArrayLike, n_second: int | float, seed: int, *, every_class_in_both: bool = True
) -> tuple[IntArray, IntArray]:
    """Split indices into ``(first, second)``, stratified by class.

    ``n_second`` is a count (int) or a fraction in (0, 1) of the samples. With
    ``every_class_in_both`` (the default) each class must have at least one sample in each
    part; both index arrays are sorted.
    """
    y = _check_labels(labels)
    n = y.shape[0]
    if isinstance(n_second, bool) or not isinstance(n_second, int | float):
        raise InputError("n_second", "an int count or a float fraction", repr(n_second))
    if isinstance(n_second, float):
        if not 0.0 < n_second < 1.0:
            raise InputError("n_second", "a fraction in (0, 1)", repr(n_second))
        k = round(n_second * n)
    else:
        k = n_second
    if not 0 < k < n:
        raise InputError("n_second", f"a count in 1..{n - 1}", repr(n_second))
    rng = np.random.default_rng(seed)
    order, counts = _class_order(y, rng)
    take = _allocate(counts, k, rng)
    if every_class_in_both and (np.any(take == 0) or np.any(take == counts)):
        bad = int(np.flatnonzero((take == 0) | (take == counts))[0])
        raise InputError(
            "labels",
            "enough samples per class to put at least one in each part",
            f"class {int(np.unique(y)[bad])} with {int(counts[bad])} sample(s)",
        )
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    rank = np.arange(n) - np.repeat(starts, counts)
    in_second = rank < np.repeat(take, counts)
    second = np.sort(order[in_second])
    first = np.sort(order[~in_second])
    return first, second


def stratified_folds(labels: npt.ArrayLike, n_folds: int, seed: int) -> list[IntArray]:
    """Partition indices into ``n_folds`` sorted folds, each class spread evenly.

    Within a class the shuffled samples are dealt round-robin, starting each class at the
    fold after the previous class ended, so fold sizes differ by at most one overall and
    per class.
    """
    y = _check_labels(labels)
    if isinstance(n_folds, bool) or not isinstance(n_folds, int) or n_folds < 2:
        raise InputError("n_folds", "an int >= 2", repr(n_folds))
    order, _ = _class_order(y, np.random.default_rng(seed))
    if n_folds > y.shape[0]:
        raise InputError("n_folds", f"at most {y.shape[0]} (the number of samples)", str(n_folds))
    # Position i of the class-grouped order goes to fold i % n_folds: round-robin within
    # each class, continued across classes so the fold totals stay balanced too.
    fold = np.arange(y.shape[0]) % n_folds
    return [np.sort(order[fold == f]) for f in range(n_folds)]
