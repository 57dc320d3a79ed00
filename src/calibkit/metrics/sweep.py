"""ECE_sweep (Roelofs, Cain, Shlens & Mozer, "Mitigating Bias in Calibration Error
Estimation", AISTATS 2022): the ECE over as many equal-mass bins as keep the bins'
accuracies rising.

The sweep sorts the confidences and, for ``b = 1, 2, ...``, cuts them into ``b`` equal-mass
bins (:func:`calibkit.core.binning.equal_mass_cuts`: ties never split, so a bin may stay
empty; the authors' code cuts at the ceiling of ``k N / b`` and splits ties, calibkit at the
nearer sample boundary). It stops at the first ``b`` whose non-empty bins' accuracies are
not non-decreasing and keeps ``b - 1`` (``N``, the number of samples, if none breaks):
``b* = max{b <= N : every b' <= b gives rising accuracies}``, the paper's definition and
the authors' ``em_ece_sweep``. The paper's ``ECE_sweep`` is this equal-mass sweep (its
equal-width variant, ``ew_ece_sweep`` in the code, is not reported as ECE_sweep). The
error at ``b*`` is the L1 ECE by default, as calibkit's other binned errors (the paper's
figures use ``norm="l2"``, its code's default). The paper's claim: less biased than the ECE
of a fixed number of bins, which overstates a calibrated model's error at small ``N``.

Each ``b`` costs ``O(b log N)`` (its cuts) and ``O(b)`` (its bins' sums, differences of
prefix sums), so the sweep costs ``O(b*^2 log N)`` after one sort. Where the accuracies of
the runs of tied confidences already rise (every prediction right, say), every ``b`` rises
and ``b* = N`` is taken without sweeping. With ``sample_weight``, the weights are divided
by their smallest positive one first: equal weights, or whole multiples of one, then sum
exactly, as counts do, so equal accuracies compare equal.

>>> conf = [0.6, 0.7, 0.8, 0.9]
>>> probs = [[1 - c, c] for c in conf]  # every prediction right: the accuracies rise
>>> sweep_bins([1, 1, 1, 1], probs), round(ece_sweep([1, 1, 1, 1], probs), 4)  # mean(1 - c)
(4, 0.25)
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from calibkit.core.binning import I64, BinStats, equal_mass_cuts, equal_mass_edges
from calibkit.core.docs import fill_doc
from calibkit.core.errors import InputError
from calibkit.core.outputs import as_outputs
from calibkit.metrics.bin_errors import error_from_stats
from calibkit.metrics.samples import F64, Mode, calibration_target, check_weight

SweepNorm = Literal["l1", "l2"]


def _unit(weight: F64) -> float:
    """The smallest positive weight (the largest where dividing by it would overflow)."""
    low = float(weight[weight > 0].min())
    return low if np.isfinite(weight.sum() / low) else float(weight.max())


class _Sorted:
    """The confidences in increasing order with the prefix sums of each bin's sums."""

    def __init__(self, conf: F64, outcome: F64, weight: F64 | None) -> None:
        order = np.argsort(conf, kind="stable")
        self.conf = conf[order]
        n = self.conf.shape[0]
        w = np.ones(n) if weight is None else weight[order] / _unit(weight)
        self.cum = np.cumsum(w)
        right = w * outcome[order]

        def prefix(x: F64) -> F64:
            return np.concatenate([[0.0], np.cumsum(x)])

        # a bin's right and wrong weight apart: a bin of right (wrong) answers only has a
        # wrong (right) sum of exactly 0, so its accuracy is exactly 1 (0)
        self.right, self.wrong, self.conf_sum = (
            prefix(right),
            prefix(w - right),
            prefix(w * self.conf),
        )

    def stats(self, cuts: I64) -> BinStats:
        """The bins' sums between ``cuts`` (positions in the sorted order)."""
        lo, hi = cuts[:-1], cuts[1:]
        right = self.right[hi] - self.right[lo]
        counts = right + (self.wrong[hi] - self.wrong[lo])
        conf_sum = self.conf_sum[hi] - self.conf_sum[lo]
        return BinStats(equal_mass_edges(self.conf, cuts), counts, conf_sum, right)

    def bins(self, b: int) -> BinStats:
        """The ``b`` equal-mass bins (calibkit's cuts)."""
        return self.stats(equal_mass_cuts(self.conf, b, cum=self.cum))

    def runs(self) -> BinStats:
        """The finest bins any cut gives: the runs of tied confidences."""
        new = np.flatnonzero(np.diff(self.conf)) + 1
        return self.stats(np.concatenate([[0], new, [self.conf.shape[0]]]))


