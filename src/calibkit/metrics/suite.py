"""Every metric at once, with confidence intervals and the noise floor.

:class:`MetricSuite` prepares the per-sample quantities of one set of outputs once; each
bootstrap replicate is then a vector of resample counts fed to the same weighted
formulas as the functional metrics (no data is copied).

The noise floor of a top-label metric is its expected value for a perfectly calibrated
model with the same confidences: outcomes are redrawn as ``Bernoulli(confidence)`` and
the metric recomputed with the same bins. An ECE near its floor is indistinguishable from
calibrated at this sample size.

:func:`calibkit.metrics.evaluation.evaluate` reads every metric, interval and floor from
one suite.

>>> from calibkit.core.outputs import as_outputs
>>> suite = MetricSuite.from_outputs(as_outputs([1, 0], probs=[[0.2, 0.8], [0.4, 0.6]]))
>>> suite.compute(names=("accuracy",))
{'accuracy': 0.5}
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import numpy as np

from calibkit.core.binning import (
    BinStats,
    check_n_bins,
    equal_mass_cuts,
    equal_mass_edges,
    equal_width_index,
    stats_from_index,
)
from calibkit.core.errors import InputError
from calibkit.core.options import Resampling
from calibkit.core.outputs import ClassifierOutputs
from calibkit.core.progress import Phase
from calibkit.metrics import resampled as rs
from calibkit.metrics.analytic import (
    RankInfluence,
    influence_functions,
    mean_interval,
    normal_interval,
)
from calibkit.metrics.bin_errors import (
    debiased_from_stats,
    error_from_stats,
    errors_from_sums,
    sce_batch,
    sce_batch_split,
    sce_from_index,
    sce_index,
    sce_maps,
    sce_split_map,
)
from calibkit.metrics.continuous import (
    MMCE_WIDTH,
    ks_from_sorted,
    mmce_from_sorted,
    mmce_from_sorted_batch,
)
from calibkit.metrics.info import floor_names, kernels, suite_names
from calibkit.metrics.kernels import BinNorm, RankStatistic, Residual, SampleMean
from calibkit.metrics.rank_prefix import prefix_functions
from calibkit.metrics.samples import F64, Mode, calibration_target, probs_and_scores, weighted_mean
from calibkit.metrics.selective import Ranking

if TYPE_CHECKING:
    from scipy import sparse

_log = logging.getLogger(__name__)

#: Largest sample count for which :meth:`MetricSuite.compute` sums SCE in sample order;
#: above it, ``sce_batch_split`` (equal to rounding).
_BATCH_MAX_N = 30_000
#: The bootstrap takes its replicates in confidence order (:mod:`.resampled`) from this many
#: samples on, and :meth:`MetricSuite.compute_batch` below (tests set it to compare the two).
_SORTED_MIN_N = 0
#: The bootstrap's blocks hold about this many (replicate, sample) cells, so that a block's
#: work arrays stay in the CPU's cache (2 MB of L2 per core here), but at least
#: :data:`_BLOCK_MIN_ROWS` rows (fewer rows cost more per row: Python's overhead, SCE's
#: sparse product) while that stays within :data:`_BLOCK_MAX_CELLS` (memory: about 110
#: bytes a cell). The draws do not depend on the block size.
_BLOCK_CELLS = 1 << 18
_BLOCK_MIN_ROWS = 16
_BLOCK_MAX_CELLS = 1 << 21


def block_rows(n: int) -> int:
    """Replicates per block of the bootstrap of ``n`` samples (see :data:`_BLOCK_CELLS`).

    Parameters
    ----------
    n : int
        The number of samples.

    Returns
    -------
    int
        Replicates drawn and computed together (at least 1).

    Examples
    --------
    >>> block_rows(10_000), block_rows(100_000), block_rows(1_000_000)
    (26, 16, 2)
    """
    return max(1, _BLOCK_CELLS // n, min(_BLOCK_MIN_ROWS, _BLOCK_MAX_CELLS // n))


class MetricSuite:
    """All metrics of one set of outputs, for any sample weighting.

    Usually built with :meth:`from_outputs`. Binned metrics use equal-width ``[a, b)`` bins
    (last closed at 1.0) and equal-mass bins as in :mod:`calibkit.core.binning`.

    Parameters
    ----------
    conf, outcome, correct : ndarray of shape (N,)
        Confidence and outcome (see :func:`~calibkit.metrics.samples.calibration_target`),
        and top-label correctness (for accuracy).
    per_sample : dict of str to ndarray of shape (N,)
        Per-sample values averaged into a metric of the same name (``"nll"``, ...).
    n_bins : int
        Number of bins.
    sce : tuple of (ndarray of shape (N, K), ndarray of shape (N,)), optional
        Probabilities and labels for SCE (given by :meth:`from_outputs`); without them SCE
        is not computed.
    score : ndarray of shape (N,), optional
        The top-label confidence that ranks the samples for the
        :class:`~.kernels.RankStatistic` metrics (default: ``conf``, the same in top-label
        mode).

    Examples
    --------
    >>> from calibkit.core.outputs import as_outputs
    >>> out = as_outputs([1, 0], probs=[[0.2, 0.8], [0.4, 0.6]])
    >>> suite = MetricSuite.from_outputs(out, n_bins=10)
    >>> res = suite.compute()
    >>> round(res["ece"], 4), round(res["sce"], 4), res["accuracy"]
    (0.4, 0.4, 0.5)
    >>> round(suite.compute(np.array([1.0, 0.0]))["ece"], 4)  # only the first sample
    0.2
    """

    def __init__(
        self,
        conf: F64,
        outcome: F64,
        correct: F64,
        per_sample: dict[str, F64],
        *,
        n_bins: int = 15,
        sce: tuple[F64, np.ndarray] | None = None,
        score: F64 | None = None,
    ) -> None:
        self.n_bins = n_bins = check_n_bins(n_bins)
        self.score = conf if score is None else score
        self._ranking: Ranking | None = None  # sorted on first use
        self.conf, self.outcome, self.correct = conf, outcome, correct
        self.per_sample = per_sample
        self.order = np.argsort(conf, kind="stable")
        self.sorted_conf = conf[self.order]
        self.ew_idx = equal_width_index(conf, n_bins)
        self.ew_edges = np.arange(n_bins + 1, dtype=np.float64) / n_bins
        self._sce = sce
        self._sce_maps: tuple[sparse.csc_matrix, ...] | None = None
        self._sce_split: sparse.csc_matrix | None = None
        self._run_end = np.append(self.sorted_conf[1:] != self.sorted_conf[:-1], True)
        self._draws: dict[tuple[int, int], dict[str, F64]] = {}  # noise_draws, by (n, seed)

    @classmethod
    def from_outputs(
        cls,
        outputs: ClassifierOutputs,
        *,
        n_bins: int = 15,
        mode: Mode = "top_label",
        names: tuple[str, ...] | None = None,
    ) -> MetricSuite:
        """Prepare every per-sample quantity of ``outputs`` (those of registered terms too;
        ``names``: the metrics to be computed, default the suite's, so a registered metric
        outside the suite with a kernel can be asked for)."""
        n_bins = check_n_bins(n_bins)
        conf, outcome = calibration_target(outputs, mode)
        probs, per_sample = probs_and_scores(outputs)  # no (N, K) float64 temporaries
        for name, kernel in kernels(suite_names() if names is None else names).items():
            if isinstance(kernel, SampleMean) and not isinstance(kernel.term, str):
                per_sample[name] = kernel.values(outputs)
        sce = (probs, outputs.labels)
        top = outputs.confidence  # ranks the samples, whatever the mode
        return cls(conf, outcome, outputs.correct, per_sample, n_bins=n_bins, sce=sce, score=top)

    def means(self, names: tuple[str, ...]) -> dict[str, F64]:
        """The per-sample values of each :class:`~.kernels.SampleMean` metric in ``names``
        that this suite has (in the order of ``names``)."""
        res: dict[str, F64] = {}
        for name, kernel in kernels(names).items():
            if isinstance(kernel, SampleMean):
                term = name if not isinstance(kernel.term, str) else kernel.term
                values = self.correct if term == "correct" else self.per_sample.get(term)
                if values is not None:
                    res[name] = values
        return res

    def ranked(
        self, names: tuple[str, ...], weights: np.ndarray | None, columns: np.ndarray | None = None
    ) -> dict[str, F64]:
        """Each :class:`~.kernels.RankStatistic` metric in ``names`` for each row of
        ``weights`` (shape ``(b, N)``; None: every sample once, one row; ``columns``: the
        column of each sample, for weights in another order), from one set of tie-group
        sums."""
        wanted = {n: k for n, k in kernels(names).items() if isinstance(k, RankStatistic)}
        if not wanted:
            return {}
        if self._ranking is None:
            self._ranking = Ranking(self.score, self.correct)
        s = self._ranking.sums(weights, columns, reuse=True)
        return {name: kernel.function(s) for name, kernel in wanted.items()}

    def _ranks_by_conf(self) -> bool:
        """Whether the ranking metrics' score and outcome are this suite's confidence and
        outcome (top-label mode): then they come from the bootstrap's own prefix sums."""
        same = self.score is self.conf or np.array_equal(self.score, self.conf)
        binary = bool(np.all((self.outcome == 0) | (self.outcome == 1)))
        return same and binary and np.array_equal(self.outcome, self.correct)

    def _equal_mass_index(self, weight: F64 | None) -> tuple[np.ndarray, F64]:
        """Equal-mass bin of every sample under ``weight``, and the bin edges."""
        sw = None if weight is None else weight[self.order]
        cuts = equal_mass_cuts(self.sorted_conf, self.n_bins, sw)
        idx = np.empty(self.conf.shape[0], dtype=np.int64)
        idx[self.order] = np.repeat(np.arange(self.n_bins, dtype=np.int64), np.diff(cuts))
        return idx, equal_mass_edges(self.sorted_conf, cuts)

    def _stats(self, scheme: str, outcome: F64, weight: F64 | None) -> BinStats:
        """The top-label bin sums of ``scheme`` (``"width"`` or ``"mass"``)."""
        if scheme == "width":
            idx, edges = self.ew_idx, self.ew_edges
        else:
            idx, edges = self._equal_mass_index(weight)
        return stats_from_index(idx, edges, self.n_bins, self.conf, outcome, weight)

    def binned(
        self, outcome: F64, weight: F64 | None = None, names: tuple[str, ...] | None = None
    ) -> dict[str, float]:
        """The top-label binned (:class:`~.kernels.BinNorm`) and bin-free
        (:class:`~.kernels.Residual`) errors in ``names`` (default: the suite's) for
        ``outcome`` (weights optional)."""
        res: dict[str, float] = {}
        stats: dict[str, BinStats] = {}
        for name, kernel in kernels(suite_names() if names is None else names).items():
            if isinstance(kernel, BinNorm) and kernel.scheme != "classwise":
                if kernel.scheme not in stats:
                    stats[kernel.scheme] = self._stats(kernel.scheme, outcome, weight)
                res[name] = _norm_of(stats[kernel.scheme], kernel.norm)
            elif isinstance(kernel, Residual):
                sw = None if weight is None else weight[self.order]
                if kernel.norm == "sup":
                    res[name] = ks_from_sorted(self.sorted_conf, outcome[self.order], sw)
                else:
                    so = outcome[self.order]
                    res[name] = mmce_from_sorted(self.sorted_conf, so, sw, MMCE_WIDTH)
        return res

    def compute(
        self, weight: F64 | None = None, names: tuple[str, ...] | None = None
    ) -> dict[str, float]:
        """Every metric in ``names`` (default: the suite's) under sample ``weight`` (None:
        every sample once)."""
        names = suite_names() if names is None else names
        res: dict[str, float] = {k: weighted_mean(v, weight) for k, v in self.means(names).items()}
        res.update(self.binned(self.outcome, weight, names))
        ranked = self.ranked(names, None if weight is None else weight[None, :])
        res.update({name: float(v[0]) for name, v in ranked.items()})
        if self._sce is not None:
            for name, kernel in kernels(names).items():
                if isinstance(kernel, BinNorm) and kernel.scheme == "classwise":
                    res[name] = self._sce_one(weight)
        return {name: res[name] for name in names if name in res}

    def mean_intervals(
        self, names: tuple[str, ...], level: float
    ) -> dict[str, tuple[float, float]]:
        """The Student-t interval at ``level`` of the population mean of each
        :class:`~.kernels.SampleMean` metric in ``names`` (every sample once; no resampling:
        :func:`~calibkit.metrics.analytic.mean_interval`)."""
        return {name: mean_interval(v, level) for name, v in self.means(names).items()}

    def influence_intervals(
        self, names: tuple[str, ...], level: float
    ) -> dict[str, tuple[float, float]]:
        """The normal interval at ``level`` of each :class:`~.kernels.RankStatistic` metric in
        ``names`` whose influence function is known
        (:func:`~calibkit.metrics.analytic.influence_functions`), from one sort (no
        resampling). Centred on the estimate of :class:`~calibkit.metrics.analytic.RankInfluence`
        (the metric's value to rounding) and cut to [0, 1], where these metrics lie."""
        known = influence_functions()
        wanted = {
            n: k.function
            for n, k in kernels(names).items()
            if isinstance(k, RankStatistic) and k.function in known
        }
        if not wanted:
            return {}
        ranks = RankInfluence(self.score, self.correct)
        res: dict[str, tuple[float, float]] = {}
        for name, function in wanted.items():
            low, high = normal_interval(*ranks.estimate_se(function), level)
            res[name] = (min(max(low, 0.0), 1.0), min(max(high, 0.0), 1.0))
        return res

    def _sce_one(self, weight: F64 | None) -> float:
        """SCE under one weighting: without weights, :func:`~calibkit.metrics.binned.sce`'s
        own sums (no sparse maps, no scipy); with them, :meth:`_sce_batch`."""
        assert self._sce is not None
        if weight is None:
            probs, labels = self._sce
            return sce_from_index(sce_index(probs, self.n_bins), probs, labels, self.n_bins, None)
        return float(self._sce_batch(weight[None, :])[0])

    def noise_floor(
        self, n_draws: int = 200, seed: int = 0, names: tuple[str, ...] | None = None
    ) -> dict[str, float]:
        """Mean of each metric in ``names`` (default: the suite's with ``has_floor``) over
        ``n_draws`` perfectly calibrated outcome draws (:meth:`noise_draws`)."""
        draws = self.noise_draws(n_draws, seed, names)
        return {name: float(np.mean(d)) for name, d in draws.items()}

    def noise_draws(
        self, n_draws: int = 200, seed: int = 0, names: tuple[str, ...] | None = None
    ) -> dict[str, F64]:
        """Each metric in ``names`` (default: the suite's with ``has_floor``) for ``n_draws``
        perfectly calibrated outcome draws: its distribution were the model calibrated.

        The bins do not move with the outcomes: only the outcome sums per bin are redrawn
        (:func:`~calibkit.metrics.resampled.calibrated_draw_errors`). The draws of each metric
        do not depend on the other names asked for, so they are kept: a later call with the
        same ``n_draws`` and ``seed`` for names already drawn returns them (copies).
        """
        names = floor_names() if names is None else names
        kept = self._draws.get((n_draws, seed), {})
        if all(name in kept for name in names):
            return {name: kept[name].copy() for name in names}
        rng = np.random.default_rng(seed)
        n = self.conf.shape[0]
        zero = np.zeros(n)
        em_idx, em_edges = self._equal_mass_index(None)
        fixed = {  # bin index and the outcome-free sums of each scheme
            "width": (self.ew_idx, self._stats("width", zero, None)),
            "mass": (em_idx, stats_from_index(em_idx, em_edges, self.n_bins, self.conf, zero)),
        }
        floors = {n: k for n, k in kernels(names).items() if isinstance(k, BinNorm)}
        draws = rs.calibrated_draw_errors(self.conf, fixed, floors, n_draws, rng, self.order)
        res = {name: np.asarray(draws[name], dtype=np.float64) for name in floors}
        self._draws.setdefault((n_draws, seed), {}).update({k: v.copy() for k, v in res.items()})
        return res

    def bootstrap(
        self, resampling: Resampling = Resampling(), names: tuple[str, ...] | None = None
    ) -> dict[str, tuple[float, float]]:
        """Percentile bootstrap intervals of every metric in ``names`` (default: the
        suite's), as ``resampling`` says (at least one replicate).

        Binned errors are biased upwards at finite N and a resample repeats samples, so near
        calibration the interval can lie above the estimate (it shows the estimator's spread;
        read it beside the noise floor). The replicates go in cache-sized blocks with the
        samples in confidence order (:mod:`.resampled`, the ranking metrics by
        :mod:`.rank_prefix`): the same draws and the values of :meth:`compute` on them to
        rounding (sums in fixed point, SCE's class totals from 100 classes in float32, far
        below the printed digits). From :data:`~.resampled.POISSON_MIN_N` (50,000) samples on,
        each sample's count is an independent Poisson(1) weight (the Poisson bootstrap, the
        large-N limit of drawing N samples with replacement: other draws, the same spread).
        """
        n_boot, level = resampling.n_boot, resampling.level
        if n_boot < 1:
            raise InputError("n_boot", "at least 1 replicate", repr(n_boot))
        names = suite_names() if names is None else names
        n = self.conf.shape[0]
        rng = np.random.default_rng(resampling.seed)
        ss = None
        if n >= _SORTED_MIN_N:
            ss = rs.SortedSamples(self.conf, self.outcome, self.means(names), self.n_bins)
        rows = (1 << 20) // n if ss is None else block_rows(n)
        block = max(1, min(n_boot, rows))  # the draws do not depend on it
        # the ranking metrics from the same prefix sums when they rank by this confidence
        shared = self._ranks_by_conf()
        values: dict[str, list[F64]] = {name: [] for name in names}
        classwise = [
            name
            for name, k in kernels(names).items()
            if isinstance(k, BinNorm) and k.scheme == "classwise"
        ]
        sce = None
        if ss is not None and self._sce is not None and classwise:
            sce = rs.SortedSCE(self._sce[0], self._split_map(), self.n_bins, ss.order, n_boot)
        phase = Phase(_log, f"bootstrap ({n_boot:,} replicates of {n:,} samples)", n_boot)
        for start in range(0, n_boot, block):
            b = min(block, n_boot - start)
            if ss is None:
                draws = rng.integers(0, n, (b, n))
                batch = self.compute_batch(rs.resample_counts(draws).astype(np.float64), names)
            else:
                counts = ss.draw(rng, b)  # in confidence order
                batch = ss.compute(counts, names)
                if shared:
                    batch.update(_ranked_sorted(names, ss))
                else:
                    batch.update(self.ranked(names, counts, ss.rank))
                if sce is not None:
                    sce.add(start, counts, ss.weights)
            for name, vals in batch.items():
                values[name].append(vals)
            phase.step(n=b)
        if sce is not None:
            sce_values = sce.values()
            for name in classwise:
                values[name] = [sce_values]
        alpha = (1.0 - level) / 2.0
        q = {
            name: _quantiles(np.concatenate(v), alpha)
            for name, v in values.items()
            if v  # a metric this suite lacks the data for (SCE without probabilities)
        }
        return {name: (float(lo), float(hi)) for name, (lo, hi) in q.items()}

    def _sce_batch(self, weights: F64) -> F64:
        """SCE of each row of ``weights``: sums in sample order up to :data:`_BATCH_MAX_N`."""
        assert self._sce is not None
        probs, labels = self._sce
        if weights.shape[1] <= _BATCH_MAX_N:
            if self._sce_maps is None:  # built on first use: O(N K) memory
                self._sce_maps = sce_maps(probs, labels, self.n_bins)
            return sce_batch(self._sce_maps, probs.shape[1], weights)
        return sce_batch_split(probs, self._split_map(), self.n_bins, weights)

    def _split_map(self) -> sparse.csc_matrix:
        """:func:`~calibkit.metrics.bin_errors.sce_split_map` of the SCE data, built once."""
        assert self._sce is not None
        if self._sce_split is None:
            self._sce_split = sce_split_map(*self._sce, self.n_bins)
        return self._sce_split

    def _ew_sums(self, weights: F64) -> list[F64]:
        """Equal-width bin weight, confidence and outcome sums, shape ``(B, n_bins)`` each.

        One ``bincount`` per sum over a (bin, row) index: each bin adds its samples in index
        order, as the one-weighting formula does.
        """
        b, nb = weights.shape[0], self.n_bins
        idx = ((self.ew_idx * b)[None, :] + np.arange(b)[:, None]).reshape(-1)
        out = []
        for v in (weights, weights * self.conf, weights * self.outcome):
            total = np.bincount(idx, weights=v.reshape(-1), minlength=nb * b)
            out.append(np.asarray(total, dtype=np.float64).reshape(nb, b).T)
        return out

    def compute_batch(self, weights: F64, names: tuple[str, ...] | None = None) -> dict[str, F64]:
        """Every metric in ``names`` (default: the suite's) for each row of ``weights``
        (shape ``(b, N)``) at once.

        The same formulas as :meth:`compute` (which it matches to rounding), vectorised over
        the rows with matrix products; equal-mass bins (which move with the weights) and
        MMCE with a narrow kernel go row by row.
        """
        names = suite_names() if names is None else names
        total = weights.sum(axis=1)
        res: dict[str, F64] = {k: weights @ v / total for k, v in self.means(names).items()}
        res.update(self.ranked(names, weights))
        errors: dict[str, F64] | None = None
        signed: F64 | None = None
        for name, kernel in kernels(names).items():
            if isinstance(kernel, BinNorm) and kernel.scheme == "width":
                if errors is None:
                    errors = errors_from_sums(*self._ew_sums(weights))
                res[name] = errors[kernel.norm]
            elif isinstance(kernel, BinNorm) and kernel.scheme == "mass":
                res[name] = np.array(
                    [_norm_of(self._stats("mass", self.outcome, w), kernel.norm) for w in weights]
                )
            elif isinstance(kernel, BinNorm) and self._sce is not None:
                res[name] = self._sce_batch(weights)
            elif isinstance(kernel, Residual):
                if signed is None:
                    signed = weights[:, self.order] * (self.outcome - self.conf)[self.order]
                if kernel.norm == "sup":
                    cum = np.cumsum(signed, axis=1)[:, self._run_end]
                    res[name] = np.abs(cum).max(axis=1) / total
                else:
                    res[name] = mmce_from_sorted_batch(self.sorted_conf, signed, total, MMCE_WIDTH)
        return {name: res[name] for name in names if name in res}


