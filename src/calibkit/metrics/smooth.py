"""Smooth ECE and the kernel-smoothed reliability curve (Błasiok & Nakkiran, 2023).

The smooth ECE of confidences ``f_i`` with 0/1 outcomes ``y_i`` at bandwidth ``sigma``
smooths the residuals ``y_i - f_i`` with a Gaussian kernel reflected at 0 and 1, and
averages the absolute smoothed residual over the smoothed density of the confidences:

    smECE_sigma = sum_t |sum_i w_i (y_i - f_i) k(t, f_i)| / sum_t (sum_i w_i k(t, f_i) + eps)

The default bandwidth is the fixed point ``sigma*`` where ``smECE_sigma = sigma``: it
makes the metric a consistent calibration measure without a free parameter.

The numerical recipe is that of the reference implementation (``relplot``, by the paper's
authors), so the values agree with it to rounding:

- each confidence is spread linearly onto the two nearest points of a uniform grid of
  ``M = max(2000, round(20 / sigma)) // 2 + 1`` points on [0, 1];
- the grid is convolved with Gaussian density values at the grid offsets within
  ``[-1/2, 1/2]``, the grid mirrored at both ends (a reflected kernel; the end points are
  not mirrored onto themselves, so a confidence of exactly 0 or 1 keeps half its mass);
- the result is interpolated linearly at ``max(200, round(10 / sigma))`` evaluation points
  ``t``, summed as above with ``eps = 1e-4`` (weights normalised to mean 1, so it is the
  reference's floor for every sample size);
- ``sigma*`` is found by ten bisection steps on (0, 1]: a bandwidth is "too small" when it
  is below 0.001 or below its own smooth ECE, and the last bandwidth that was not too
  small is used (so ``smECE_{sigma*} <= sigma*``).

The smoothed reliability curve is ``t + (smoothed outcome - confidence) / smoothed
density`` at the same bandwidth, clipped to [0, 1] (it estimates a rate): where there is no
data it falls back to the diagonal.

``mode="top_label"`` (the default) smooths the top-label confidence against "prediction
correct" (what ``relplot.multiclass_logits_to_confidences`` feeds to ``relplot.smECE``);
``mode="positive_class"`` (two classes only) smooths ``P(y = 1)`` against ``y == 1``.

>>> labels = [1, 1, 1, 0]
>>> probs = [[0.2, 0.8]] * 4  # confidence 0.8, three of four right
>>> round(smooth_ece(labels, probs, bandwidth=0.1), 4)  # |0.75 - 0.8| everywhere
0.05
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TypedDict, Unpack

import numpy as np

from calibkit.core.errors import InputError
from calibkit.core.options import Resampling
from calibkit.core.outputs import as_outputs
from calibkit.metrics.samples import F64, Mode, calibration_target, check_weight

#: Bandwidths below this count as "too small" in the bandwidth search.
MIN_BANDWIDTH = 0.001
#: Bisection steps of the bandwidth search on (0, 1].
SEARCH_STEPS = 10
#: Floor added to the smoothed density (weights have mean 1).
DENSITY_FLOOR = 1e-4
#: Points of the grid the reliability curve is returned on.
CURVE_POINTS = 200


def _linear_weights(x: F64, size: int) -> tuple[np.ndarray, F64]:
    """Left grid index and the weight of the right neighbour of ``x`` on ``size`` points."""
    scaled = x * (size - 1)
    left = np.clip(scaled.astype(np.int64), 0, size - 2)
    return left, scaled - left


def _grid_size(sigma: float) -> int:
    return max(2000, round(20 / sigma)) // 2 + 1


def kernel_sums(conf: F64, values: F64, sigma: float, points: F64) -> F64:
    """``sum_i values[b, i] k(t, conf_i)`` at each of ``points``, for each row ``b``.

    ``values`` has shape ``(B, N)``; the result ``(B, len(points))``. ``k`` is the
    grid-discretised Gaussian of bandwidth ``sigma`` reflected at 0 and 1 (see the module
    docstring).
    """
    from scipy import sparse  # only here: keeps ``import calibkit.metrics`` light

    size = _grid_size(sigma)
    left, frac = _linear_weights(conf, size)
    n = conf.shape[0]
    rows = np.concatenate([np.arange(n), np.arange(n)])
    spread = sparse.csr_matrix(
        (np.concatenate([1.0 - frac, frac]), (rows, np.concatenate([left, left + 1]))),
        shape=(n, size),
    )
    on_grid = np.asarray((spread.T @ values.T).T, dtype=np.float64)
    half = (size - 1) // 2
    offsets = np.arange(-half, half + 1) / (size - 1)
    kernel = np.exp(-0.5 * (offsets / sigma) ** 2) / (math.sqrt(2.0 * math.pi) * sigma)
    mirrored = np.pad(on_grid, ((0, 0), (half, half)), mode="reflect")
    length = mirrored.shape[1] + kernel.size - 1  # a full linear convolution, by FFT
    spectrum = np.fft.rfft(mirrored, length, axis=1) * np.fft.rfft(kernel, length)
    smoothed = np.fft.irfft(spectrum, length, axis=1)[:, kernel.size - 1 : mirrored.shape[1]]
    at, t_frac = _linear_weights(points, size)
    out: F64 = smoothed[:, at] * (1.0 - t_frac) + smoothed[:, at + 1] * t_frac
    return out


def _at_bandwidth(conf: F64, outcome: F64, weight: F64, sigma: float) -> F64:
    """Smooth ECE at ``sigma`` for each row of ``weight`` (shape ``(B, N)``)."""
    points = np.linspace(0.0, 1.0, max(round(10 / sigma), 200))
    sums = kernel_sums(conf, np.vstack([weight * (conf - outcome), weight]), sigma, points)
    b = weight.shape[0]
    gap = np.abs(sums[:b]).sum(axis=1)
    out: F64 = gap / (sums[b:] + DENSITY_FLOOR).sum(axis=1)
    return out


def _bandwidth(conf: F64, outcome: F64, weight: F64) -> float:
    """The fixed point ``sigma*`` of ``sigma -> smECE_sigma`` by bisection on (0, 1]."""

    def too_small(sigma: float) -> bool:
        return sigma < MIN_BANDWIDTH or sigma < _at_bandwidth(conf, outcome, weight, sigma)[0]

    if too_small(1.0):
        return 1.0
    low, high = 0.0, 1.0
    for _ in range(SEARCH_STEPS):
        mid = (low + high) / 2
        if too_small(mid):
            low = mid
        else:
            high = mid
    return high


def _prepare(
    labels: object, probs: object, logits: object, mode: Mode, sample_weight: object
) -> tuple[F64, F64, F64]:
    """Confidence, outcome and weights (mean 1, shape ``(1, N)``) of the outputs."""
    out = as_outputs(labels, probs, logits=logits)
    conf, outcome = calibration_target(out, mode)
    w = check_weight(sample_weight, out.n_samples)
    weight = np.ones(out.n_samples) if w is None else w * (out.n_samples / w.sum())
    return conf, outcome, weight[None, :]


def _check_bandwidth(bandwidth: float | None) -> None:
    if bandwidth is not None and not (math.isfinite(bandwidth) and 0.0 < bandwidth <= 1.0):
        raise InputError(
            "bandwidth", "a number in (0, 1], or None for the fixed point", repr(bandwidth)
        )


class SmoothOptions(TypedDict, total=False):
    """The keyword options of :func:`smooth_ece` and :func:`smooth_reliability`."""

    logits: object
    mode: Mode
    bandwidth: float | None
    sample_weight: object


def _smoothing_target(
    labels: object, probs: object, options: SmoothOptions
) -> tuple[F64, F64, F64, float]:
    """Confidences, outcomes, weights and the bandwidth (given or the fixed point)."""
    bandwidth = options.get("bandwidth")
    _check_bandwidth(bandwidth)
    mode, logits = options.get("mode", "top_label"), options.get("logits")
    conf, outcome, weight = _prepare(labels, probs, logits, mode, options.get("sample_weight"))
    sigma = _bandwidth(conf, outcome, weight) if bandwidth is None else bandwidth
    return conf, outcome, weight, sigma


def smooth_ece(labels: object, probs: object = None, **options: Unpack[SmoothOptions]) -> float:
    """Smooth ECE (Błasiok & Nakkiran, 2023), as a fraction.

    Parameters
    ----------
    labels, probs, logits, sample_weight
        The outputs, as for every metric.
    mode : {"top_label", "positive_class"}
        Top-label confidence vs "prediction correct" (relplot's semantics), or ``P(y = 1)``
        vs ``y == 1`` for two classes.
    bandwidth : float in (0, 1], optional
        The kernel's standard deviation; None (default): the fixed point ``sigma*``.

    Returns
    -------
    float
        The smooth ECE in [0, 1].

    Examples
    --------
    >>> smooth_ece([1, 0], probs=[[0.0, 1.0], [1.0, 0.0]])  # always right, confidence 1
    0.0
    """
    conf, outcome, weight, sigma = _smoothing_target(labels, probs, options)
    return float(_at_bandwidth(conf, outcome, weight, sigma)[0])


def smooth_ece_bandwidth(
    labels: object,
    probs: object = None,
    *,
    logits: object = None,
    mode: Mode = "top_label",
    sample_weight: object = None,
) -> float:
    """The bandwidth ``sigma*`` :func:`smooth_ece` uses by default (see the module docstring).

    >>> smooth_ece_bandwidth([1, 1, 1, 0], probs=[[0.2, 0.8]] * 4)
    0.05078125
    """
    conf, outcome, weight = _prepare(labels, probs, logits, mode, sample_weight)
    return _bandwidth(conf, outcome, weight)


@dataclass(frozen=True)
class SmoothReliability:
    """The kernel-smoothed reliability curve with its bootstrap band.

    Attributes
    ----------
    grid : ndarray of shape (G,)
        Confidences in [0, 1] where the curve is evaluated.
    curve : ndarray of shape (G,)
        Smoothed outcome rate at each grid confidence (the diagonal is perfect calibration),
        clipped to [0, 1]: the estimate ``t + residual / density`` can step outside where
        the confidences near ``t`` sit far from ``t`` (a rate never does).
    lower, upper : ndarray of shape (G,)
        Pointwise percentile bootstrap band of the curve at ``level``, clipped to [0, 1].
    density : ndarray of shape (G,)
        Kernel density of the confidences (integrates to about 1).
    bandwidth, value : float
        The bandwidth and the smooth ECE at it.
    interval : (float, float)
        Percentile bootstrap interval of the smooth ECE at the same bandwidth.
    level : float
        Level of the band and the interval.

    Examples
    --------
    >>> from calibkit import smooth_ece
    >>> probs = [[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.3, 0.7]]
    >>> rel = smooth_reliability([0, 1, 1, 1], probs=probs)
    >>> rel.value == smooth_ece([0, 1, 1, 1], probs=probs), rel.level, rel.grid.shape
    (True, 0.95, (200,))
    """

    grid: F64
    curve: F64
    lower: F64
    upper: F64
    density: F64
    bandwidth: float
    value: float
    interval: tuple[float, float]
    level: float


def _curves(conf: F64, outcome: F64, weight: F64, sigma: float, grid: F64) -> F64:
    """Smoothed reliability curve on ``grid`` for each row of ``weight``."""
    sums = kernel_sums(conf, np.vstack([weight * (outcome - conf), weight]), sigma, grid)
    b = weight.shape[0]
    out: F64 = grid + sums[:b] / (sums[b:] + DENSITY_FLOOR)
    return out


def _resampled(
    conf: F64, outcome: F64, weight: F64, sigma: float, grid: F64, resampling: Resampling
) -> tuple[F64, F64]:
    """Curves ``(n_boot, G)`` and smooth ECEs ``(n_boot,)`` of bootstrap resamples (in
    blocks of 50: a resample is a vector of multinomial counts times the weights)."""
    rng = np.random.default_rng(resampling.seed)
    n, n_boot = conf.shape[0], resampling.n_boot
    curves, values = [], []
    for start in range(0, n_boot, 50):
        counts = rng.multinomial(n, np.full(n, 1.0 / n), size=min(50, n_boot - start))
        w = counts * weight
        w *= n / w.sum(axis=1, keepdims=True)
        curves.append(_curves(conf, outcome, w, sigma, grid))
        values.append(_at_bandwidth(conf, outcome, w, sigma))
    return np.vstack(curves), np.concatenate(values)


def smooth_reliability(
    labels: object,
    probs: object = None,
    *,
    resampling: Resampling = Resampling(n_boot=200),
    **options: Unpack[SmoothOptions],
) -> SmoothReliability:
    """The smoothed reliability curve, its bootstrap band and the smooth ECE with interval.

    The curve (on :data:`CURVE_POINTS` points of [0, 1]) uses the full data; each of
    ``resampling.n_boot`` resamples (multinomial counts times the sample weights) recomputes
    the curve and the smooth ECE at the full data's bandwidth.

    Parameters
    ----------
    labels, probs, logits, mode, bandwidth, sample_weight
        As in :func:`smooth_ece`.
    resampling : Resampling
        Bootstrap resamples (at least 1), level of the band and interval, and the seed.

    Examples
    --------
    >>> rel = smooth_reliability([1, 1, 1, 0], [[0.2, 0.8]] * 4, bandwidth=0.1,
    ...                          resampling=Resampling(n_boot=20))
    >>> round(float(np.interp(0.8, rel.grid, rel.curve)), 4), round(rel.value, 4)
    (0.75, 0.05)
    """
    level = resampling.level
    if resampling.n_boot < 1:
        raise InputError("n_boot", "at least 1 replicate", repr(resampling.n_boot))
    conf, outcome, weight, sigma = _smoothing_target(labels, probs, options)
    grid = np.linspace(0.0, 1.0, CURVE_POINTS)
    curves, values = _resampled(conf, outcome, weight, sigma, grid, resampling)
    alpha = (1.0 - level) / 2.0
    lower, upper = np.quantile(curves, [alpha, 1.0 - alpha], axis=0)
    lo, hi = np.quantile(values, [alpha, 1.0 - alpha])
    density = kernel_sums(conf, weight, sigma, grid)[0] / conf.shape[0]
    return SmoothReliability(
        grid=grid,
        curve=np.clip(_curves(conf, outcome, weight, sigma, grid)[0], 0.0, 1.0),
        lower=np.clip(lower, 0.0, 1.0),
        upper=np.clip(upper, 0.0, 1.0),
        density=density,
        bandwidth=sigma,
        value=float(_at_bandwidth(conf, outcome, weight, sigma)[0]),
        interval=(float(lo), float(hi)),
        level=level,
    )
