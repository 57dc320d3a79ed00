"""Calibration errors from per-bin sums: the formulas behind every binned metric.

:mod:`calibkit.metrics.binned` (the functions on classifier outputs), the metric suite
(bootstrap replicates as rows of weights) and the accumulator all end here, so they share
one implementation of each formula. With per-bin outcome rate ``acc_b``, mean confidence
``conf_b`` and weight ``w_b`` (the fraction of samples in bin ``b``):

- ``norm="l1"`` (ECE): ``sum_b w_b |acc_b - conf_b|``
- ``norm="l2"`` (RMSCE): ``sqrt(sum_b w_b (acc_b - conf_b)^2)``
- ``norm="max"`` (MCE): ``max_b |acc_b - conf_b|`` over non-empty bins

SCE (static calibration error) bins every class's probabilities separately; its sums are
indexed by a flat ``(class, bin)`` index, ``k * n_bins + bin``. Bins follow the bin rule of
:mod:`calibkit.core.binning` (``[a, b)``, the last bin closed at 1.0).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import numpy as np

from calibkit.core.binning import BinStats, equal_width_index
from calibkit.core.docs import fill_doc
from calibkit.core.errors import InputError
from calibkit.metrics.samples import F64

if TYPE_CHECKING:
    from scipy import sparse

Norm = Literal["l1", "l2", "max"]
NORMS: tuple[str, ...] = ("l1", "l2", "max")


def errors_from_sums(counts: F64, conf_sum: F64, acc_sum: F64) -> dict[str, F64]:
    """ECE (l1), RMSCE (l2), MCE (max) and debiased RMSCE from per-bin sums, row by row.

    The debiased l2 error (the debiased RMSCE; Kumar et al. 2019, "Verified uncertainty
    calibration", the squared gap less the variance of the bin's accuracy) is
    ``sqrt(max(0, sum_b w_b [(acc_b - conf_b)^2 - acc_b (1 - acc_b) / (n_b - 1)]))`` with
    bins of fewer than 2 samples contributing 0.

    Parameters
    ----------
    counts, conf_sum, acc_sum : ndarray of shape (..., n_bins)
        Per-bin weight, confidence sum and outcome sum; one row per weighting (e.g. one
        bootstrap replicate).

    Returns
    -------
    dict of str to ndarray of shape (...)
        The errors under the keys ``"l1"``, ``"l2"``, ``"max"`` and ``"debiased"``.

    Examples
    --------
    >>> e = errors_from_sums(np.array([1.0, 1.0]), np.array([0.6, 0.8]), np.array([0.0, 1.0]))
    >>> round(float(e["l1"]), 4), round(float(e["max"]), 4)
    (0.4, 0.6)
    """
    total = counts.sum(axis=-1, keepdims=True)
    nonempty = counts > 0
    safe = np.where(nonempty, counts, 1.0)
    diff = np.abs(acc_sum - conf_sum)
    gaps = np.where(nonempty, diff / safe, 0.0)
    weights = counts / total
    use = counts >= 2
    n = np.where(use, counts, 2.0)
    acc, conf = acc_sum / n, conf_sum / n
    terms = np.where(use, (acc - conf) ** 2 - acc * (1.0 - acc) / (n - 1.0), 0.0)
    return {
        "l1": diff.sum(axis=-1) / total[..., 0],
        "l2": np.sqrt((weights * gaps**2).sum(axis=-1)),
        "max": np.where(nonempty, gaps, -np.inf).max(axis=-1),
        "debiased": np.sqrt(np.maximum(0.0, (weights * terms).sum(axis=-1))),
    }


def _check_norm(norm: object) -> Norm:
    if norm not in NORMS:
        raise InputError("norm", "one of " + ", ".join(NORMS), repr(norm))
    return norm  # type: ignore[return-value]


def error_from_stats(stats: BinStats, norm: Norm = "l1") -> float:
    """Calibration error of precomputed bin sums under ``norm``.

    Parameters
    ----------
    stats : BinStats
        Per-bin sums (from :func:`~calibkit.core.binning.bin_stats`).
    norm : {"l1", "l2", "max"}
        ECE, RMSCE or MCE.

    Returns
    -------
    float
        The calibration error.

    Examples
    --------
    >>> from calibkit.core.binning import bin_stats
    >>> stats = bin_stats(np.array([0.8, 0.6]), np.array([1.0, 0.0]), n_bins=10)
    >>> round(error_from_stats(stats, "max"), 4)
    0.6
    """
    norm = _check_norm(norm)
    return float(errors_from_sums(stats.counts, stats.confidence_sum, stats.accuracy_sum)[norm])


def debiased_from_stats(stats: BinStats) -> float:
    """Debiased l2 calibration error (Kumar et al. 2019) of precomputed bin sums.

    Parameters
    ----------
    stats : BinStats
        Per-bin sums (from :func:`~calibkit.core.binning.bin_stats`).

    Returns
    -------
    float
        The debiased error (see :func:`errors_from_sums`).

    Examples
    --------
    >>> from calibkit.core.binning import bin_stats
    >>> stats = bin_stats(np.full(3, 0.5), np.ones(3), n_bins=1)
    >>> round(debiased_from_stats(stats), 4)  # acc 1, conf 0.5: sqrt(0.25 - 0)
    0.5
    """
    sums = errors_from_sums(stats.counts, stats.confidence_sum, stats.accuracy_sum)
    return float(sums["debiased"])


def sce_index(probs: F64, n_bins: int) -> np.ndarray:
    """Flat (class, bin) index of every entry of ``probs``: ``k * n_bins + bin(p_ik)``.

    Parameters
    ----------
    probs : ndarray of shape (N, K)
        Probabilities.
    n_bins : int
        Number of equal-width bins per class.

    Returns
    -------
    ndarray of shape (N * K,)
        Indices in ``[0, K * n_bins)``, row-major over ``probs``.

    Examples
    --------
    >>> sce_index(np.array([[0.2, 0.8], [0.4, 0.6]]), 10).tolist()
    [2, 18, 4, 16]
    """
    idx = equal_width_index(probs.reshape(-1), n_bins).reshape(probs.shape)
    return (idx + np.arange(probs.shape[1], dtype=np.int64) * n_bins).reshape(-1)


def sce_hit_index(probs: F64, labels: np.ndarray, n_bins: int) -> np.ndarray:
    """Flat (class, bin) index of each sample's true-class probability (see :func:`sce_index`).

    Parameters
    ----------
    probs : ndarray of shape (N, K)
        Probabilities.
    labels : ndarray of shape (N,)
        Integer labels.
    n_bins : int
        Number of equal-width bins per class.

    Returns
    -------
    ndarray of shape (N,)
        ``y_i * n_bins + bin(p_{i, y_i})``.

    Examples
    --------
    >>> sce_hit_index(np.array([[0.2, 0.8], [0.4, 0.6]]), np.array([1, 0]), 10).tolist()
    [18, 4]
    """
    p_true = probs[np.arange(probs.shape[0]), labels]
    return labels * n_bins + equal_width_index(p_true, n_bins)


def sce_from_index(
    flat_idx: np.ndarray, probs: F64, labels: np.ndarray, n_bins: int, weight: F64 | None
) -> float:
    """SCE from precomputed flat indices (see :func:`sce`).

    Parameters
    ----------
    flat_idx : ndarray of shape (N * K,)
        :func:`sce_index` of ``probs``.
    probs, labels, n_bins
        As in :func:`sce_hit_index`.
    weight : ndarray of shape (N,) or None
        Sample weights (None: every sample once).

    Returns
    -------
    float
        The static calibration error.

    Examples
    --------
    >>> p, y = np.array([[0.2, 0.8], [0.4, 0.6]]), np.array([1, 0])
    >>> round(sce_from_index(sce_index(p, 10), p, y, 10, None), 4)
    0.4
    """
    n, k = probs.shape
    w = np.ones(n) if weight is None else weight
    conf_sum = np.bincount(flat_idx, weights=(probs * w[:, None]).reshape(-1), minlength=k * n_bins)
    acc_sum = np.bincount(sce_hit_index(probs, labels, n_bins), weights=w, minlength=k * n_bins)
    return float(np.abs(acc_sum - conf_sum).sum() / (k * w.sum()))


#: The Parameters section of the SCE maps, and their Returns header.
_MAPS = """Parameters
----------
probs, labels, n_bins
    As in :func:`sce_hit_index`.

Returns
-------"""


@fill_doc(maps=_MAPS)
def sce_maps(probs: F64, labels: np.ndarray, n_bins: int) -> tuple[sparse.csc_matrix, ...]:
    """SCE's confidence and hit maps: shape ``(K * n_bins, N)``, one column per sample.

    Column ``i`` of the first holds ``p_ik`` in row :func:`sce_index`; of the second, 1 in
    row :func:`sce_hit_index`. :func:`sce_batch` multiplies them by weights.

    {maps}
    tuple of two sparse matrices
        The confidence and hit maps.

    Examples
    --------
    >>> conf, hits = sce_maps(np.array([[0.2, 0.8]]), np.array([1]), 10)
    >>> conf.shape, hits.nnz
    ((20, 1), 1)
    """
    from scipy import sparse

    n, k = probs.shape
    shape = (k * n_bins, n)
    cols = np.repeat(np.arange(n), k)
    conf = sparse.csc_matrix((probs.reshape(-1), (sce_index(probs, n_bins), cols)), shape)
    hit_rows = sce_hit_index(probs, labels, n_bins)
    hits = sparse.csc_matrix((np.ones(n), (hit_rows, np.arange(n))), shape)
    return conf, hits


#: The end of the Parameters section of the batched SCEs, their Returns, and their example's data.
_BATCH = """weights : ndarray of shape (B, N)
    Sample weights, one row per weighting.

Returns
-------
ndarray of shape (B,)
    The SCE of each row.

Examples
--------
>>> p, y = np.array([[0.2, 0.8], [0.4, 0.6]]), np.array([1, 0])
>>> w = np.array([[1.0, 1.0], [1.0, 0.0]])"""


@fill_doc(batch=_BATCH)
def sce_batch(maps: tuple[sparse.csc_matrix, ...], n_classes: int, weights: F64) -> F64:
    """SCE for each row of ``weights`` (shape ``(B, N)``) from :func:`sce_maps`.

    Every (class, bin) sum adds its samples in index order, so a row gives exactly the value
    of the sums taken for one weighting. Cost ``N K`` per row (sparse);
    :func:`sce_batch_split` is faster when ``K`` is large.

    Parameters
    ----------
    maps : tuple of two sparse matrices
        From :func:`sce_maps`.
    n_classes : int
        Number of classes.
    {batch}
    >>> np.round(sce_batch(sce_maps(p, y, 10), 2, w), 4).tolist()
    [0.4, 0.2]
    """
    conf, hits = maps
    gap = np.abs(hits @ weights.T - conf @ weights.T)
    return np.asarray(gap.sum(axis=0) / (n_classes * weights.sum(axis=1)), dtype=np.float64)


@fill_doc(maps=_MAPS)
def sce_split_map(probs: F64, labels: np.ndarray, n_bins: int) -> sparse.csc_matrix:
    """The sparse part of :func:`sce_batch_split`: shape ``(K * n_bins + K, N)``.

    Row ``k * n_bins + b`` holds ``1`` for each sample whose true class is ``k`` with its
    probability in bin ``b``, minus ``p_ik`` for the probabilities of class ``k`` in bin
    ``b >= 1``; row ``K * n_bins + k`` holds those ``p_ik`` (bins ``>= 1``) again, with a plus
    sign. The first bin's confidence sums are left out: they are the class totals (one dense
    product) minus the rest, and that bin holds most of the ``N K`` probabilities.

    {maps}
    scipy.sparse.csc_matrix
        The map, one column per sample.

    Examples
    --------
    >>> sce_split_map(np.array([[0.2, 0.8]]), np.array([1]), 10).shape
    (22, 1)
    """
    from scipy import sparse

    n, k = probs.shape
    rows, cols, vals = [sce_hit_index(probs, labels, n_bins)], [np.arange(n)], [np.ones(n)]
    step = max(1, (1 << 20) // k)
    low = 1.0 / n_bins if n_bins > 1 else np.inf  # bin 0 is [0, 1 / n_bins) on the float edges
    for start in range(0, n, step):
        chunk = probs[start : start + step]
        i, c = np.nonzero(chunk >= low)  # only these few need their bin
        p = chunk[i, c]
        rows += [c * n_bins + equal_width_index(p, n_bins), k * n_bins + c]
        cols += [i + start, i + start]
        vals += [-p, p]
    data = (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols)))
    return sparse.csc_matrix(data, shape=(k * n_bins + k, n))


@fill_doc(batch=_BATCH)
def sce_batch_split(
    probs: F64, split: sparse.csc_matrix, n_bins: int, weights: F64, *, totals: F64 | None = None
) -> F64:
    """SCE for each row of ``weights``: :func:`sce_batch` in ``O(N K)`` per row with BLAS.

    The first bin's gap of class ``k`` is its hits minus (the class's weighted probability
    total minus its sums in the other bins); the totals are one dense product. Sums are taken
    in another order than :func:`sce_batch` (equal to rounding).

    Parameters
    ----------
    probs : ndarray of shape (N, K)
        Probabilities.
    split : scipy.sparse.csc_matrix
        :func:`sce_split_map` of ``probs``.
    n_bins : int
        Number of bins per class.
    totals : ndarray of shape (B, K), optional
        The class totals ``weights @ probs`` when the caller has them.
    {batch}
    >>> np.round(sce_batch_split(p, sce_split_map(p, y, 10), 10, w), 4).tolist()
    [0.4, 0.2]
    """
    k = probs.shape[1]
    size = k * n_bins
    sums = np.asarray(split @ weights.T)  # (K * n_bins + K, B)
    gap = sums[:size].reshape(k, n_bins, -1)
    gap[:, 0, :] += sums[size:] - (weights @ probs if totals is None else totals).T
    return np.asarray(np.abs(gap).sum(axis=(0, 1)) / (k * weights.sum(axis=1)), dtype=np.float64)
