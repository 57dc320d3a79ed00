"""Confidence intervals for a model's true binned calibration error (not for the estimator).

A percentile bootstrap interval of the plug-in ECE describes where the *estimator* falls
on resamples; near calibration that estimator is biased upwards by about the noise floor,
so the interval can lie wholly above the model's true error, and above its own estimate
(issue #43 measured 0% coverage of the truth at 1,000 and 5,000 samples for true errors up
to 1%). The intervals here are for the *estimand*: the population value of the binned error
of the model on the distribution the data were drawn from, for the same bins,

    ``ECE_1 = sum_b w_b |g_b|``  and  ``ECE_2 = sqrt(sum_b w_b g_b^2)``,

``w_b`` the probability of bin ``b`` and ``g_b = E[outcome - confidence | bin b]`` (for a
model whose miscalibration is constant within each bin, these are the true top-label L1 and
L2 calibration errors).

:func:`l2_ece_interval`, after Sun, Chaudhari, Barnett & Dobriban (2024), "A Confidence
Interval for the l2 Expected Calibration Error": in each bin the U-statistic
``U_b = sum_{i != j} u_i u_j / (n_b (n_b - 1))`` of ``u = outcome - confidence`` is unbiased
for ``g_b^2``, so ``T = sum_b (n_b / n) U_b`` is unbiased for ``ECE_2^2`` given the bin
counts (the same estimator as their ``T_mn``). Its variance has a first-order term
``sigma_1^2 / n`` with ``sigma_1^2 = sum_b w_b (4 g_b^2 m_b - 3 g_b^4) - (sum_b w_b g_b^2)^2``
(``m_b = E[u^2 | b]``; their CLT variance for a miscalibrated model, estimated by plug-in as
they do, which overstates it near calibration by up to 1.7x: conservative) that vanishes at
calibration, where the degenerate second-order term ``sum_b w_b^2 2 m_b^2 / (n_b (n_b - 1))``
(the variance of ``U_b`` when ``g_b = 0``) is what is left: both are estimated by plug-in
and added, so one normal interval ``T +- z se`` serves calibrated and miscalibrated models.
Its ends are truncated at 0 and square-rooted (the estimand is non-negative); the estimate
``sqrt(max(T, 0))`` lies inside by construction. No resampling: it costs one pass.

:func:`ece_interval`, for ``ECE_1``. The lower end is ``sum_b w_b max(0, |ĝ_b| - c s_b)``,
``ĝ_b`` a bin's mean of ``u`` and ``s_b`` its standard error (never below that of a
calibrated bin, ``sqrt(c_b (1 - c_b) / n_b)``, so that a small bin whose outcomes happen to
agree is not taken as exact), with ``c`` the Sidak constant that makes the bins'
``ĝ_b +- c s_b`` hold simultaneously with probability ``1 - alpha / 2`` (on that event every
term is at most ``w_b |g_b|``). The upper end is the smaller of two bounds, each holding
with probability ``1 - alpha / 4``: the L2 interval's one-sided upper end (``ECE_1 <=
ECE_2`` for every model, Jensen's inequality, the bin weights summing to 1: tight when the
gap is alike across bins, and near calibration), and the box ``sum_b w_b (|ĝ_b| + c' s_b)``
(Sidak at ``alpha / 4``: tight when the gaps are large and uneven). Each end errs with
probability at most ``alpha / 2``, so the interval covers ``ECE_1`` with probability at
least ``level`` (to the normal approximation of each bin's mean). Its estimate is the
plug-in ``|ĝ_b|`` with the folded-normal bias removed in each bin (the ``|g|`` at which
``E|N(g, s_b)|`` equals ``|ĝ_b|``, 0 below ``s_b sqrt(2 / pi)``), placed inside the
interval.

>>> rng = np.random.default_rng(0)
>>> conf = rng.uniform(0.5, 1.0, 20_000)
>>> correct = rng.uniform(size=20_000) < conf - 0.05  # overconfident by 5 points
>>> probs = np.stack([conf, 1 - conf], axis=1)
>>> labels = np.where(correct, 0, 1)
>>> ci = ece_interval(labels, probs=probs)
>>> bool(ci.low <= 0.05 <= ci.high), bool(ci.low <= ci.estimate <= ci.high)
(True, True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from calibkit.core.binning import Scheme, bin_index, check_n_bins
from calibkit.core.docs import fill_doc
from calibkit.core.errors import InputError
from calibkit.core.outputs import as_outputs
from calibkit.metrics.samples import F64, Mode, calibration_target


@dataclass(frozen=True)
class CalibrationInterval:
    """An estimate of a model's true binned calibration error and its confidence interval.

    Attributes
    ----------
    estimate : float
        The point estimate of ``estimand`` (inside ``[low, high]``).
    low, high : float
        The interval's ends (fractions, ``0 <= low <= high``).
    level : float
        Its confidence level.
    estimand : str
        What the interval is for, in words.
    method : str
        How it was computed.

    Examples
    --------
    >>> CalibrationInterval(0.02, 0.0, 0.04, 0.95, "ECE_2", "sun2024").high
    0.04
    """

    estimate: float
    low: float
    high: float
    level: float
    estimand: str
    method: str


def _normal_quantile(p: float) -> float:
    return NormalDist().inv_cdf(p)


#: ``erf`` elementwise over a few bins (no scipy: ``calibkit evaluate`` imports none of it).
_erf = np.vectorize(math.erf, otypes=[np.float64])


def _check_level(level: object) -> float:
    if isinstance(level, bool) or not isinstance(level, int | float) or not 0.0 < level < 1.0:
        raise InputError("level", "a number in (0, 1)", repr(level))
    return float(level)


@dataclass(frozen=True)
class _Bins:
    """Per-bin moments of ``u = outcome - confidence`` (non-empty bins only)."""

    n: int
    counts: F64  # n_b
    total: F64  # sum of u
    squares: F64  # sum of u^2
    conf: F64  # sum of the confidences


def _bins(
    labels: object, probs: object, logits: object, n_bins: int, scheme: Scheme, mode: Mode
) -> _Bins:
    out = as_outputs(labels, probs, logits=logits)
    conf, outcome = calibration_target(out, mode)
    idx, _, width = bin_index(conf, check_n_bins(n_bins), scheme=scheme)
    u = outcome - conf
    counts = np.bincount(idx, minlength=width).astype(np.float64)
    sums = [
        np.bincount(idx, weights=x, minlength=width).astype(np.float64) for x in (u, u * u, conf)
    ]
    keep = counts > 0
    return _Bins(int(conf.shape[0]), counts[keep], *(x[keep] for x in sums))


def _l2_moments(b: _Bins) -> tuple[float, float]:
    """``T`` (unbiased for ``ECE_2^2`` given the counts) and its standard error."""
    n, nb = float(b.n), b.counts
    pairs = nb * (nb - 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        u_stat = np.where(nb > 1, (b.total**2 - b.squares) / pairs, 0.0)  # unbiased for g_b^2
        mean = b.total / nb
        m2 = b.squares / nb
    w = nb / n
    t = float(np.sum(w * u_stat))
    # sigma_1^2 by plug-in, as Sun et al. estimate it: conservative near calibration (the
    # squared bin mean carries m_b / n_b more than g_b^2), which keeps the coverage where the
    # two terms are alike (reading g_b^2 as U_b instead covered 92% at n 5,000, gap 3%)
    first = float(np.sum(w * (4.0 * mean**2 * m2 - 3.0 * mean**4)) - np.sum(w * mean**2) ** 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        second = np.where(nb > 1, w**2 * 2.0 * m2**2 / pairs, 0.0)
    var = max(first, 0.0) / n + float(np.sum(second))
    return t, float(np.sqrt(var))


#: The Parameters section of :func:`ece_interval` and :func:`l2_ece_interval`.
_PARAMETERS = """Parameters
----------
labels, probs, logits
    The outputs, as for every metric.
