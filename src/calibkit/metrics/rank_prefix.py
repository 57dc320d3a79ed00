"""The built-in ranking metrics of bootstrap replicates, from prefix sums in confidence order.

The bootstrap of :class:`~calibkit.metrics.suite.MetricSuite` keeps the samples in
ascending confidence (:class:`~calibkit.metrics.resampled.SortedSamples`) with the prefix
sums of each replicate's counts ``Pc`` and hits ``Ph`` at the end of every run of tied
confidences. The ranking metrics of :mod:`~calibkit.metrics.selective` read tie groups in
*decreasing* confidence: the weight ``C_r = T - Pc_{r-1}`` and the wrong weight
``E_r = W - Pw_{r-1}`` from the top down to run ``r`` (``Pw = Pc - Ph``, ``T`` and ``W``
the total and wrong weight). Their sums over the groups then reduce to three integer dot
products (``right_r``, ``wrong_r``: the run's correct and wrong weight)::

    X = sum_r right_r Pw_{r-1},   Y = sum_r wrong_r^2,   Z = sum_r right_r wrong_r
    sum_r right_r E_r = H W - X,  sum_r count_r E_r = W T - X - (W^2 - Y) / 2

(``sum_r wrong_r Pw_{r-1} = (W^2 - Y) / 2``), all exact in int64: failure AUROC, AUGRC and
the risk and coverage points equal the functions of :mod:`~calibkit.metrics.selective` on
the same counts exactly; AURC and E-AURC (a float sum of the risks in another order) to
rounding. :func:`prefix_functions` says which registered functions this covers; any other
ranking metric is computed from :meth:`~calibkit.metrics.resampled.SortedSamples.rank_sums`.

>>> counts, right = np.array([[1, 1, 1]]), np.array([[0, 1, 1]])  # wrong, right, right
>>> pc, ph = np.cumsum(counts, axis=1), np.cumsum(right, axis=1)
>>> r = PrefixRanks(pc, ph, counts, right, counts.astype(float), np.arange(3), Work())
>>> float(r.auroc()[0]), float(r.aurc()[0])  # the wrong one ranked last: (0 + 0 + 1/3) / 3
(1.0, 0.1111111111111111)
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property

import numpy as np

from calibkit.metrics.samples import F64
from calibkit.metrics.selective import (
    DEFAULT_COVERAGE,
    DEFAULT_RISK,
    Work,
    augrc_of,
    aurc_of,
    auroc_of,
    cov_at_risk5_of,
    digamma,
    eaurc_of,
    risk_at_cov80_of,
)


def _rowdot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise dot products (exact in int64 for integer arrays)."""
    d: np.ndarray = np.einsum("ij,ij->i", a, b)
    return d


TieGroups = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def tie_groups(first: np.ndarray) -> TieGroups:
    """The groups of several tied samples, from the first position of each sample's run:
    the samples after their group's first and that first; every tied sample; the first and
    the last sample of each group.

    >>> [g.tolist() for g in tie_groups(np.array([0, 1, 1, 1, 4, 5, 5]))]
    [[2, 3, 6], [1, 1, 5], [1, 2, 3, 5, 6], [1, 5], [3, 6]]
    """
    n = first.shape[0]
    inner = np.flatnonzero(first < np.arange(n))
    group_first = np.unique(first[inner])
    group_last = np.searchsorted(first, group_first, side="right") - 1
    tied = np.flatnonzero(np.isin(first, group_first))
    return inner, first[inner], tied, group_first, group_last.astype(np.int64)