def _rising(stats: BinStats) -> bool:
    """Whether the non-empty bins' accuracies never decrease."""
    keep = stats.counts > 0
    accuracy = stats.accuracy_sum[keep] / stats.counts[keep]
    return bool(np.all(np.diff(accuracy) >= 0))


def _sweep(
    labels: object,
    probs: object,
    logits: object,
    mode: Mode,
    sample_weight: object,
) -> BinStats:
    """The bins of the largest ``b`` before the first that breaks the rise."""
    out = as_outputs(labels, probs, logits=logits)
    conf, outcome = calibration_target(out, mode)
    data = _Sorted(conf, outcome, check_weight(sample_weight, out.n_samples))
    n = out.n_samples
    if _rising(data.runs()):  # every b rises: b* = N
        return data.bins(n)
    best = data.bins(1)
    for b in range(2, n + 1):
        stats = data.bins(b)
        if not _rising(stats):
            break
        best = stats
    return best


#: The Parameters section of :func:`sweep_bins` and :func:`ece_sweep`.
_PARAMETERS = """Parameters
----------
labels, probs, logits, sample_weight
    The outputs, as for every metric.
mode : {"top_label", "positive_class"}
    What is binned (see :mod:`calibkit.core.binning`)."""


@fill_doc(parameters=_PARAMETERS)
def sweep_bins(
    labels: object,
    probs: object = None,
    *,
    logits: object = None,
    mode: Mode = "top_label",
    sample_weight: object = None,
) -> int:
    """The number of equal-mass bins :func:`ece_sweep` chooses, ``b*`` (module docstring).

    {parameters}

    Returns
    -------
    int
        ``b*``, from 1 to the number of samples (some bins may be empty where ties are).

    Examples
    --------
    >>> sweep_bins([1, 0], probs=[[0.2, 0.8], [0.4, 0.6]])  # right at 0.8, wrong at 0.6
    2
    """
    return _sweep(labels, probs, logits, mode, sample_weight).n_bins


@fill_doc(parameters=_PARAMETERS)
def ece_sweep(
    labels: object,
    probs: object = None,
    *,
    logits: object = None,
    mode: Mode = "top_label",
    norm: SweepNorm = "l1",
    sample_weight: object = None,
) -> float:
    """ECE_sweep (Roelofs et al. 2022): the ECE over the most equal-mass bins whose
    accuracies still rise (the module docstring says how ``b*`` is chosen).

    {parameters}
    norm : {"l1", "l2"}
        ``sum_b w_b |acc_b - conf_b|`` (the ECE) or ``sqrt(sum_b w_b (acc_b - conf_b)^2)``
        (the paper's figures) over the ``b*`` bins.

    Returns
    -------
    float
        The error, a fraction in [0, 1].

    Examples
    --------
    >>> round(ece_sweep([1, 0], probs=[[0.2, 0.8], [0.4, 0.6]]), 4)  # 2 bins: (0.2 + 0.6) / 2
    0.4
    """
    if norm not in ("l1", "l2"):
        raise InputError("norm", "'l1' or 'l2'", repr(norm))
    return error_from_stats(_sweep(labels, probs, logits, mode, sample_weight), norm)
