"""Binning of confidences: the one module behind every binned metric and figure.

ECE, adaptive ECE, MCE, RMSCE, SCE, histogram binning and the reliability diagram all call
:func:`bin_stats`, so a table and its figure can never disagree.

Bin rule (``convention="calibkit"``, the default)
    Equal-width bins are ``[k/n, (k+1)/n)`` for ``k < n - 1`` and the last bin is closed,
    ``[(n-1)/n, 1]``, the edges being the correctly rounded quotients ``k / n``. So a
    confidence exactly on a nominal edge such as 0.3 goes to the bin that starts there, for
    every ``n`` (``np.linspace`` edges such as 0.30000000000000004 would misplace it, and so
    would a bare ``floor(conf * n)``: ``0.29 * 100`` is ``28.999999999999996``). Values
    outside [0, 1] are clipped into the first or last bin.

Equal-mass bins (``scheme="equal_mass"``)
    Sort the confidences and cut at the (weighted) ranks ``k * N / n``, rounded to the
    nearer sample boundary. Ties are never split: a cut that falls inside a run of tied
    confidences moves to the end of that run that is nearer (the lower end on a tie), so
    with many tied values some bins stay empty and fewer than ``n`` hold samples. Samples
    of zero weight never move a cut. Bin ``k`` holds confidences in ``[e_k, e_{k+1})``; the
    last non-empty bin is closed at 1.

Parity conventions (equal-width only), reproducing other libraries' rules exactly:
    ``"torchmetrics"``: ``torch.linspace`` edges and ``bucketize(right=True) - 1``, compared
    in float32 (``torchmetrics_dtype="float32"``, as its multiclass metric, which casts
    confidences to float32) or float64 (its binary metric on float64 input); a confidence of
    exactly 1.0 lands in an extra (n+1)-th bin. ``torch.linspace`` edges differ from
    ``np.linspace`` ones in the last bit for most ``n`` (15 included), which moves
    confidences lying on an edge. ``"netcal"``: float64 ``np.linspace`` edges, ``[a, b)``
    with the last bin closed (``np.histogramdd``). ``"sklearn"``: ``(a, b]`` with the first
    bin ``[0, b]`` (``calibration_curve``).

Binary problems: the metrics decide what is binned. In ``mode="top_label"`` (the default)
the confidence is the maximum probability and the outcome is "prediction correct"; in
``mode="positive_class"`` it is ``P(y = 1)`` and the outcome is ``y == 1``.

>>> stats = bin_stats(np.array([0.0, 0.3, 0.95, 1.0]), np.array([0.0, 1.0, 1.0, 1.0]), n_bins=10)
>>> stats.counts.astype(int).tolist()
[1, 0, 0, 1, 0, 0, 0, 0, 0, 2]
>>> stats.accuracy[9], stats.mean_confidence[9]
(np.float64(1.0), np.float64(0.975))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypedDict, Unpack

import numpy as np
import numpy.typing as npt

from calibkit.core.errors import InputError
from calibkit.core.options import MODES as MODES
from calibkit.core.options import Mode as Mode
from calibkit.core.validation import N_BINS as N_BINS  # bins: an integer in [1, 100000]

Scheme = Literal["equal_width", "equal_mass"]
Convention = Literal["calibkit", "torchmetrics", "netcal", "sklearn"]
TorchDtype = Literal["float32", "float64"]
SCHEMES: tuple[str, ...] = ("equal_width", "equal_mass")
CONVENTIONS: tuple[str, ...] = ("calibkit", "torchmetrics", "netcal", "sklearn")

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]


def check_n_bins(n_bins: object) -> int:
    """Validate a bin count (:data:`~calibkit.core.validation.N_BINS`)."""
    return N_BINS.check("n_bins", n_bins)


def torchmetrics_edges(n_bins: int, torchmetrics_dtype: TorchDtype = "float32") -> F64:
    """torchmetrics' bin boundaries (``torch.linspace``), exactly, as float64."""
    if torchmetrics_dtype not in ("float32", "float64"):
        raise InputError("torchmetrics_dtype", "'float32' or 'float64'", repr(torchmetrics_dtype))
    import torch  # only for torchmetrics' own float edges

    edges = torch.linspace(0.0, 1.0, n_bins + 1, dtype=getattr(torch, torchmetrics_dtype))
    return edges.numpy().astype(np.float64)