class PrefixRanks:
    """The ranking metrics of a block of replicates from its per-sample prefix sums.

    Everything is computed per sample (a run of ``m`` tied samples as ``m`` runs of one),
    then corrected on the few tied samples: a tie group's risk is that at its first sample,
    and the group sums ``X``, ``Y``, ``Z`` gain their terms between samples of one group.

    Parameters
    ----------
    pc, ph : ndarray of shape (B, N), int64
        Inclusive prefix sums of the counts and of the counts of correct predictions, in
        ascending confidence.
    counts, right : ndarray of shape (B, N), int64
        The counts, and the counts of the correct predictions (0 for the wrong ones).
    counts_float : ndarray of shape (B, N)
        The counts as float64.
    first : ndarray of shape (N,), int64
        The first position of each sample's run of tied confidences
        (:func:`~calibkit.core.binning.tie_runs`).
    work : Work
        Work arrays kept from block to block.
    groups : tuple of ndarray, optional
        :func:`tie_groups` of ``first`` when the caller has them.
    """

    def __init__(
        self,
        pc: np.ndarray,
        ph: np.ndarray,
        counts: np.ndarray,
        right: np.ndarray,
        counts_float: F64,
        first: np.ndarray,
        work: Work,
        groups: TieGroups | None = None,
    ) -> None:
        self.pc, self.ph, self.counts, self.right, self.wf = pc, ph, counts, right, counts_float
        self.first, self.work = first, work
        self.b, self.n = pc.shape
        self.t_int, self.h_int = pc[:, -1], ph[:, -1]
        self.w_int = self.t_int - self.h_int
        self.total = self.t_int.astype(np.float64)
        self.inner, self.inner_first, self.tied, self.group_first, self.group_last = (
            tie_groups(first) if groups is None else groups
        )

    def _buf(self, name: str, dtype: type) -> np.ndarray:
        return self.work("prefix_" + name, (self.b, self.n), dtype)

    def _before(self, p: np.ndarray, pos: np.ndarray) -> np.ndarray:
        """``p`` at ``pos - 1`` (0 where ``pos`` is 0), shape ``(B, len(pos))``."""
        at = p[:, np.maximum(pos - 1, 0)]
        at[:, pos == 0] = 0
        return at

    @cached_property
    def pw(self) -> np.ndarray:
        """Prefix sums of the wrong weight."""
        pw: np.ndarray = np.subtract(self.pc, self.ph, out=self._buf("pw", np.int64))
        return pw

    @cached_property
    def xyz(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``X``, ``Y`` and ``Z`` of the tie groups (see the module docstring), int64."""
        wrong = np.subtract(self.counts, self.right, out=self._buf("wrong", np.int64))
        x = _rowdot(self.right[:, 1:], self.pw[:, :-1])
        y = _rowdot(wrong, wrong)
        z = np.zeros(self.b, dtype=np.int64)  # a sample is right or wrong
        if self.inner.size:  # the terms between samples of one group
            pw, ph = self.pw, self.ph
            gap = pw[:, self.inner - 1] - self._before(pw, self.inner_first)
            x -= _rowdot(self.right[:, self.inner], gap)
            wrong_g = pw[:, self.group_last] - self._before(pw, self.group_first)
            right_g = ph[:, self.group_last] - self._before(ph, self.group_first)
            tied_wrong = wrong[:, self.tied]
            y += _rowdot(wrong_g, wrong_g) - _rowdot(tied_wrong, tied_wrong)
            z = _rowdot(right_g, wrong_g)
        return x, y, z

    def cum_before(self, p: np.ndarray, top: np.ndarray, out: F64) -> F64:
        """``top - p_{i-1}`` for every sample ``i`` (``top`` for the first), as float64."""
        out[:, 0] = top
        np.subtract(top[:, None], p[:, :-1], out=out[:, 1:])
        return out

    @cached_property
    def cum(self) -> F64:
        """``C_i``: the weight from the top down to sample ``i``, float64."""
        return self.cum_before(self.pc, self.t_int, self._buf("c", np.float64))

    @cached_property
    def risk(self) -> F64:
        """``E / max(C, 1)``: the selective risk down to each sample's group."""
        e = self.cum_before(self.pw, self.w_int, self._buf("risk", np.float64))
        risk: F64 = np.divide(e, np.maximum(self.cum, 1.0, out=self._buf("den", np.float64)), out=e)
        risk[:, self.inner] = risk[:, self.inner_first]  # a group enters whole
        return risk

    def auroc(self) -> F64:
        x, _, z = self.xyz
        neg = self.w_int.astype(np.float64)
        pos = self.total - neg
        pairs = pos * neg - (self.h_int * self.w_int - x).astype(np.float64) + 0.5 * z
        den = pos * neg
        auc: F64 = np.divide(pairs, den, out=np.full_like(den, np.nan), where=den > 0)
        return auc

    @cached_property
    def _aurc(self) -> F64:
        return np.asarray(np.einsum("ij,ij->i", self.wf, self.risk) / self.total, dtype=np.float64)

    def aurc(self) -> F64:
        return self._aurc

    def eaurc(self) -> F64:
        total, wrong = self.total, self.w_int.astype(np.float64)
        right = np.maximum(total - wrong, 0.0)
        harmonic = digamma(total + 1.0) - digamma(right + 1.0)
        optimal = (wrong - right * harmonic) / total
        return np.asarray(np.maximum(self._aurc - optimal, 0.0), dtype=np.float64)

    def augrc(self) -> F64:
        x, y, z = self.xyz
        t, w = self.t_int, self.w_int
        twice = 2.0 * (w * t - x - (w * w - y) // 2).astype(np.float64) - (y + z).astype(np.float64)
        return np.asarray(twice / (2.0 * self.total * self.total), dtype=np.float64)

    def risk_at_coverage(self, coverage: float = DEFAULT_COVERAGE) -> F64:
        """The risk of the last group whose ``C / T >= coverage`` (the smallest such
        coverage, as :func:`~calibkit.metrics.selective.risk_at_coverage_of` finds it).

        ``C_r = T - Pc_{r-1}`` falls with ``r`` and the rounded test ``m / T >= coverage``
        holds from some integer ``m`` on (:func:`_least_weight`): the run is found by one
        binary search per row for ``Pc_{r-1} <= T - m``, then its group's first sample.
        """
        rows, t = np.arange(self.b), self.t_int
        limit = t - _least_weight(self.total, coverage)
        # r: how many r' in [1, n - 1] pass, i.e. how many of Pc_0 .. Pc_{n-2} are <= limit
        r = np.array(
            [np.searchsorted(self.pc[i, : self.n - 1], limit[i], side="right") for i in rows],
            dtype=np.int64,
        ).reshape(self.b)
        r = self.first[r]  # its group
        before = r > 0
        at = np.maximum(r - 1, 0)
        pc_at = np.where(before, self.pc[rows, at], 0)
        cum = t - pc_at
        wrong = self.w_int - (pc_at - np.where(before, self.ph[rows, at], 0))  # no whole pw
        with np.errstate(divide="ignore", invalid="ignore"):  # an empty row: NaN
            return np.asarray(wrong / cum.astype(np.float64), dtype=np.float64)

    def coverage_at_risk(self, risk: float = DEFAULT_RISK) -> F64:
        """The largest coverage ``C / T`` whose selective risk ``E / max(C, 1)`` is at most
        ``risk`` (0.0 where none is), without the risk of every sample.

        ``C`` falls with the position, so the answer is the first position that passes (a
        tied sample's risk is its group's first's, which comes before it: only the samples
        that start a run need testing). ``E`` falls too, so over a chunk of positions
        ``[a, b]`` every risk is at least ``E_b / max(C_a, 1)`` (as rounded floats too: the
        division rounds monotonically): the chunks whose bound exceeds ``risk`` are skipped,
        and the risks are computed in the first chunks that remain, until one passes.
        """
        n, b = self.n, self.b
        step = _CHUNK
        a = np.arange(0, n, step)  # the chunks' first positions
        last = np.minimum(a + step - 1, n - 1)
        c_first = self.t_int[:, None] - self._before(self.pc, a)  # C at each chunk's start
        e_last = self.w_int[:, None] - (self._before(self.pc, last) - self._before(self.ph, last))
        with np.errstate(divide="ignore", invalid="ignore"):
            bound = e_last / np.maximum(c_first, 1).astype(np.float64)
        open_ = bound <= risk
        starts = self.first == np.arange(n)  # the samples that start a run
        out = np.zeros(b)
        # every searching row's next open chunk at once, until each passes or has none left
        rows = np.flatnonzero(open_.any(axis=1))
        while rows.size:
            k = np.argmax(open_[rows], axis=1)
            found, cum, first = self._chunk_risks(rows, a[k], last[k], starts, risk)
            done = rows[found]
            out[done] = cum[found, first[found]] / self.total[done]
            open_[rows, k] = False
            rows = rows[~found]
            rows = rows[open_[rows].any(axis=1)]
        return out

    def _chunk_risks(
        self, rows: np.ndarray, lo: np.ndarray, hi: np.ndarray, starts: np.ndarray, risk: float
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For each row in ``rows``, the positions ``lo .. hi`` (one chunk each, at most
        :data:`_CHUNK`): whether one that starts a run has a risk ``<= risk``, the weight
        ``C`` at each position, and the first that passes."""
        pos = lo[:, None] + np.arange(_CHUNK)[None, :]
        inside = pos <= hi[:, None]
        pos = np.minimum(pos, self.n - 1)
        before = np.maximum(pos - 1, 0)
        at = rows[:, None]
        pc = np.where(pos > 0, self.pc[at, before], 0)
        cum = self.t_int[rows, None] - pc
        wrong = self.w_int[rows, None] - (pc - np.where(pos > 0, self.ph[at, before], 0))
        ok = inside & starts[pos] & (wrong / np.maximum(cum, 1).astype(np.float64) <= risk)
        return ok.any(axis=1), cum, np.argmax(ok, axis=1)


#: Positions per chunk of :meth:`PrefixRanks.coverage_at_risk`'s bounds.
_CHUNK = 256


def _least_weight(total: F64, coverage: float) -> np.ndarray:
    """The least integer ``m >= 0`` with ``m / total >= coverage`` in float64 (the quotient
    rounds monotonically in ``m``), for each total; ``total + 1`` where none is ``<= total``.

    >>> _least_weight(np.array([10.0, 3.0, 5.0]), 0.7).tolist()
    [7, 3, 4]
    """
    m = np.clip(np.ceil(coverage * total), 0, total + 1).astype(np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return _rounding_steps(m, total, coverage)


def _rounding_steps(m: np.ndarray, total: F64, coverage: float) -> np.ndarray:
    """:func:`_least_weight` from a guess ``m``: a step or two either way."""
    for _ in range(64):
        down = (m > 0) & ((m - 1) / total >= coverage)
        up = ~down & (m <= total) & (m / total < coverage)
        if not (down.any() or up.any()):
            break
        m = m - down + up
    return m


def prefix_functions() -> dict[Callable[..., F64], Callable[[PrefixRanks], F64]]:
    """The registered ranking functions that :class:`PrefixRanks` computes, and how."""
    return {
        auroc_of: PrefixRanks.auroc,
        aurc_of: PrefixRanks.aurc,
        eaurc_of: PrefixRanks.eaurc,
        augrc_of: PrefixRanks.augrc,
        risk_at_cov80_of: PrefixRanks.risk_at_coverage,
        cov_at_risk5_of: PrefixRanks.coverage_at_risk,
    }
