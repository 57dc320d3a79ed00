"""Exact population values of what calibkit estimates, for a declared simulation.

Every value is a function of the declarations of a
:class:`~calibkit.metrics.simulated_model.SimulationModel` (never of a sample), computed by
deterministic quadrature: one adaptive Gauss-Kronrod (7-15) integration over the
probability scale ``u = P(conf <= c)`` of the confidence law (``c = F^-1(u)``: the
integrands are bounded whatever the Beta shape, even a density infinite at an end), cut
at every point where an integrand is not smooth (the bin edges, the maps' clipping points,
the roots of ``c - P(correct | c)``, the kinks of the other classes' bins), the pieces of
largest error estimate halved until the estimates sum to at most ``1e-12``
(:mod:`~calibkit.metrics.simulated_quadrature`). So every value is exact to about
``1e-12`` (the tests compare each with brute-force integration written apart).

With ``f`` the true ``P(correct | c)`` and ``B`` bins:

- ``true_ece = E|c - f(c)|`` and ``true_rmsce = sqrt(E[(c - f(c))^2])`` (bin-free);
- ``ece``, ``rmsce``, ``mce``: the l1, l2 and max norms
  (:func:`~calibkit.metrics.bin_errors.errors_from_sums`) of the population bin sums
  ``P(bin)``, ``E[c; bin]``, ``P(correct; bin)`` of calibkit's equal-width bins
  ``[k/B, (k+1)/B)`` (``bins``); ``aece`` the l1 norm of equal-mass bins, whose edges are the
  population quantiles ``F^-1(k/B)`` (``mass_bins``);
- ``ks = sup_t |E[(f(c) - c) 1{c <= t}]|``;
- ``sce``: ``1/K sum_k sum_b |E[(1{y = k} - p_k) 1{p_k in bin b}]|``. For class ``k``, the
  term is ``P(m = k) E[(f_k(c) - c) 1{c in b}]`` (``k`` predicted) plus, for each other
  predicted class ``m``, ``P(m) E[(c - f_m(c)) d_k 1{(1 - c) d_k in b}]``, since
  ``P(y = k | x) - p_k = (c - f_m(c)) d_k`` there. ``d_k = (1 - lam) D_k + lam / (K - 1)``
  with ``D_k ~ Beta(alpha, (K - 2) alpha)``, so the inner expectation over ``D_k`` is
  closed-form (regularised incomplete Beta functions) and only ``c`` is integrated
  (``classwise`` holds the signed terms, shape ``(K, B)``);
- per group: its accuracy, ``true_ece`` and binned ``ece``, and the worst-group gaps
  (largest minus smallest), as :func:`~calibkit.metrics.groups.evaluate_groups` reports.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from calibkit.core.binning import BinStats, equal_width_index
from calibkit.metrics.bin_errors import errors_from_sums
from calibkit.metrics.simulated_model import F64, SimulationModel, mixing
from calibkit.metrics.simulated_quadrature import integrate_pieces, sign_changes


class _Integrand:
    """What is integrated over ``u``, as columns: ``c``, ``f(c)``, ``|c - f|``,
    ``(c - f)^2``, each map's ``f_x`` and ``|c - f_x|``, and the other classes' terms
    ``(c - f_x(c)) E[d 1{(1 - c) d in bin}]`` of each map needing them (K > 2)."""

    def __init__(self, model: SimulationModel, n_bins: int) -> None:
        self.model, self.n_bins = model, n_bins
        self.n_maps = len(model.maps)
        self.edges = np.arange(n_bins + 1, dtype=np.float64) / n_bins
        k = model.n_classes
        #: the maps whose other-class terms the SCE needs (a class-wise model: each map)
        self.n_other = (self.n_maps if model.class_maps else 1) if k > 2 else 0
        self.fx = slice(4, 4 + self.n_maps)
        self.absx = slice(4 + self.n_maps, 4 + 2 * self.n_maps)
        self.other = slice(4 + 2 * self.n_maps, 4 + 2 * self.n_maps + self.n_other * n_bins)

    def share_in_bins(self, c: F64, c_not: F64) -> F64:
        """``E[d_k 1{(1 - c) d_k in bin b}]`` over ``D_k``, shape ``(m, B)`` (``c_not = 1 - c``)."""
        from scipy.special import betainc  # D_k's Beta distribution function

        k, alpha = self.model.n_classes, self.model.concentration
        v = 1.0 / (k - 1)
        lam = mixing(c, k)
        shift, scale = lam * v, 1.0 - lam
        with np.errstate(divide="ignore", invalid="ignore"):
            t = self.edges[None, :] / np.maximum(c_not, 1e-300)[:, None] - shift[:, None]
            t = t / scale[:, None]
        t = np.clip(np.nan_to_num(t, nan=0.0, posinf=1.0, neginf=0.0), 0.0, 1.0)
        below = np.diff(betainc(alpha, (k - 2) * alpha, t), axis=1)
        mean_below = np.diff(betainc(alpha + 1.0, (k - 2) * alpha, t), axis=1)
        return np.asarray(shift[:, None] * below + (scale * v)[:, None] * mean_below)

    def __call__(self, u: F64) -> F64:
        c, c_not = self.model.law.quantile_pair(u)
        each = np.stack([f(c, c_not) for f in self.model.maps], axis=1)
        pooled = each @ np.asarray(self.model.weights)
        cols = [
            c[:, None],
            pooled[:, None],
            np.abs(c - pooled)[:, None],
            (c - pooled)[:, None] ** 2,
        ]
        cols += [each, np.abs(c[:, None] - each)]
        if self.n_other:
            gaps = c[:, None] - (each if self.model.class_maps else pooled[:, None])
            share = self.share_in_bins(c, c_not)
            cols.append((gaps[:, :, None] * share[:, None, :]).reshape(c.shape[0], -1))
        return np.concatenate(cols, axis=1)


def breakpoints(model: SimulationModel, n_bins: int) -> F64:
    """The pieces' ends on the probability scale for ``model`` and ``n_bins`` bins: where an
    integrand is not smooth.

    Returns
    -------
    ndarray
        Sorted points from 0 to 1: the bin edges (equal width: ``F(k/B)``; equal mass:
        ``k/B``), the maps' kinks, the roots of ``c - f(c)`` (of each group's map too), and
        where the other classes' probability ranges meet a bin edge.

    Examples
    --------
    >>> from calibkit.metrics.simulated_model import CalibrationMap, ConfidenceLaw
    >>> m = SimulationModel(2, ConfidenceLaw(0.5, 1.0), (CalibrationMap("affine", (-0.1, 1)),))
    >>> breakpoints(m, 2).tolist()
    [0.0, 0.5, 1.0]
    """
    law, k = model.law, model.n_classes
    e = np.arange(n_bins + 1, dtype=np.float64) / n_bins
    known = [law.low, law.high, *e, *(1.0 - e)]
    for f in model.maps:
        known += f.kinks()
    if k > 2:  # the other classes' range [(1 - 2c) v / (1 - v), min(c, 1 - c)] meets an edge
        v = 1.0 / (k - 1)
        known += [*((1.0 - e * (1.0 - v) / v) / 2.0), 0.5]
    c = np.unique(np.clip(known, law.low, law.high))
    roots = [sign_changes(lambda x: x - model.p_correct(x), c)]
    if model.groups:
        roots += [sign_changes(lambda x, f=f: x - f(x), c) for f in model.maps]  # type: ignore[misc]
    c = np.unique(np.concatenate([c, *roots]))
    return np.unique(np.concatenate([law.cdf(c), e, [0.0, 1.0]]))


@dataclass(frozen=True)
class SimulationTruth:
    """The exact population value of what calibkit estimates, for one binning.

    ``values`` keys them by calibkit's metric names, so a truth sits beside an estimate:
    ``evaluate(...).values[name]`` and its interval ``ci[name]``.

    Attributes
    ----------
    n_bins : int
        The bins of the binned values.
    accuracy, confidence : float
        ``P(correct)`` and ``E[c]``.
    true_ece, true_rmsce : float
        Bin-free top-label errors ``E|c - f(c)|`` and ``sqrt(E[(c - f(c))^2])``.
    ece, rmsce, mce : float
        Equal-width binned population errors (l1, l2, max over bins holding mass).
    aece : float
        Equal-mass binned population error (edges: the population quantiles).
    sce : float
        Class-wise (static) binned population error.
    ks : float
        Population KS error, ``sup_t |E[(f(c) - c) 1{c <= t}]|``.
    bins, mass_bins : BinStats
        The population bin sums (weights summing to 1) of both binnings.
    classwise : ndarray of shape (K, n_bins)
        Signed ``E[(1{y = k} - p_k) 1{p_k in bin b}]``; ``sce = |classwise|.sum() / K``.
    group_accuracy, group_true_ece, group_ece : tuple of float
        Per group (empty without groups).
    group_gap, group_true_gap : float or None
        Largest minus smallest ``group_ece`` (what ``evaluate_groups`` calls the gap) and
        ``group_true_ece`` (None without groups).
    model : SimulationModel
        The declarations these values are of.

    Examples
    --------
    >>> from calibkit.metrics.simulated_model import CalibrationMap, ConfidenceLaw
    >>> over = CalibrationMap("affine", (-0.1, 1.0))  # P(correct | c) = c - 0.1
    >>> t = population_truth(SimulationModel(2, ConfidenceLaw(0.5, 1.0), (over,)), 10)
    >>> round(t.true_ece, 12), round(t.ece, 12), round(t.accuracy, 12)
    (0.1, 0.1, 0.65)
    """

    n_bins: int
    accuracy: float
    confidence: float
    true_ece: float
    true_rmsce: float
    ece: float
    rmsce: float
    mce: float
    aece: float
    sce: float
    ks: float
    bins: BinStats
    mass_bins: BinStats
    classwise: F64
    group_accuracy: tuple[float, ...]
    group_true_ece: tuple[float, ...]
    group_ece: tuple[float, ...]
    group_gap: float | None
    group_true_gap: float | None
    model: SimulationModel

    @property
    def values(self) -> dict[str, float]:
        """The values under calibkit's metric names (``ece_debiased`` estimates ``rmsce``)."""
        names = ("accuracy", "confidence", "ece", "aece", "mce", "rmsce", "sce", "ks")
        return {**{n: float(getattr(self, n)) for n in names}, "ece_debiased": self.rmsce}

    def p_correct(self, conf: object, group: int | None = None) -> F64:
        """The true ``P(correct | top-label confidence)`` of the declarations (of one group,
        given one): :meth:`~calibkit.metrics.simulated_model.SimulationModel.p_correct`."""
        return self.model.p_correct(conf, group)


