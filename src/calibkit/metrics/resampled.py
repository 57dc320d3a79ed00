"""Many bootstrap replicates at once, with the samples in confidence order.

The bootstrap of :class:`~calibkit.metrics.suite.MetricSuite` (every sample count): a block of
replicates is a matrix of resample counts whose columns are the samples sorted by
confidence. In that order every equal-width bin, every equal-mass bin and every prefix that
KS and MMCE read is a contiguous range, so all of them come from a few cumulative sums of
the whole block (no per-replicate loop over bins). The values equal
:meth:`~calibkit.metrics.suite.MetricSuite.compute` on the same counts to rounding.

The counts are multinomial (``n`` draws with replacement, the classic bootstrap) or, from
:data:`POISSON_MIN_N` samples on, independent ``Poisson(1)`` weights (the Poisson bootstrap
of Hanley & MacGibbon 2006 and Chamandy et al. 2012, the large-``n`` limit of the
multinomial one: a resample's size is then ``Poisson(n)`` instead of exactly ``n``). Poisson
weights need no index draws, no ``bincount`` and no permutation: being independent of the
sample, they are drawn straight into confidence order, one byte each
(:func:`~calibkit.metrics.poisson.poisson_counts`).

>>> conf, outcome = np.array([0.8, 0.6]), np.array([1.0, 0.0])
>>> ss = SortedSamples(conf, outcome, {"nll": np.array([0.2, 0.9])}, n_bins=10)
>>> counts = resample_counts(np.array([[0, 1], [0, 0]]))[:, ss.order]
>>> res = ss.compute(counts, ("nll", "ece", "ks"))
>>> [np.round(v, 4).tolist() for v in res.values()]
[[0.55, 0.2], [0.4, 0.2], [0.3, 0.2]]
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from calibkit.core.binning import BinStats, equal_mass_cuts_rows, equal_width_index, tie_runs
from calibkit.metrics.bin_errors import errors_from_sums, sce_batch_split
from calibkit.metrics.continuous import MMCE_WIDTH, mmce_from_sorted_batch
from calibkit.metrics.info import kernels
from calibkit.metrics.kernels import BinNorm, Residual, SampleMean
from calibkit.metrics.poisson import poisson_counts
from calibkit.metrics.rank_prefix import PrefixRanks, tie_groups
from calibkit.metrics.samples import F64
from calibkit.metrics.selective import RankSums, Work

if TYPE_CHECKING:
    from scipy import sparse

#: Probabilities up to this many bytes are permuted whole for SCE (see :class:`SortedSCE`).
_SCE_SMALL = 1 << 26
#: :class:`SortedSCE` sums at least this many replicates, or this many cells, at once.
_SCE_ROWS = 16
_SCE_CELLS = 1 << 18
#: The largest kernel-scaled confidence span for which MMCE's prefix sums go in fixed point.
_FIXED_MAX_X = 8.0
#: From this many samples on, the bootstrap of :class:`~calibkit.metrics.suite.MetricSuite`
#: draws Poisson(1) weights (:func:`poisson_counts`) instead of multinomial counts.
POISSON_MIN_N = 50_000


class SortedSamples:
    """Per-sample arrays sorted by confidence, for blocks of resample counts.

    Parameters
    ----------
    conf, outcome : ndarray of shape (N,)
        Confidences and outcomes (1 = correct / positive).
    means : dict of str to ndarray of shape (N,)
        Per-sample values averaged into a metric of the same name (``"accuracy"``, ...).
    n_bins : int
        Number of bins (equal-width and equal-mass).
    poisson : bool, optional
        Whether :meth:`draw` gives Poisson(1) weights instead of multinomial counts
        (default: from :data:`POISSON_MIN_N` samples on).
    """

    def __init__(
        self,
        conf: F64,
        outcome: F64,
        means: dict[str, F64],
        n_bins: int,
        *,
        poisson: bool | None = None,
    ) -> None:
        self.poisson = conf.shape[0] >= POISSON_MIN_N if poisson is None else poisson
        self.order = np.argsort(conf, kind="stable")
        self.rank = np.empty_like(self.order)
        self.rank[self.order] = np.arange(self.order.shape[0])
        self.conf = conf[self.order]
        self.signed = (outcome - conf)[self.order]
        hits = outcome[self.order]
        # 0/1 outcomes: per-bin outcome sums are integer prefix sums (exact, and fast)
        self.hits = hits.astype(np.int64) if np.all((hits == 0) | (hits == 1)) else hits
        self.mean_names = tuple(means)
        self.means = np.stack([v[self.order] for v in means.values()] or [conf[:0]], axis=1)
        self.n_bins = n_bins
        # the equal-width bin grows with the confidence: bin k is positions [cut_k, cut_k+1)
        idx = equal_width_index(self.conf, n_bins)
        self.ew_cuts = np.searchsorted(idx, np.arange(n_bins + 1), side="left")
        self.run_end = np.append(self.conf[1:] != self.conf[:-1], True)
        # positions inside a run of equal confidences, and the run's last position
        self.tied = np.flatnonzero(~self.run_end)
        ends = np.flatnonzero(self.run_end)
        self.tied_end = ends[np.searchsorted(ends, self.tied)]
        self.ends = ends  # the last position of each run of equal confidences
        self.runs = tie_runs(self.conf)
        self.groups = tie_groups(self.runs[0])
        x = (self.conf - self.conf[0]) / MMCE_WIDTH if self.conf.size else self.conf
        # MMCE's two factors exp(+-x) d, d = outcome - conf (bounded when x is; see _mmce)
        self.mmce_up = self.signed * np.exp(np.minimum(x, _FIXED_MAX_X))
        self.mmce_down = self.signed * np.exp(-x)
        self.signed2 = self.signed * self.signed
        self._work, self._rank_work = Work(), Work()
        self.weights: F64 = np.empty((0, conf.shape[0]))  # the last block's, as float64
        self._cums: tuple[np.ndarray, np.ndarray] | None = None  # the last block's
        self._right: tuple[np.ndarray, np.ndarray] = (self.weights, self.weights)

    def _buffer(self, name: str, b: int, dtype: type) -> np.ndarray:
        """A ``(b, N)`` work array kept from block to block
        (:class:`~calibkit.metrics.selective.Work`: a third of the bootstrap's time at 100,000
        samples went to the page faults of fresh arrays)."""
        return self._work(name, (b, self.order.shape[0]), dtype)

    def draw(self, rng: np.random.Generator, b: int) -> np.ndarray:
        """The resample counts of ``b`` replicates, in confidence order.

        Poisson(1) weights (:func:`~calibkit.metrics.poisson.poisson_counts`, uint8) or
        the counts of ``rng.integers(0, N, (b, N))`` (int64; the rows of ``b`` calls with
        ``b=1``).
        """
        n = self.order.shape[0]
        if self.poisson:
            return poisson_counts(rng, b, n)
        return self.counts(rng.integers(0, n, (b, n)))

    def counts(self, draws: np.ndarray) -> np.ndarray:
        """Resample counts of ``draws`` (sample indices, shape ``(B, N)``) in confidence order.

        Equal to ``resample_counts(draws)[:, self.order]``, without permuting the counts.
        """
        b, n = draws.shape
        index = np.take(self.rank, draws, out=self._buffer("index", b, np.int64), mode="clip")
        index += (np.arange(b, dtype=np.int64) * n)[:, None]
        return np.bincount(index.reshape(-1), minlength=b * n).reshape(b, n)

    def compute(self, counts: np.ndarray, names: tuple[str, ...]) -> dict[str, F64]:
        """Every metric in ``names`` for each row of ``counts`` (confidence order), from its
        kernel (:mod:`~calibkit.metrics.kernels`), but the classwise bins (SCE: :class:`SortedSCE`).

        Bin sums are differences of prefix sums at the bin ends, all taken over integers:
        counts and outcome sums exactly, the signed (outcome minus confidence) sums and
        MMCE's in fixed point (:func:`_fixed_cumsum`, relative error below 1e-9). The
        float64 counts stay in :attr:`weights` until the next call.
        """
        b = counts.shape[0]
        w = counts if counts.dtype == np.int64 else self._buffer("w", b, np.int64)
        self.weights = wf = self._buffer("wf", b, np.float64)
        if w is not counts:
            w[...] = counts
        wf[...] = counts
        cum_count = np.cumsum(w, axis=1, out=self._buffer("count", b, np.int64))
        total = cum_count[:, -1].astype(np.float64)
        wmax = float(total.max(initial=0.0))
        res: dict[str, F64] = {}
        wanted = kernels(names)
        if self.mean_names:
            means = wf @ self.means
            for j, name in enumerate(self.mean_names):
                if name in wanted and isinstance(wanted[name], SampleMean):
                    res[name] = means[:, j] / total
        # the signed prefix sums only for the metrics that read them (bins, KS)
        signed_needed = any(
            (isinstance(k, BinNorm) and k.scheme in ("width", "mass"))
            or (isinstance(k, Residual) and k.norm == "sup")
            for k in wanted.values()
        )
        cum_signed, scale = (
            _fixed_cumsum(w, self.signed, wmax, self._buffer("signed", b, np.int64))
            if signed_needed
            else (cum_count, 1.0)  # unread
        )
        hits = np.multiply(w, self.hits, out=self._buffer("hits", b, self.hits.dtype.type))
        cum_hits = np.cumsum(hits, axis=1, out=self._buffer("cum_hits", b, hits.dtype.type))
        cums = (cum_count, cum_hits, cum_signed)
        self._cums = (cum_count, cum_hits)
        self._right = (w, hits)
        errors: dict[str, dict[str, F64]] = {}
        # bins first: KS then closes the tie runs of cum_signed in place
        for name, kernel in sorted(wanted.items(), key=lambda nk: isinstance(nk[1], Residual)):
            if isinstance(kernel, BinNorm) and kernel.scheme in ("width", "mass"):
                if kernel.scheme not in errors:
                    errors[kernel.scheme] = _range_errors(
                        cums, self._cuts(kernel.scheme, cum_count), scale
                    )
                res[name] = errors[kernel.scheme][kernel.norm]
            elif isinstance(kernel, Residual) and kernel.norm == "sup":
                # a tie run counts at its end only: its sum copied over the run
                cum_signed[:, self.tied] = cum_signed[:, self.tied_end]
                top = np.maximum(cum_signed.max(axis=1), -cum_signed.min(axis=1))
                res[name] = top * scale / total
            elif isinstance(kernel, Residual):
                res[name] = self._mmce(w, wf, total, wmax)
        return {name: res[name] for name in names if name in res}

    def _cuts(self, scheme: str, cum_count: np.ndarray) -> np.ndarray:
        """The bin cuts of each row of a block (its cumulative counts ``cum_count``)."""
        b = cum_count.shape[0]
        if scheme == "width":
            return np.broadcast_to(self.ew_cuts, (b, self.n_bins + 1))
        return equal_mass_cuts_rows(self.conf, self.n_bins, cum_count, self.runs)

    def prefix_ranks(self) -> PrefixRanks:
        """The built-in ranking metrics of the last :meth:`compute`'s block
        (:class:`~calibkit.metrics.rank_prefix.PrefixRanks`, under the same conditions as
        :meth:`rank_sums`). Valid until the next :meth:`compute`."""
        assert self._cums is not None
        (cum_count, cum_hits), (counts, right) = self._cums, self._right
        first, work = self.runs[0], self._rank_work
        return PrefixRanks(
            cum_count, cum_hits, counts, right, self.weights, first, work, self.groups
        )

    def rank_sums(self) -> RankSums:
        """The tie-group sums of the last :meth:`compute`'s block for the ranking metrics
        (:class:`~calibkit.metrics.selective.RankSums`, groups in decreasing confidence),
        from its prefix sums of counts and outcomes: the integers that
        :meth:`~calibkit.metrics.selective.Ranking.sums` gives for the same counts when the
        ranking score is this confidence and the outcome is correctness (0/1).

        The ascending prefix sums at the run ends ``P`` give the cumulative weight down to
        each group in decreasing order as ``total - P`` of the run before, and the group's
        own weight as the step between neighbours. Valid until the next :meth:`compute`.
        """
        assert self._cums is not None
        assert np.issubdtype(self.hits.dtype, np.integer)
        work, ends = self._rank_work, self.ends
        (cum_count, cum_hits), (b, n), g = self._cums, self._cums[0].shape, self.ends.shape[0]
        if g < n:  # ties: the sums at the run ends
            cum_count = np.take(
                cum_count, ends, axis=1, out=work("at_count", (b, g), np.int64), mode="clip"
            )
            cum_hits = np.take(
                cum_hits, ends, axis=1, out=work("at_hits", (b, g), np.int64), mode="clip"
            )
        cum = work("cum", (b, g), np.int64)  # C: weight from the top down to each group
        cum[:, -1] = cum_count[:, -1]
        np.subtract(cum_count[:, -1:], cum_count[:, : g - 1][:, ::-1], out=cum[:, : g - 1])
        minus = np.subtract(cum_hits, cum_count, out=work("minus", (b, g), np.int64))
        cum_wrong = work("e_cum", (b, g), np.int64)  # E: wrong weight down to each group
        cum_wrong[:, -1] = -minus[:, -1]
        np.subtract(minus[:, : g - 1][:, ::-1], minus[:, -1:], out=cum_wrong[:, : g - 1])
        count, wrong = work("count", (b, g), np.int64), work("wrong", (b, g), np.int64)
        for steps, c in ((count, cum), (wrong, cum_wrong)):
            steps[:, 0] = c[:, 0]
            np.subtract(c[:, 1:], c[:, :-1], out=steps[:, 1:])
        sums = RankSums(count, wrong, work)
        sums.__dict__.update(cum_count=cum, cum_wrong=cum_wrong)  # its cached properties
        return sums

    def _mmce(self, w: np.ndarray, wf: F64, total: F64, wmax: float) -> F64:
        """MMCE of each row (:func:`~calibkit.metrics.continuous.mmce_from_sorted_batch`).

        With ``a = w d`` and ``x`` the confidence over the kernel width,
        ``sum_ij a_i a_j exp(-|x_i - x_j|) = 2 sum_j a_j exp(-x_j) P_j - sum_j a_j^2``
        where ``P_j = sum_{i <= j} a_i exp(x_i)``, a prefix sum taken in fixed point when
        ``x`` spans at most :data:`_FIXED_MAX_X` (confidences within 8 kernel widths).
        """
        if self.conf[-1] - self.conf[0] > _FIXED_MAX_X * MMCE_WIDTH:
            signed = wf * self.signed
            return mmce_from_sorted_batch(self.conf, signed, total, MMCE_WIDTH)
        b = w.shape[0]
        fixed, scale = _fixed_cumsum(w, self.mmce_up, wmax, self._buffer("up", b, np.int64))
        prefix = self._buffer("float", b, np.float64)
        prefix[...] = fixed
        s = 2.0 * scale * np.einsum("ij,ij,j->i", wf, prefix, self.mmce_down)
        s -= np.einsum("ij,ij,j->i", wf, wf, self.signed2)
        return np.asarray(np.sqrt(np.maximum(s, 0.0)) / total, dtype=np.float64)


def _fixed_cumsum(
    w: np.ndarray, values: F64, wmax: float, out: np.ndarray | None = None
) -> tuple[np.ndarray, float]:
    """``np.cumsum(w * values, axis=1)`` as int64 fixed point: the sums are ``cum * scale``.

    ``w`` are non-negative integer weights, no row summing to more than ``wmax``.
    ``values`` (shape ``(N,)``) are rounded to multiples of ``scale = 2^-s``, the smallest
    that keeps ``wmax max|values| / scale`` below ``2^62``; numpy sums integers exactly
    and 4-6x faster than floats. Each term is then off by at most ``w_i 2^-(s+1)``, a
    prefix sum by at most ``wmax 2^-(s+1)``: relative to the largest possible sum
    ``wmax max|values|``, under ``2^-31`` when ``s + log2 max|values| >= 30`` (rows of
    up to about ``2^32`` samples); otherwise the float64 sums are returned (scale 1).
    ``out`` (int64, the shape of ``w``) receives the fixed-point sums when given.
    """
    top = float(np.max(np.abs(values), initial=0.0))
    if top == 0.0 or wmax == 0.0:
        return np.zeros(w.shape, dtype=np.int64), 1.0
    shift = 62 - int(np.ceil(np.log2(wmax * top + 1.0)))
    if shift + np.log2(top) < 30:
        return np.cumsum(w * values, axis=1), 1.0
    fixed = np.rint(np.ldexp(values, shift)).astype(np.int64)
    terms = np.multiply(w, fixed, out=out)
    return np.cumsum(terms, axis=1, out=terms), 2.0**-shift


def count_blocks(
    rng: np.random.Generator, n: int, n_boot: int, cells: int = 1 << 20
) -> Iterator[F64]:
    """``n_boot`` bootstrap replicates of ``n`` rows as float64 multinomial count weights,
    in blocks of shape ``(b, n)`` of at most about ``cells`` entries (memory). The draws do
    not depend on the block size: the same ``rng`` gives the same replicates.

    >>> blocks = list(count_blocks(np.random.default_rng(0), 3, 5, cells=6))
    >>> [b.shape for b in blocks], float(sum(b.sum() for b in blocks))
    ([(2, 3), (2, 3), (1, 3)], 15.0)
    """
    block = max(1, min(n_boot, cells // max(n, 1)))
    for start in range(0, n_boot, block):
        b = min(block, n_boot - start)
        yield resample_counts(rng.integers(0, n, (b, n))).astype(np.float64)


def resample_counts(draws: np.ndarray) -> np.ndarray:
    """How often each sample appears in each row of ``draws`` (shape ``(B, N)``), int64.

    Row ``b`` is ``np.bincount(draws[b], minlength=N)``; one ``bincount`` for the block.

    >>> resample_counts(np.array([[0, 0, 2], [1, 2, 2]])).tolist()
    [[2, 0, 1], [0, 1, 2]]
    """
    b, n = draws.shape
    flat = (draws + (np.arange(b) * n)[:, None]).reshape(-1)
    return np.bincount(flat, minlength=b * n).reshape(b, n)


def calibrated_draw_errors(
    conf: F64,
    binnings: dict[str, tuple[np.ndarray, BinStats]],
    floors: dict[str, BinNorm],
    n_draws: int,
    rng: np.random.Generator,
    order: np.ndarray | None = None,
) -> dict[str, list[float]]:
    """Binned errors of ``n_draws`` perfectly calibrated outcome draws ``Bernoulli(conf)``.

    ``floors`` maps each metric to its kernel; ``binnings`` holds the bin index and the
    outcome-free sums of each top-label scheme (``"width"``, ``"mass"``), whose bins are
    ranges of the confidences in ascending ``order`` (default: sorted here). A block of draws
    ``rng.random((b, N))`` (the numbers of ``b`` calls ``rng.random(N)``) needs only its
    outcome counts per bin: the hits are put in confidence order (one byte each) and
    counted once by a cumulative sum, which every scheme reads at its bin ends. The counts
    are integers, so the errors are those of summing the outcomes bin by bin.
    """
    n = conf.shape[0]
    order = np.argsort(conf, kind="stable") if order is None else order
    ends = {  # the last position + 1 of each bin, in confidence order
        scheme: np.searchsorted(idx[order], np.arange(st.counts.shape[0]), side="right")
        for scheme, (idx, st) in binnings.items()
    }
    draws: dict[str, list[float]] = {name: [] for name in floors}
    block = max(1, min(n_draws, (1 << 20) // max(n, 1)))
    for start in range(0, n_draws, block):
        b = min(block, n_draws - start)
        hits = np.take(rng.random((b, n)) < conf, order, axis=1)
        cum = np.cumsum(hits, axis=1, dtype=np.int64 if n >= 1 << 31 else np.int32)
        for scheme, (_, st) in binnings.items():
            wanted = [name for name, k in floors.items() if k.scheme == scheme]
            if not wanted:
                continue
            at = np.take(cum, ends[scheme] - 1, axis=1, mode="clip")
            at[:, ends[scheme] == 0] = 0
            acc = np.diff(at, axis=1, prepend=0).astype(np.float64)
            errors = errors_from_sums(st.counts, st.confidence_sum, acc)
            for name in wanted:
                draws[name] += errors[floors[name].norm].tolist()
    return draws


def _range_errors(
    cums: tuple[np.ndarray, ...], cuts: np.ndarray, scale: float = 1.0
) -> dict[str, F64]:
    """Binned errors of bins given as position ranges ``[cuts_k, cuts_k+1)``, row by row.

    ``cums`` are the inclusive prefix sums of the counts, the outcomes and the signed
    values (outcome minus confidence, in units of ``scale``); a bin's sums are their
    differences at its ends.
    """
    before = np.maximum(cuts - 1, 0)
    at = [np.where(cuts > 0, np.take_along_axis(c, before, axis=1), 0) for c in cums]
    counts, acc_sum, signed_sum = (np.diff(a, axis=1).astype(np.float64) for a in at)
    signed_sum *= scale
    return errors_from_sums(counts, acc_sum - signed_sum, acc_sum)


class SortedSCE:
    """SCE of bootstrap replicates whose counts come in confidence order (``order``).

        The sparse part of :func:`~calibkit.metrics.bin_errors.sce_batch_split` is permuted to
        that order once. The class totals ``counts @ probs`` are the cost (``N K`` per
        replicate): with up to :data:`_SCE_SMALL` bytes of probabilities, a block's totals are
        one product with the permuted probabilities; above, the counts are kept (``uint8``,
    widened when a count exceeds 255)
        and the totals of all replicates come at the end from one pass over the probabilities,
        in blocks of 1,024 samples (:func:`_class_totals`).

        Parameters
        ----------
        probs : ndarray of shape (N, K)
            Probabilities.
        split : scipy.sparse.csc_matrix
            :func:`~calibkit.metrics.bin_errors.sce_split_map` of ``probs`` and the labels.
        n_bins : int
            Bins per class.
        order : ndarray of shape (N,)
            The samples in the counts' column order.
        n_boot : int
            Number of replicates to come.
    """

    def __init__(
        self, probs: F64, split: sparse.csc_matrix, n_bins: int, order: np.ndarray, n_boot: int
    ) -> None:
        self.probs, self.order, self.n_bins = probs, order, n_bins
        self.split = split[:, order]
        small = probs.nbytes <= _SCE_SMALL
        self.sorted_probs = probs[order] if small else probs[:0]
        self.out = np.empty(n_boot)
        self.store = None if small else np.empty((n_boot, order.shape[0]), np.uint8)
        # small: the weights of consecutive replicates wait here for one product of at
        # least _SCE_ROWS rows (the sparse product costs twice as much per row in fours)
        rows = max(_SCE_ROWS, _SCE_CELLS // max(order.shape[0], 1)) if small else 0
        self.stage, self.staged, self.first = np.empty((rows, order.shape[0])), 0, 0

    def add(self, start: int, counts: np.ndarray, weights: F64 | None = None) -> None:
        """Take the counts of replicates ``start, start + 1, ...`` (one row each).

        ``weights``: the same counts as float64, when the caller has them.
        """
        rows = slice(start, start + counts.shape[0])
        if self.store is None:
            w = counts if weights is None else weights
            if self.staged and start != self.first + self.staged:
                self._flush()
            if self.staged + w.shape[0] > self.stage.shape[0]:
                self._flush()
            if w.shape[0] >= self.stage.shape[0]:  # a whole product: no copy
                w = w.astype(np.float64, copy=False)
                self.out[rows] = sce_batch_split(self.sorted_probs, self.split, self.n_bins, w)
                return
            if not self.staged:
                self.first = start
            self.stage[self.staged : self.staged + w.shape[0]] = w
            self.staged += w.shape[0]
            return
        if counts.max(initial=0) > np.iinfo(self.store.dtype).max:  # multinomial: rarely
            self.store = self.store.astype(np.int64 if counts.max() >= 1 << 16 else np.uint16)
        self.store[rows] = counts

    def values(self) -> F64:
        """The SCE of every replicate."""
        if self.store is None:
            self._flush()
            return self.out
        totals = _class_totals(self.store, self.probs, self.order)
        step = max(1, (1 << 20) // self.store.shape[1])
        for start in range(0, self.store.shape[0], step):
            rows = slice(start, start + step)
            w = self.store[rows].astype(np.float64)
            self.out[rows] = sce_batch_split(
                self.probs, self.split, self.n_bins, w, totals=totals[rows]
            )
        return self.out

    def _flush(self) -> None:
        """The SCE of the staged replicates."""
        if self.staged:
            w = self.stage[: self.staged]
            rows = slice(self.first, self.first + self.staged)
            self.out[rows] = sce_batch_split(self.sorted_probs, self.split, self.n_bins, w)
            self.staged = 0


def _class_totals(counts: np.ndarray, probs: F64, order: np.ndarray) -> F64:
    """``counts @ probs[order]`` (shape ``(B, K)``), by blocks of 1,024 samples.

    With ``K >= 100`` classes the block products are float32 (twice as fast), summed in
    float64. A float32 dot product of 1,024 non-negative terms is off by at most
    ``1024 * 2^-24 = 6.1e-5`` of its value, and rounding ``probs`` to float32 adds
    ``2^-24``: each class total is within ``6.2e-5`` of itself. SCE divides the sum of
    the gaps by ``K`` times the total weight, which equals the sum of the class totals, so
    SCE moves by at most ``6.2e-5 / K`` (6.2e-7 at 100 classes, 6.2e-8 at 1,000): far
    below the 1e-4 it is printed to and the bootstrap's own spread.
    """
    b, n = counts.shape
    k = probs.shape[1]
    dtype = np.float32 if k >= 100 else np.float64
    out = np.zeros((b, k))
    # the work arrays are reused: fresh ones would be new pages (faults) every block
    w, p, p64, prod = (
        np.empty((b, 1024), dtype),
        np.empty((1024, k), dtype),
        np.empty((1024, k)),
        np.empty((b, k), dtype),
    )
    for start in range(0, n, 1024):
        m = min(1024, n - start)
        w[:, :m] = counts[:, start : start + m]
        np.take(probs, order[start : start + m], axis=0, out=p64[:m])
        p[:m] = p64[:m]
        out += np.matmul(w[:, :m], p[:m], out=prod)
    return out