def equal_width_index(
    conf: F64,
    n_bins: int,
    convention: Convention = "calibkit",
    *,
    torchmetrics_dtype: TorchDtype = "float32",
) -> I64:
    """Bin index of each confidence under an equal-width ``convention`` (see module doc).

    Returns indices in ``[0, n_bins)``, or ``[0, n_bins]`` for ``"torchmetrics"``.

    >>> conf = np.array([0.0, 0.3, 0.6, 1.0])
    >>> equal_width_index(conf, 10).tolist()
    [0, 3, 6, 9]
    >>> equal_width_index(conf, 10, "netcal").tolist()
    [0, 2, 5, 9]
    >>> equal_width_index(conf, 10, "torchmetrics").tolist()
    [0, 3, 6, 10]
    >>> equal_width_index(conf, 10, "torchmetrics", torchmetrics_dtype="float64").tolist()
    [0, 2, 6, 10]
    """
    if convention == "calibkit":
        # floor(conf * n) is off by one where the product rounds across an integer (0.29 * 100
        # is 28.999999999999996): one correction step against the edges k / n makes the rule
        # exactly [k / n, (k + 1) / n) on the float edges.
        conf = np.asarray(conf, dtype=np.float64)
        edges = np.arange(n_bins + 1, dtype=np.float64) / n_bins
        idx = np.clip(np.floor(conf * n_bins).astype(np.int64), 0, n_bins - 1)
        idx += (conf >= edges[idx + 1]) & (idx < n_bins - 1)
        idx -= (conf < edges[idx]) & (idx > 0)
        return idx
    if convention == "torchmetrics":
        dtype = np.float32 if torchmetrics_dtype == "float32" else np.float64
        edges = torchmetrics_edges(n_bins, torchmetrics_dtype).astype(dtype)
        idx = np.searchsorted(edges, np.asarray(conf).astype(dtype), side="right")
        return idx.astype(np.int64) - 1
    if convention == "netcal":
        edges = np.linspace(0.0, 1.0, n_bins + 1)
        idx = np.searchsorted(edges, conf, side="right").astype(np.int64) - 1
        return np.clip(idx, 0, n_bins - 1)
    if convention == "sklearn":
        edges = np.linspace(0.0, 1.0, n_bins + 1)
        return np.searchsorted(edges[1:-1], conf, side="left").astype(np.int64)
    raise InputError("convention", "one of " + ", ".join(CONVENTIONS), repr(convention))