n_bins, scheme, mode
    The binning (:mod:`calibkit.core.binning`) and what is binned.
level : float
    The confidence level."""


@fill_doc(parameters=_PARAMETERS)
def l2_ece_interval(
    labels: object,
    probs: object = None,
    *,
    logits: object = None,
    n_bins: int = 15,
    scheme: Scheme = "equal_width",
    mode: Mode = "top_label",
    level: float = 0.95,
) -> CalibrationInterval:
    """The true binned L2 calibration error ``ECE_2``: estimate and interval (Sun et al.
    2024; the module docstring).

    {parameters}

    Returns
    -------
    CalibrationInterval
        ``estimate = sqrt(max(T, 0))`` in ``[sqrt(max(T - z se, 0)), sqrt(max(T + z se, 0))]``.

    Examples
    --------
    >>> ci = l2_ece_interval([0, 1, 0, 1], probs=[[0.6, 0.4]] * 4, n_bins=1)
    >>> round(ci.estimate, 4), ci.low  # gap 0.1, T = 0.01 - 0.0467 < 0: estimate 0
    (0.0, 0.0)
    """
    level = _check_level(level)
    t, se = _l2_moments(_bins(labels, probs, logits, n_bins, scheme, mode))
    z = _normal_quantile(0.5 + level / 2.0)
    return CalibrationInterval(
        estimate=float(np.sqrt(max(t, 0.0))),
        low=float(np.sqrt(max(t - z * se, 0.0))),
        high=float(np.sqrt(max(t + z * se, 0.0))),
        level=level,
        estimand=f"the population {scheme.replace('_', '-')} {n_bins}-bin L2 calibration error",
        method="sun2024",
    )


def folded_normal_mean(gap: F64, scale: F64) -> F64:
    """``E|N(gap, scale^2)|``, elementwise (``gap >= 0``).

    >>> folded_normal_mean(np.array([0.0, 3.0]), np.array([1.0, 1e-9])).round(4).tolist()
    [0.7979, 3.0]
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(scale > 0, gap / scale, np.inf)
        tail = np.where(np.isfinite(r), scale * np.sqrt(2.0 / np.pi) * np.exp(-0.5 * r * r), 0.0)
    return np.asarray(tail + gap * _erf(r / np.sqrt(2.0)), dtype=np.float64)


