"""Many bootstrap replicates at once, with the samples in confidence order.

The bootstrap of :class:`~calibkit.metrics.suite.MetricSuite` on large inputs: a block of
replicates is a matrix of resample counts whose columns are the samples sorted by
confidence. In that order every equal-width bin, every equal-mass bin and every prefix that
KS and MMCE read is a contiguous range, so all of them come from a few cumulative sums of
the whole block (no per-replicate loop over bins). The values equal
:meth:`~calibkit.metrics.suite.MetricSuite.compute` on the same counts to rounding.

>>> conf, outcome = np.array([0.8, 0.6]), np.array([1.0, 0.0])
>>> ss = SortedSamples(conf, outcome, {"nll": np.array([0.2, 0.9])}, n_bins=10)
>>> counts = resample_counts(np.array([[0, 1], [0, 0]]))[:, ss.order]
>>> res = ss.compute(counts, ("nll", "ece", "ks"))
>>> [np.round(v, 4).tolist() for v in res.values()]
[[0.55, 0.2], [0.4, 0.2], [0.3, 0.2]]
"""

from __future__ import annotations

import numpy as np

from calibkit.core.binning import BinStats, equal_mass_cuts, equal_width_index
from calibkit.metrics.bin_errors import errors_from_sums
from calibkit.metrics.continuous import MMCE_WIDTH, mmce_from_sorted_batch
from calibkit.metrics.samples import F64

#: The binned errors read from :func:`~calibkit.metrics.bin_errors.errors_from_sums`.
_FLOOR_KEYS = {"ece": "l1", "aece": "l1", "mce": "max", "rmsce": "l2", "ece_debiased": "debiased"}
_EW_KEYS = (("ece", "l1"), ("mce", "max"), ("rmsce", "l2"), ("ece_debiased", "debiased"))


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
    """

    def __init__(self, conf: F64, outcome: F64, means: dict[str, F64], n_bins: int) -> None:
        self.order = np.argsort(conf, kind="stable")
        self.conf = conf[self.order]
        self.signed = (outcome - conf)[self.order]
        hits = outcome[self.order]
        # 0/1 outcomes: per-bin outcome sums are integer prefix sums (exact, and fast)
        self.hits = hits.astype(np.int64) if np.all((hits == 0) | (hits == 1)) else hits
        self.mean_names = tuple(means)
        self.means = np.stack([v[self.order] for v in means.values()], axis=1)
        self.n_bins = n_bins
        # the equal-width bin grows with the confidence: bin k is positions [cut_k, cut_k+1)
        idx = equal_width_index(self.conf, n_bins)
        self.ew_cuts = np.searchsorted(idx, np.arange(n_bins + 1), side="left")
        self.run_end = np.append(self.conf[1:] != self.conf[:-1], True)

    def compute(self, counts: np.ndarray, names: tuple[str, ...]) -> dict[str, F64]:
        """Every metric in ``names`` (but SCE) for each row of ``counts`` (confidence order).

        Bin sums are differences of prefix sums at the bin ends: counts and outcome sums in
        integers, the signed (outcome minus confidence) sums in float64.
        """
        w = counts.astype(np.float64)
        total = w.sum(axis=1)
        res: dict[str, F64] = {}
        means = w @ self.means
        for j, name in enumerate(self.mean_names):
            if name in names:
                res[name] = means[:, j] / total
        signed = w * self.signed
        cum_count = np.cumsum(counts, axis=1)
        cums = (cum_count, np.cumsum(counts * self.hits, axis=1), np.cumsum(signed, axis=1))
        ew_cuts = np.broadcast_to(self.ew_cuts, (w.shape[0], self.n_bins + 1))
        errors = _range_errors(cums, ew_cuts)
        for name, key in _EW_KEYS:
            if name in names:
                res[name] = errors[key]
        if "aece" in names:
            cum = cum_count.astype(np.float64)
            cuts = [equal_mass_cuts(self.conf, self.n_bins, cum=row) for row in cum]
            res["aece"] = _range_errors(cums, np.stack(cuts))["l1"]
        if "ks" in names:
            res["ks"] = np.abs(cums[2][:, self.run_end]).max(axis=1) / total
        if "mmce" in names:
            res["mmce"] = mmce_from_sorted_batch(self.conf, signed, total, MMCE_WIDTH)
        return {name: res[name] for name in names if name in res}


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
    names: tuple[str, ...],
    n_draws: int,
    rng: np.random.Generator,
) -> dict[str, list[float]]:
    """Binned errors of ``n_draws`` perfectly calibrated outcome draws ``Bernoulli(conf)``.

    ``binnings`` holds the bin index and the outcome-free sums of the equal-width (``"ew"``)
    and equal-mass (``"em"``, for ``"aece"``) bins. A block of draws ``rng.random((b, N))``
    (the numbers of ``b`` calls ``rng.random(N)``) needs only its outcome sums per bin: one
    ``bincount`` over a (bin, draw) index, each bin adding its samples in sample order.
    """
    n = conf.shape[0]
    draws: dict[str, list[float]] = {name: [] for name in names}
    block = max(1, min(n_draws, (1 << 20) // max(n, 1)))
    for start in range(0, n_draws, block):
        b = min(block, n_draws - start)
        outcome = (rng.random((b, n)) < conf).astype(np.float64).reshape(-1)
        for scheme, (idx, st) in binnings.items():
            wanted = [name for name in names if (name == "aece") == (scheme == "em")]
            if not wanted:
                continue
            nb = st.counts.shape[0]
            flat = ((idx * b)[None, :] + np.arange(b)[:, None]).reshape(-1)
            acc = np.bincount(flat, weights=outcome, minlength=nb * b).astype(np.float64)
            errors = errors_from_sums(st.counts, st.confidence_sum, acc.reshape(nb, b).T)
            for name in wanted:
                draws[name] += errors[_FLOOR_KEYS[name]].tolist()
    return draws


def _range_errors(cums: tuple[np.ndarray, ...], cuts: np.ndarray) -> dict[str, F64]:
    """Binned errors of bins given as position ranges ``[cuts_k, cuts_k+1)``, row by row.

    ``cums`` are the inclusive prefix sums of the counts, the outcomes and the signed
    values (outcome minus confidence); a bin's sums are their differences at its ends.
    """
    before = np.maximum(cuts - 1, 0)
    at = [np.where(cuts > 0, np.take_along_axis(c, before, axis=1), 0) for c in cums]
    counts, acc_sum, signed_sum = (np.diff(a, axis=1).astype(np.float64) for a in at)
    return errors_from_sums(counts, acc_sum - signed_sum, acc_sum)