def equal_mass_cuts(
    sorted_conf: F64, n_bins: int, sorted_weight: F64 | None = None, *, cum: F64 | None = None
) -> I64:
    """Cut positions (length ``n_bins + 1``, from 0 to N) into sorted confidences.

    Bin ``k`` is ``sorted_conf[cuts[k]:cuts[k + 1]]``. Cuts sit at the weighted ranks
    ``k * total / n_bins`` and never split a run of tied values (see module doc). ``cum``,
    the cumulative sum of ``sorted_weight`` when the caller has it, saves that pass.

    >>> equal_mass_cuts(np.array([0.1, 0.2, 0.5, 0.5, 0.5, 0.9]), 3).tolist()
    [0, 2, 5, 6]
    """
    n = sorted_conf.shape[0]
    if n == 0:
        return np.zeros(n_bins + 1, dtype=np.int64)
    if cum is None and sorted_weight is None:
        cum = np.arange(1, n + 1, dtype=np.float64)
    elif cum is None:
        cum = np.cumsum(np.asarray(sorted_weight), dtype=np.float64)
    total = cum[-1]
    targets = total * np.arange(1, n_bins, dtype=np.float64) / n_bins
    # first position whose cumulative weight exceeds the target (a cut before it)
    raw = np.minimum(np.searchsorted(cum, targets, side="right"), n - 1)
    values = sorted_conf[raw]
    run_start = np.searchsorted(sorted_conf, values, side="left")
    run_end = np.searchsorted(sorted_conf, values, side="right")
    # weighted distance from the target to either end of the tie run
    dist_start = np.abs(np.where(run_start > 0, cum[run_start - 1], 0.0) - targets)
    dist_end = np.abs(np.where(run_end > 0, cum[run_end - 1], 0.0) - targets)
    cuts = np.where(dist_end < dist_start, run_end, run_start)
    cuts = np.maximum.accumulate(cuts)
    return np.concatenate([[0], cuts, [n]]).astype(np.int64)


def tie_runs(sorted_conf: F64) -> tuple[I64, I64]:
    """The run of equal values around each position of sorted confidences: its first
    position and the position after its last (what ``searchsorted`` left and right give for
    the value at that position).

    >>> [r.tolist() for r in tie_runs(np.array([0.1, 0.5, 0.5, 0.9]))]
    [[0, 1, 1, 3], [1, 3, 3, 4]]
    """
    n = sorted_conf.shape[0]
    new = np.ones(n, dtype=bool)
    new[1:] = sorted_conf[1:] != sorted_conf[:-1]
    starts = np.flatnonzero(new)
    run = np.cumsum(new) - 1
    return starts[run].astype(np.int64), np.append(starts[1:], n)[run].astype(np.int64)


def equal_mass_cuts_rows(
    sorted_conf: F64, n_bins: int, cum: np.ndarray, runs: tuple[I64, I64] | None = None
) -> I64:
    """:func:`equal_mass_cuts` of every row of ``cum`` at once, shape ``(B, n_bins + 1)``.

    ``cum`` (shape ``(B, N)``) holds the cumulative weights of each row (integers, e.g.
    bootstrap counts, or floats); ``runs``: :func:`tie_runs` of ``sorted_conf`` when the
    caller has them. The same cuts as row by row: the same targets and distances in float64,
    the searches on integer rows at ``floor(target)`` (the first sum above a target is the
    first above its floor), the tie runs looked up instead of searched.

    >>> sc = np.array([0.1, 0.2, 0.5, 0.5, 0.5, 0.9])
    >>> equal_mass_cuts_rows(sc, 3, np.cumsum([[1, 1, 1, 1, 1, 1], [0, 3, 0, 0, 0, 3]], axis=1))
    array([[0, 2, 5, 6],
           [0, 2, 5, 6]])
    """
    b, n = cum.shape
    if n == 0:
        return np.zeros((b, n_bins + 1), dtype=np.int64)
    first, stop = tie_runs(sorted_conf) if runs is None else runs
    total = cum[:, -1].astype(np.float64)
    targets = total[:, None] * np.arange(1, n_bins, dtype=np.float64) / n_bins
    keys = np.floor(targets).astype(cum.dtype) if np.issubdtype(cum.dtype, np.integer) else targets
    raw = np.empty(targets.shape, dtype=np.int64)
    for i in range(b):  # one binary search per row (B calls, not B N work)
        raw[i] = np.searchsorted(cum[i], keys[i], side="right")
    np.minimum(raw, n - 1, out=raw)
    run_start, run_end = first[raw], stop[raw]

    def before(pos: I64) -> F64:  # the cumulative weight before position pos (0 at 0)
        at = np.take_along_axis(cum, np.maximum(pos - 1, 0), axis=1).astype(np.float64)
        return np.where(pos > 0, at, 0.0)

    dist_start = np.abs(before(run_start) - targets)
    dist_end = np.abs(before(run_end) - targets)
    cuts = np.maximum.accumulate(np.where(dist_end < dist_start, run_end, run_start), axis=1)
    out = np.empty((b, n_bins + 1), dtype=np.int64)
    out[:, 0], out[:, -1], out[:, 1:-1] = 0, n, cuts
    return out