def unfold(observed: F64, scale: F64, iterations: int = 60) -> F64:
    """The ``gap >= 0`` whose :func:`folded_normal_mean` is ``observed`` (0 where
    ``observed`` is below ``scale sqrt(2 / pi)``, the mean at 0); bisection, vectorised.

    >>> round(float(unfold(np.array([folded_normal_mean(np.array([0.3]), np.array([0.2]))[0]]),
    ...                    np.array([0.2]))[0]), 6)
    0.3
    """
    low, high = np.zeros_like(observed), np.asarray(observed, dtype=np.float64).copy()
    for _ in range(iterations):  # the mean grows with the gap, from scale sqrt(2/pi)
        mid = (low + high) / 2.0
        above = folded_normal_mean(mid, scale) > observed
        high = np.where(above, mid, high)
        low = np.where(above, low, mid)
    return (low + high) / 2.0


@fill_doc(parameters=_PARAMETERS)
def ece_interval(
    labels: object,
    probs: object = None,
    *,
    logits: object = None,
    n_bins: int = 15,
    scheme: Scheme = "equal_width",
    mode: Mode = "top_label",
    level: float = 0.95,
) -> CalibrationInterval:
    """The true binned L1 calibration error ``ECE_1`` (the ECE's estimand): a debiased
    estimate and an interval that holds near calibration too (the module docstring).

    {parameters}

    Returns
    -------
    CalibrationInterval
        The estimate and the interval.

    Examples
    --------
    >>> ci = ece_interval([0, 1] * 50, probs=[[0.5, 0.5]] * 100, n_bins=15)
    >>> ci.estimate, ci.low  # calibrated: nothing to tell apart from 0
    (0.0, 0.0)
    """
    level = _check_level(level)
    b = _bins(labels, probs, logits, n_bins, scheme, mode)
    mean, se = _bin_means(b)
    debiased = float(np.sum((b.counts / float(b.n)) * unfold(np.abs(mean), _unfold_scale(b, se))))
    return _ece_from_bins(b, mean, se, debiased, level, n_bins, scheme)