def _ranked_sorted(names: tuple[str, ...], ss: rs.SortedSamples) -> dict[str, F64]:
    """The :class:`~.kernels.RankStatistic` metrics in ``names`` of the block ``ss`` last
    computed: the built-in ones from its prefix sums (:mod:`.rank_prefix`), any other from
    its tie-group sums."""
    wanted = {n: k for n, k in kernels(names).items() if isinstance(k, RankStatistic)}
    fast = prefix_functions()
    res: dict[str, F64] = {}
    if any(k.function in fast for k in wanted.values()):
        ranks = ss.prefix_ranks()
        res = {n: fast[k.function](ranks) for n, k in wanted.items() if k.function in fast}
    if len(res) < len(wanted):
        sums = ss.rank_sums()
        res.update({n: k.function(sums) for n, k in wanted.items() if n not in res})
    return {n: res[n] for n in wanted}


def _quantiles(values: F64, alpha: float) -> F64:
    """The ``alpha`` and ``1 - alpha`` quantiles of the defined (non-NaN) replicates: a
    resample without a wrong prediction has no failure AUROC, and is left out (NaN if none
    is defined)."""
    defined = values[~np.isnan(values)]
    if defined.size == 0:
        return np.array([np.nan, np.nan])
    return np.asarray(np.quantile(defined, [alpha, 1 - alpha]), dtype=np.float64)


def _norm_of(stats: BinStats, norm: str) -> float:
    """The ``norm`` (:data:`~.kernels.NORMS`) of the bin gaps of ``stats``."""
    if norm == "debiased":
        return debiased_from_stats(stats)
    return error_from_stats(stats, norm)  # type: ignore[arg-type]