def equal_mass_edges(sorted_conf: F64, cuts: I64) -> F64:
    """Edges of the equal-mass bins given by ``cuts`` (length ``len(cuts)``).

    Inner edge ``k`` is the smallest confidence of the first non-empty bin from ``k`` on (so
    an empty bin has equal lower and upper edges), or 1 if there is none; the outer edges
    are 0 and 1.

    >>> sc = np.array([0.1, 0.2, 0.5, 0.5, 0.5, 0.9])
    >>> equal_mass_edges(sc, equal_mass_cuts(sc, 3)).tolist()
    [0.0, 0.5, 0.9, 1.0]
    """
    n = sorted_conf.shape[0]
    inner_cuts = np.asarray(cuts[1:-1])
    inner = np.ones(inner_cuts.shape[0], dtype=np.float64)
    if n:
        inner = np.where(inner_cuts < n, sorted_conf[np.minimum(inner_cuts, n - 1)], 1.0)
    return np.concatenate([[0.0], inner, [1.0]]).astype(np.float64)


def equal_mass_index(conf: F64, n_bins: int, weight: F64 | None = None) -> tuple[I64, F64]:
    """Equal-mass bin index of each confidence, and the bin edges (length ``n_bins + 1``).

    See :func:`equal_mass_edges` for the edges.
    """
    order = np.argsort(conf, kind="stable")
    sc = conf[order]
    cuts = equal_mass_cuts(sc, n_bins, None if weight is None else weight[order])
    sorted_idx = np.repeat(np.arange(n_bins, dtype=np.int64), np.diff(cuts))
    idx = np.empty_like(sorted_idx)
    idx[order] = sorted_idx
    return idx, equal_mass_edges(sc, cuts)


@dataclass(frozen=True)
class BinStats:
    """Per-bin sums of one binning (all float64; a weight is a sample count or its weight).

    ``counts`` is the total weight in each bin, ``confidence_sum`` and ``accuracy_sum`` the
    weighted sums of confidence and outcome. Empty bins have NaN means.

    Examples
    --------
    >>> stats = bin_stats(np.array([0.1, 0.2, 0.7, 0.9]), np.array([0.0, 1.0, 1.0, 1.0]), 2)
    >>> stats.counts.tolist(), stats.accuracy.tolist(), stats.mean_confidence.round(2).tolist()
    ([2.0, 2.0], [0.5, 1.0], [0.15, 0.8])
    """

    edges: F64
    counts: F64
    confidence_sum: F64
    accuracy_sum: F64

    @property
    def n_bins(self) -> int:
        return int(self.counts.shape[0])

    @property
    def total(self) -> float:
        return float(self.counts.sum())

    @property
    def nonempty(self) -> npt.NDArray[np.bool_]:
        return self.counts > 0

    @property
    def mean_confidence(self) -> F64:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.nonempty, self.confidence_sum / self.counts, np.nan)

    @property
    def accuracy(self) -> F64:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.nonempty, self.accuracy_sum / self.counts, np.nan)

    @property
    def weights(self) -> F64:
        """Fraction of the total weight in each bin."""
        return self.counts / self.total

    @property
    def gaps(self) -> F64:
        """``|accuracy - mean confidence|`` per bin (0 for empty bins)."""
        gap = np.abs(self.accuracy_sum - self.confidence_sum)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.nonempty, gap / self.counts, 0.0)