def _bin_means(b: _Bins) -> tuple[F64, F64]:
    """Each bin's mean of ``u`` and its standard error (never below a calibrated bin's,
    ``sqrt(c (1 - c) / n_b)``; infinite for a bin of one sample)."""
    nb = b.counts
    mean = b.total / nb
    with np.errstate(invalid="ignore", divide="ignore"):
        var = np.where(nb > 1, (b.squares - nb * mean**2) / (nb - 1.0), np.inf)
        # a small bin's sample variance can be 0 (every outcome alike): never below the
        # variance its outcomes would have were the bin calibrated, c (1 - c)
        conf = b.conf / nb
        se = np.sqrt(np.maximum(var, conf * (1.0 - conf)) / nb)
    return mean, se


def _unfold_scale(b: _Bins, se: F64) -> F64:
    """The scale :func:`unfold` takes per bin (0 for a bin of one sample: no debiasing)."""
    return np.where(b.counts > 1, se, 0.0)


def _ece_from_bins(
    b: _Bins, mean: F64, se: F64, debiased: float, level: float, n_bins: int, scheme: Scheme
) -> CalibrationInterval:
    """:func:`ece_interval` from a sample's bins (its debiased estimate computed)."""
    alpha = 1.0 - level
    _, upper = _l2_upper(b, 1.0 - alpha / 4.0)
    nb, w = b.counts, b.counts / float(b.n)
    c, c_upper = _sidak(int(nb.shape[0]), alpha / 2.0), _sidak(int(nb.shape[0]), alpha / 4.0)
    low = float(np.sum(w * np.maximum(np.abs(mean) - c * np.where(nb > 1, se, np.inf), 0.0)))
    # a bin of one sample: its gap is at most 1
    box = float(np.sum(w * np.where(nb > 1, np.minimum(np.abs(mean) + c_upper * se, 1.0), 1.0)))
    high = max(min(upper, box), low)
    return CalibrationInterval(
        estimate=min(max(debiased, low), high),
        low=low,
        high=high,
        level=level,
        estimand=f"the population {scheme.replace('_', '-')} {n_bins}-bin L1 calibration error",
        method="sidak-l2-bound",
    )