@functools.lru_cache(maxsize=64)
def population_truth(model: SimulationModel, n_bins: int) -> SimulationTruth:
    """Every population value of ``model`` with ``n_bins`` bins (module docstring); cached:
    the same declarations give the same object."""
    cols = _Integrand(model, n_bins)
    points = breakpoints(model, n_bins)
    pieces = integrate_pieces(cols, points)
    u_mid = (points[:-1] + points[1:]) / 2
    c_mid = model.law.quantile(u_mid)
    mass = np.diff(points)
    width_bin = equal_width_index(c_mid, n_bins)
    mass_bin = np.minimum((u_mid * n_bins).astype(np.int64), n_bins - 1)

    def per_bin(index: np.ndarray, col: F64) -> F64:
        return np.bincount(index, weights=col, minlength=n_bins).astype(np.float64)

    bins, mass_bins = (
        BinStats(edges, per_bin(i, mass), per_bin(i, pieces[:, 0]), per_bin(i, pieces[:, 1]))
        for i, edges in [(width_bin, cols.edges), (mass_bin, model.law.quantile(cols.edges))]
    )
    norms = errors_from_sums(bins.counts, bins.confidence_sum, bins.accuracy_sum)
    mass_norms = errors_from_sums(
        mass_bins.counts, mass_bins.confidence_sum, mass_bins.accuracy_sum
    )
    drift = np.concatenate([[0.0], np.cumsum(pieces[:, 1] - pieces[:, 0])])
    classwise = _classwise(model, cols, pieces, width_bin, c_mid)
    g_accuracy, g_true, g_ece = _groups(model, cols, pieces, width_bin, per_bin)
    return SimulationTruth(
        n_bins=n_bins,
        accuracy=float(pieces[:, 1].sum()),
        confidence=float(pieces[:, 0].sum()),
        true_ece=float(pieces[:, 2].sum()),
        true_rmsce=float(np.sqrt(max(pieces[:, 3].sum(), 0.0))),
        ece=float(norms["l1"]),
        rmsce=float(norms["l2"]),
        mce=float(norms["max"]),
        aece=float(mass_norms["l1"]),
        sce=float(np.abs(classwise).sum() / model.n_classes),
        ks=float(np.abs(drift).max()),
        bins=bins,
        mass_bins=mass_bins,
        classwise=classwise,
        group_accuracy=g_accuracy,
        group_true_ece=g_true,
        group_ece=g_ece,
        group_gap=max(g_ece) - min(g_ece) if g_ece else None,
        group_true_gap=max(g_true) - min(g_true) if g_true else None,
        model=model,
    )


