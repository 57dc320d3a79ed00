"""Bin-free calibration errors: KS error (Gupta et al. 2021) and MMCE (Kumar et al. 2018).

Both are computed exactly in O(N log N) from the sorted confidences. Like the binned
metrics (:mod:`calibkit.metrics.binned`), they take ``labels``, exactly one of ``probs`` or
``logits``, optional ``sample_weight`` and ``mode`` (top-label or positive-class, see
:mod:`calibkit.core.binning`).

>>> round(ks_error([0, 1], probs=[[0.6, 0.4], [0.2, 0.8]]), 6)
0.3
"""

from __future__ import annotations

from typing import TypedDict, Unpack

import numpy as np

from calibkit.core.docs import fill_doc
from calibkit.core.errors import InputError
from calibkit.core.outputs import as_outputs
from calibkit.metrics.samples import F64, Mode, calibration_target, check_weight

MMCE_WIDTH = 0.4
_MAX_EXPONENT = 500.0
#: The sorted samples that :func:`ks_from_sorted` and :func:`mmce_from_sorted` take.
_SORTED = """conf : ndarray of shape (N,)
    Confidences, sorted ascending.
outcome : ndarray of shape (N,)
    Outcomes (1 = correct / positive) in the same order.
weight : ndarray of shape (N,), optional
    Sample weights in the same order."""


class _Options(TypedDict, total=False):
    """The keyword options both metrics take (defaults: :func:`sorted_target`)."""

    logits: object
    mode: Mode
    sample_weight: object


def sorted_target(
    labels: object,
    probs: object = None,
    *,
    logits: object = None,
    mode: Mode = "top_label",
    sample_weight: object = None,
) -> tuple[F64, F64, F64 | None]:
    """Confidence, outcome and weight of every sample, sorted by confidence (stable).

    Parameters
    ----------
    labels, probs, logits, sample_weight
        The outputs (see :mod:`calibkit.metrics.binned`).
    mode : {"top_label", "positive_class"}
        What is measured for a binary problem.

    Returns
    -------
    conf, outcome : ndarray of shape (N,)
        Sorted confidences and their outcomes (see
        :func:`~calibkit.metrics.samples.calibration_target`).
    weight : ndarray of shape (N,) or None
        The sample weights in the same order.

    Examples
    --------
    >>> conf, outcome, weight = sorted_target([1, 0], probs=[[0.2, 0.8], [0.4, 0.6]])
    >>> conf.tolist(), outcome.tolist(), weight
    ([0.6, 0.8], [0.0, 1.0], None)
    """
    out = as_outputs(labels, probs, logits=logits)
    conf, outcome = calibration_target(out, mode)
    w = check_weight(sample_weight, out.n_samples)
    order = np.argsort(conf, kind="stable")
    return conf[order], outcome[order], None if w is None else w[order]


@fill_doc(sorted=_SORTED)
def ks_from_sorted(conf: F64, outcome: F64, weight: F64 | None = None) -> float:
    """KS error of confidences sorted ascending (weights optional).

    ``max_i |sum_{j <= i} w_j (outcome_j - conf_j)| / sum_j w_j``, read only at the ends
    of runs of tied confidences so that the order within a tie cannot matter.

    Parameters
    ----------
    {sorted}

    Returns
    -------
    float
        The KS error.

    Examples
    --------
    >>> round(ks_from_sorted(np.array([0.6, 0.8]), np.array([0.0, 1.0])), 4)  # |-0.6| / 2
    0.3
    """
    diff = outcome - conf if weight is None else weight * (outcome - conf)
    total = conf.shape[0] if weight is None else float(weight.sum())
    cum = np.cumsum(diff)
    run_end = np.append(conf[1:] != conf[:-1], True)
    return float(np.max(np.abs(cum[run_end])) / total)


def ks_error(labels: object, probs: object = None, **options: Unpack[_Options]) -> float:
    """Kolmogorov-Smirnov calibration error (Gupta et al. 2021), top-label by default.

    Parameters
    ----------
    labels, probs, logits, mode, sample_weight
        As in :func:`sorted_target`.

    Returns
    -------
    float
        The largest gap between cumulative outcome and cumulative confidence, over N.

    Examples
    --------
    >>> round(ks_error([1, 0], probs=[[0.2, 0.8], [0.4, 0.6]]), 4)
    0.3
    """
    return ks_from_sorted(*sorted_target(labels, probs, **options))