def group_ece_intervals(
    labels: object,
    probs: object = None,
    *,
    logits: object = None,
    codes: object,
    n_groups: int,
    n_bins: int = 15,
    mode: Mode = "top_label",
    levels: tuple[float, ...] = (0.95,),
) -> list[list[CalibrationInterval]]:
    """:func:`ece_interval` (equal-width bins) of every group's rows at each of ``levels``,
    in one pass: the numbers are those of ``ece_interval`` called on each group's rows
    (the same sums in the same order), at a fraction of the cost of one call per group
    and level (one binning, one ``np.bincount`` over group x bin, one :func:`unfold`).

    Parameters
    ----------
    labels, probs, logits
        The outputs, as for every metric.
    codes : array-like of int, shape (N,)
        Each row's group, ``0 .. n_groups - 1`` (every group holds a row).
    n_groups : int
        The number of groups.
    n_bins, mode
        The equal-width bins and what is binned.
    levels : tuple of float
        The confidence levels.

    Returns
    -------
    list of list of CalibrationInterval
        ``result[i][g]``: group ``g``'s interval at ``levels[i]``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> conf = rng.uniform(0.5, 1.0, 3_000)
    >>> probs = np.stack([conf, 1 - conf], axis=1)
    >>> labels = np.where(rng.uniform(size=3_000) < conf, 0, 1)
    >>> g = np.arange(3_000) % 3
    >>> each = group_ece_intervals(labels, probs=probs, codes=g, n_groups=3)[0]
    >>> each[1] == ece_interval(labels[g == 1], probs=probs[g == 1])
    True
    """
    levels = tuple(_check_level(x) for x in levels)
    out = as_outputs(labels, probs, logits=logits)
    grp = np.asarray(codes, dtype=np.int64).reshape(-1)
    if grp.shape[0] != out.n_samples or (grp.size and (grp.min() < 0 or grp.max() >= n_groups)):
        raise InputError("codes", f"one group in [0, {n_groups}) per row", f"{grp.shape[0]} rows")
    conf, outcome = calibration_target(out, mode)
    idx, _, width = bin_index(conf, check_n_bins(n_bins), scheme="equal_width")
    u = outcome - conf
    key = grp * width + idx
    size = n_groups * width
    # bincount adds each key's weights in the order of the rows: a group's bin sums are
    # the sums its own rows give (ece_interval on the group's rows)
    counts = np.bincount(key, minlength=size).reshape(n_groups, width)
    sums = [
        np.bincount(key, weights=x, minlength=size).astype(np.float64).reshape(n_groups, width)
        for x in (u, u * u, conf)
    ]
    bins = []
    for g in range(n_groups):
        keep = counts[g] > 0
        n = int(counts[g].sum())
        if n == 0:
            raise InputError("codes", f"every group in [0, {n_groups}) with a row", f"none in {g}")
        bins.append(_Bins(n, counts[g][keep].astype(np.float64), *(x[g][keep] for x in sums)))
    moments = [_bin_means(b) for b in bins]
    # unfold is elementwise: every group's bins in one call
    scale = np.concatenate([_unfold_scale(b, se) for b, (_, se) in zip(bins, moments, strict=True)])
    unfolded = unfold(np.abs(np.concatenate([m for m, _ in moments])), scale)
    ends = np.cumsum([0] + [b.counts.shape[0] for b in bins])
    debiased = [
        float(np.sum((b.counts / float(b.n)) * unfolded[ends[g] : ends[g + 1]]))
        for g, b in enumerate(bins)
    ]
    return [
        [
            _ece_from_bins(b, m, se, d, level, n_bins, "equal_width")
            for b, (m, se), d in zip(bins, moments, debiased, strict=True)
        ]
        for level in levels
    ]


def paired_interval(differences: object, *, level: float = 0.95) -> CalibrationInterval:
    """The population mean of per-sample paired ``differences`` (one method's loss minus
    another's on the same rows: an NLL or a Brier score is a mean of per-sample losses, so
    their difference is too): the mean and its Student-t interval
    (:func:`~calibkit.metrics.analytic.mean_interval`; no resampling). Compare's rows are
    maps fitted on the calibration part, so it is an interval of the difference of those
    fitted maps on the test part's distribution.

    >>> ci = paired_interval([0.1, -0.1, 0.3, 0.1])
    >>> round(ci.estimate, 4), round(ci.low, 4), round(ci.high, 4)
    (0.1, -0.1598, 0.3598)
    """
    from calibkit.metrics.analytic import mean_interval

    level = _check_level(level)
    d = np.asarray(differences, dtype=np.float64)
    if d.ndim != 1 or d.shape[0] < 2 or not np.all(np.isfinite(d)):
        raise InputError("differences", "at least 2 finite numbers in one row", f"{d.shape}")
    low, high = mean_interval(d, level)
    return CalibrationInterval(
        estimate=float(d.mean()),
        low=low,
        high=high,
        level=level,
        estimand="the population mean paired difference (Student-t interval)",
        method="student-t",
    )


def _sidak(bins: int, alpha: float) -> float:
    """The ``c`` for which ``bins`` independent normal means all lie within ``c`` standard
    errors of theirs with probability ``1 - alpha`` (Sidak)."""
    return _normal_quantile(0.5 + (1.0 - alpha) ** (1.0 / bins) / 2.0)


def _l2_upper(b: _Bins, one_sided: float) -> tuple[float, float]:
    """``T`` and the one-sided ``one_sided``-level upper bound of ``ECE_2``."""
    t, se = _l2_moments(b)
    return t, float(np.sqrt(max(t + _normal_quantile(one_sided) * se, 0.0)))
