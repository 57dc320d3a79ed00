"""Seeded stratified splits and folds: of sample indices, and the one calibration / test
split of classifier outputs (:func:`split_indices`, :func:`split_outputs`: calibration part
first), which ``compare``, ``conformal``, ``shift`` and the demo read.

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

import math

import numpy as np
import numpy.typing as npt

from calibkit.core.errors import InputError
from calibkit.core.outputs import ClassifierOutputs, check_labels

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


def _cal_count(n_cal: object, n: int) -> int:
    """The calibration count of ``n_cal`` (a count, or a fraction of the ``n`` rows) that
    leaves a row in each part; else the error naming ``n_cal``."""
    if n < 2:
        raise InputError("outputs", "at least 2 samples to split", f"{n}")
    if isinstance(n_cal, bool) or not isinstance(n_cal, int | float | np.integer | np.floating):
        raise InputError("n_cal", "a count (int) or a fraction (float)", repr(n_cal))
    if isinstance(n_cal, int | np.integer):
        if not 1 <= n_cal <= n - 1:
            raise InputError("n_cal", f"a count in [1, {n - 1}]", str(n_cal))
        return int(n_cal)
    if not (math.isfinite(n_cal) and 0.0 < n_cal < 1.0):
        raise InputError("n_cal", "a fraction strictly between 0 and 1", repr(n_cal))
    count = round(float(n_cal) * n)
    if not 1 <= count <= n - 1:
        expected = f"a fraction of the {n:,} samples leaving samples for both parts"
        raise InputError("n_cal", expected, f"{n_cal!r} ({count:,} of the {n:,} samples)")
    return count


def split_indices(
    labels: object,
    n_cal: int | float,
    seed: int,
    *,
    test_size: int | None = None,
    every_class: bool = False,
) -> tuple[IntArray, IntArray]:
    """Sorted calibration and test indices of a seeded stratified split of ``labels``: the
    one calibration / test split of the package, calibration part first.

    ``n_cal`` is a count (int) or a fraction of the samples (float). Each class is divided
    in proportion, rounding by largest remainder (random tie-break) so that the
    calibration part holds exactly ``n_cal`` samples.

    Parameters
    ----------
    labels, n_cal, seed
        Integer labels ``(N,)``; a count in ``[1, N - 1]`` or a fraction in (0, 1); the seed.
    test_size : int, optional
        Cut the test part to this many samples (stratified, the same seed) when it holds more.
    every_class : bool
        Refuse (naming ``labels``, or ``test_size``) a split that leaves a class out of
        either part.

    Returns
    -------
    cal, test : ndarray of int64
        Sorted indices of the two parts.

    Examples
    --------
    >>> cal, test = split_indices([0, 0, 0, 0, 1, 1, 1, 1], 4, seed=1)
    >>> len(cal), len(test), sorted(np.array([0, 0, 0, 0, 1, 1, 1, 1])[cal].tolist())
    (4, 4, [0, 0, 1, 1])
    >>> cal, test = split_indices(np.repeat([0, 1], 10), 4, seed=0, test_size=6)
    >>> len(cal), len(test), sorted(set(cal) & set(test))
    (4, 6, [])
    """
    y = check_labels(labels)
    count = _cal_count(n_cal, y.shape[0])
    test, cal = stratified_split(y, count, seed, every_class_in_both=every_class)
    if test_size is not None and test_size < len(test):
        shown = len(np.unique(y[test]))
        if every_class and test_size < shown:
            expected = (
                f"at least {shown} test samples: one of each class (the test part is stratified)"
            )
            raise InputError("test_size", expected, repr(test_size))
        keep, _ = stratified_split(y[test], len(test) - test_size, seed, every_class_in_both=False)
        test = test[keep]
    return cal, test


def take(out: ClassifierOutputs, idx: npt.ArrayLike) -> ClassifierOutputs:
    """The rows ``idx`` of ``out`` (labels and scores, of the same kind).

    >>> from calibkit.core.outputs import as_outputs
    >>> take(as_outputs([0, 1, 1], probs=[[0.9, 0.1], [0.2, 0.8], [0.4, 0.6]]), [2]).labels
    array([1])
    """
    rows = np.asarray(idx, dtype=np.intp)
    return ClassifierOutputs(labels=out.labels[rows], scores=out.scores[rows], kind=out.kind)


def split_outputs(
    out: ClassifierOutputs, n_cal: int | float, seed: int
) -> tuple[ClassifierOutputs, ClassifierOutputs]:
    """Seeded stratified ``(calibration, test)`` split (see :func:`split_indices`).

    Parameters
    ----------
    out, n_cal, seed
        Validated outputs; size and seed as in :func:`split_indices`.

    Returns
    -------
    cal, test : ClassifierOutputs
        The two parts.

    Examples
    --------
    >>> from calibkit.core.outputs import as_outputs
    >>> out = as_outputs([0, 0, 1, 1], logits=np.zeros((4, 2)))
    >>> cal, test = split_outputs(out, 0.5, seed=0)
    >>> sorted(cal.labels.tolist()), sorted(test.labels.tolist())
    ([0, 1], [0, 1])
    """
    if not isinstance(out, ClassifierOutputs):
        raise InputError("out", "ClassifierOutputs (from as_outputs)", type(out).__name__)
    cal_idx, test_idx = split_indices(out.labels, n_cal, seed)
    return take(out, cal_idx), take(out, test_idx)