def _classwise(
    model: SimulationModel, cols: _Integrand, pieces: F64, width_bin: np.ndarray, c_mid: F64
) -> F64:
    """The signed class-wise terms ``T[k, b]`` (module docstring), shape ``(K, B)``.

    ``T_x = (A_x - N_x) / K + sum_x' w_x' N_x'`` for the classes whose predicted map is
    ``x``: ``A_x[b] = E[(f_x - c) 1{c in b}]`` (the class predicted), ``N_x[b]`` its other
    classes' term (the class not predicted while a class of map ``x`` is).
    """
    k, n_bins = model.n_classes, cols.n_bins
    f = pieces[:, cols.fx] if model.class_maps else pieces[:, 1:2]
    weights = np.asarray(model.weights) if model.class_maps else np.ones(1)
    gap = f - pieces[:, :1]  # integral of f_x - c over each piece
    top = np.stack([np.bincount(width_bin, g, minlength=n_bins) for g in gap.T])
    if k > 2:
        other = pieces[:, cols.other].sum(axis=0).reshape(f.shape[1], n_bins)
    else:  # the other class's probability is 1 - c, in the bin of 1 - c
        other_bin = equal_width_index(1.0 - c_mid, n_bins)
        other = np.stack([np.bincount(other_bin, -g, minlength=n_bins) for g in gap.T])
    per_map = (top - other) / k + weights @ other
    return np.asarray(per_map[np.asarray(model.class_maps or [0] * k)], dtype=np.float64)


def _groups(
    model: SimulationModel,
    cols: _Integrand,
    pieces: F64,
    width_bin: np.ndarray,
    per_bin: Callable[[np.ndarray, F64], F64],
) -> tuple[tuple[float, ...], tuple[float, ...], tuple[float, ...]]:
    """Each group's accuracy, bin-free and binned ECE (group ``g``'s map is ``maps[g]``)."""
    if not model.groups:
        return (), (), ()
    f, absolute = pieces[:, cols.fx], pieces[:, cols.absx]
    ece = [float(np.abs(per_bin(width_bin, g - pieces[:, 0])).sum()) for g in f.T]
    return (
        tuple(float(a) for a in f.sum(axis=0)),
        tuple(float(a) for a in absolute.sum(axis=0)),
        tuple(ece),
    )