@fill_doc(sorted=_SORTED)
def mmce_from_sorted(
    conf: F64, outcome: F64, weight: F64 | None = None, width: float = MMCE_WIDTH
) -> float:
    """MMCE of confidences sorted ascending, with the Laplacian kernel ``exp(-|r - r'|/width)``.

    ``sqrt(sum_ij a_i a_j k(r_i, r_j)) / sum_i w_i`` with ``a_i = w_i (outcome_i - r_i)``.
    The double sum is ``sum_i a_i^2 + 2 sum_i a_i P_i`` with ``P_i = sum_{j<i} a_j k(r_i, r_j)``,
    and because the kernel factorises, ``P`` is a cumulative sum. Confidences are taken in
    blocks spanning at most ``_MAX_EXPONENT * width`` so that no exponential overflows,
    whatever the width (one block for widths above 0.002).

    Parameters
    ----------
    {sorted}
    width : float
        Kernel width.

    Returns
    -------
    float
        The MMCE.

    Examples
    --------
    >>> conf = np.array([0.2, 0.5, 0.9])
    >>> outcome = np.array([0.0, 1.0, 1.0])
    >>> brute = np.exp(-np.abs(conf[:, None] - conf[None, :]) / MMCE_WIDTH)
    >>> a = outcome - conf
    >>> bool(np.isclose(mmce_from_sorted(conf, outcome), np.sqrt(a @ brute @ a) / 3))
    True
    """
    a = outcome - conf if weight is None else weight * (outcome - conf)
    total = conf.shape[0] if weight is None else float(weight.sum())
    return _mmce_from_signed(conf, a, total, width)


def _mmce_from_signed(conf: F64, a: F64, total: float, width: float) -> float:
    x = (conf - conf[0]) / width  # kernel = exp(-|x_i - x_j|)
    block = np.floor(x / _MAX_EXPONENT).astype(np.int64)
    starts = np.flatnonzero(np.diff(block, prepend=-1))
    ends = np.append(starts[1:], conf.shape[0])
    cross = 0.0  # sum_i a_i P_i
    carry = 0.0  # sum_{j before the block} a_j exp(-(x_ref - x_j)), x_ref the block's first x
    for lo, hi in zip(starts.tolist(), ends.tolist(), strict=True):
        xb = x[lo:hi] - x[lo]
        ab = a[lo:hi]
        prefix = np.concatenate([[0.0], np.cumsum(ab * np.exp(xb))[:-1]])  # strict, at x_ref
        cross += float(np.dot(ab * np.exp(-xb), prefix + carry))
        if hi < conf.shape[0]:
            step = x[hi] - x[lo]
            carry = carry * np.exp(-step) + float(np.dot(ab, np.exp(-(x[hi] - x[lo:hi]))))
    s = float(np.dot(a, a)) + 2.0 * cross
    return float(np.sqrt(max(s, 0.0)) / total)


def mmce_from_sorted_batch(conf: F64, signed: F64, total: F64, width: float = MMCE_WIDTH) -> F64:
    """MMCE of each row of ``signed = w * (outcome - conf)`` (columns sorted by ``conf``).

    The formula of :func:`mmce_from_sorted`, vectorised over the rows when the confidences
    span a single block (every width above 0.002); row by row otherwise.

    Parameters
    ----------
    conf, width
        As in :func:`mmce_from_sorted`.
    signed : ndarray of shape (B, N)
        ``w * (outcome - conf)`` per row (one row per weighting).
    total : ndarray of shape (B,)
        Total weight of each row.

    Returns
    -------
    ndarray of shape (B,)
        The MMCE of each row.

    Examples
    --------
    >>> conf, a = np.array([0.6, 0.8]), np.array([-0.6, 0.2])
    >>> mm = mmce_from_sorted_batch(conf, np.stack([a, 2 * a]), np.array([2.0, 4.0]))
    >>> np.round(mm, 4).tolist()  # both rows: the two samples once
    [0.2522, 0.2522]
    """
    x = (conf - conf[0]) / width
    if x[-1] >= _MAX_EXPONENT:
        rows = zip(signed, total.tolist(), strict=True)
        return np.array([_mmce_from_signed(conf, a, t, width) for a, t in rows])
    prefix = np.zeros_like(signed)
    np.cumsum(signed[:, :-1] * np.exp(x[:-1]), axis=1, out=prefix[:, 1:])
    cross = (signed * np.exp(-x) * prefix).sum(axis=1)
    s = (signed * signed).sum(axis=1) + 2.0 * cross
    return np.asarray(np.sqrt(np.maximum(s, 0.0)) / total, dtype=np.float64)


def mmce(
    labels: object, probs: object = None, *, width: float = MMCE_WIDTH, **options: Unpack[_Options]
) -> float:
    """Maximum mean calibration error (Kumar et al. 2018), Laplacian kernel of ``width`` 0.4.

    Parameters
    ----------
    labels, probs, logits, mode, sample_weight
        As in :func:`sorted_target`.
    width : float
        Width of the kernel ``exp(-|r - r'| / width)``, > 0.

    Returns
    -------
    float
        ``sqrt(sum_ij a_i a_j k(r_i, r_j)) / N`` with ``a_i = outcome_i - r_i``.

    Examples
    --------
    >>> value = mmce([1, 0], probs=[[0.2, 0.8], [0.4, 0.6]])  # a = (0.2, -0.6)
    >>> round(value, 4), round(float(np.sqrt(0.4 - 0.24 * np.exp(-0.5))) / 2, 4)
    (0.2522, 0.2522)
    """
    if not (isinstance(width, int | float) and width > 0):
        raise InputError("width", "a positive number", repr(width))
    return mmce_from_sorted(*sorted_target(labels, probs, **options), float(width))