def bin_index(
    conf: F64,
    n_bins: int = 15,
    *,
    scheme: Scheme = "equal_width",
    convention: Convention = "calibkit",
    weight: F64 | None = None,
    torchmetrics_dtype: TorchDtype = "float32",
) -> tuple[I64, F64, int]:
    """Bin index of every confidence, the edges, and the number of bins used.

    Under ``"torchmetrics"`` the extra bin holding exactly 1.0 has edges ``[1, 1]``.
    """
    n_bins = check_n_bins(n_bins)
    if scheme == "equal_width":
        idx = equal_width_index(conf, n_bins, convention, torchmetrics_dtype=torchmetrics_dtype)
        if convention == "torchmetrics":
            edges = np.append(torchmetrics_edges(n_bins, torchmetrics_dtype), 1.0)
            return idx, edges, n_bins + 1
        if convention == "calibkit":
            edges = np.arange(n_bins + 1, dtype=np.float64) / n_bins
        else:
            edges = np.linspace(0.0, 1.0, n_bins + 1)
        return idx, edges, n_bins
    if scheme == "equal_mass":
        if convention != "calibkit":
            raise InputError("convention", "'calibkit' with scheme='equal_mass'", repr(convention))
        idx, edges = equal_mass_index(conf, n_bins, weight)
        return idx, edges, n_bins
    raise InputError("scheme", "one of " + ", ".join(SCHEMES), repr(scheme))


def index_from_edges(conf: F64, edges: F64, scheme: Scheme = "equal_width") -> I64:
    """Bin of each confidence for bins fitted earlier (``edges`` from :func:`bin_index`).

    The same rule as at fit time: ``floor`` with the edge correction for equal-width bins,
    ``[e_k, e_{k+1})`` (last closed) for equal-mass ones, so new data lands where fitted
    data with the same value did.
    """
    n_bins = edges.shape[0] - 1
    if scheme == "equal_width":
        return equal_width_index(conf, n_bins)
    return np.searchsorted(edges[1:-1], conf, side="right").astype(np.int64)


def stats_from_index(
    idx: I64, edges: F64, n_bins: int, conf: F64, outcome: F64, weight: F64 | None = None
) -> BinStats:
    """Weighted per-bin sums for precomputed bin indices (float64 ``bincount``)."""
    w = np.ones(idx.shape[0]) if weight is None else weight
    counts: F64 = np.bincount(idx, weights=w, minlength=n_bins).astype(np.float64)
    cs: F64 = np.bincount(idx, weights=conf * w, minlength=n_bins).astype(np.float64)
    acc: F64 = np.bincount(idx, weights=outcome * w, minlength=n_bins).astype(np.float64)
    return BinStats(edges=edges, counts=counts, confidence_sum=cs, accuracy_sum=acc)


class BinningOptions(TypedDict, total=False):
    """The keyword options of :func:`bin_index`, passed on by :func:`bin_stats`."""

    scheme: Scheme
    convention: Convention
    weight: F64 | None
    torchmetrics_dtype: TorchDtype


def bin_stats(
    conf: F64, outcome: F64, n_bins: int = 15, **options: Unpack[BinningOptions]
) -> BinStats:
    """Bin ``conf`` and sum confidence and ``outcome`` (1 = correct / positive) per bin.

    ``options`` are those of :func:`bin_index` (scheme, convention, weight, torchmetrics'
    float precision), with the same defaults.

    Examples
    --------
    >>> stats = bin_stats(np.array([0.1, 0.2, 0.7, 0.9]), np.array([0.0, 1.0, 1.0, 1.0]), 2)
    >>> stats.edges.tolist(), stats.gaps.round(2).tolist()  # |0.5 - 0.15|, |1 - 0.8|
    ([0.0, 0.5, 1.0], [0.35, 0.2])
    """
    conf = np.asarray(conf, dtype=np.float64)
    outcome = np.asarray(outcome, dtype=np.float64)
    idx, edges, used = bin_index(conf, n_bins, **options)
    return stats_from_index(idx, edges, used, conf, outcome, options.get("weight"))
