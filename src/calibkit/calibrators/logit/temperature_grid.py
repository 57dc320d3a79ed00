"""Temperature scaling by grid search on ECE, and the ECE-versus-temperature curve.

``TemperatureScalingECE`` picks T from a grid (default 0.001, 0.002, ..., 5, as in the
Neural Clamping paper) by the lowest top-label ECE on the calibration set.
:func:`ece_temperature_curve` computes that ECE for every temperature of a grid at once; it
also draws the ECE-vs-temperature figure of a report.

>>> rng = np.random.default_rng(0)
>>> z = rng.normal(size=(500, 4)) * 3
>>> y = np.argmax(z / 2 + rng.gumbel(size=z.shape), axis=1)
>>> curve = ece_temperature_curve(z, y, [0.5, 1.0, 2.0])
>>> bool(curve[2] < curve[0])
True
"""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from calibkit.calibrators.base import F64, Calibrator
from calibkit.calibrators.logit.temperature import (
    CHUNK_ELEMENTS,
    LOG_TEMPERATURE,
    T_MAX_DOC,
    T_MIN_DOC,
    TEMPERATURE,
    check_log_temperature,
    check_temperature_bounds,
    warn_at_bound,
)
from calibkit.core.binning import N_BINS, check_n_bins
from calibkit.core.errors import InputError
from calibkit.core.outputs import ClassifierOutputs, as_outputs
from calibkit.core.params import param
from calibkit.core.progress import Phase
from calibkit.core.validation import POSITIVE, Constraints, Real

if TYPE_CHECKING:
    from calibkit.calibrators.modules import Temperature

_log = logging.getLogger(__name__)

# Direct evaluation costs one exp per (temperature, sample, class). Where the grid is dense
# in b (large T), a window [b0 - w, b0 + w] is served by the Taylor series of S around b0:
# ``S(b0 + s w) = sum_r M_r s^r`` with ``M_r = sum_j exp(b0 d_j) (w d_j)^r / r!`` for
# |s| <= 1: R + 1 moments per sample (one exp per class) and one matrix product for all the
# temperatures of the window. The truncation error of a term is at most
# ``exp(b0 d)|w d|^(R+1) e^(w|d|) / (R+1)! = exp((b0 - w) d) |w d|^(R+1) / (R+1)!``, so
# choosing w as below keeps S's relative error under 1e-16 (S >= 1 with the top term).

_TAYLOR_DEGREE = 24
_TAYLOR_EPS = 1e-16
# relative costs (per class and sample) used to decide where the series pays off
_COST_EXP = 1.0  # a multiply and an exp at one temperature
_COST_MOMENT = 0.4  # one more power of the series (a multiply and a sum)
_COST_PRODUCT = 0.08  # one coefficient of the matrix product, per temperature


def _taylor_half_width(b_lo: float, d_max: float, n_terms: int) -> float:
    """Largest w such that the series around ``b_lo + w`` is accurate on [b_lo, b_lo + 2w]."""
    r1 = _TAYLOR_DEGREE + 1
    # max over 0 <= a <= d_max of exp(-b_lo a) a^(R+1) is reached at a = (R+1) / b_lo
    a = min(d_max, r1 / b_lo) if b_lo > 0 else d_max
    log_w = (
        math.log(_TAYLOR_EPS) + math.lgamma(r1 + 1) + b_lo * a - math.log(n_terms)
    ) / r1 - math.log(a)
    return math.exp(log_w)


def _plan(bs: F64, d_max: float, n_terms: int) -> list[tuple[int, int, float, float]]:
    """Split sorted inverse temperatures into ranges ``(lo, hi, b0, w)``; w = 0: direct."""
    plan: list[tuple[int, int, float, float]] = []
    n_t = bs.shape[0]
    i = 0
    while i < n_t:
        j, b0, w = i + 1, 0.0, 0.0
        if d_max > 0 and n_terms > 0:
            w_try = _taylor_half_width(float(bs[i]), d_max, n_terms)
            j_try = int(np.searchsorted(bs, bs[i] + 2.0 * w_try, side="right"))
            count = j_try - i
            series = n_terms * (_COST_EXP + _TAYLOR_DEGREE * _COST_MOMENT)
            series += count * (_TAYLOR_DEGREE + 1) * _COST_PRODUCT
            if series < count * n_terms * _COST_EXP:
                j, b0, w = j_try, float(bs[i]) + w_try, w_try
        if w == 0.0 and plan and plan[-1][3] == 0.0:
            plan[-1] = (plan[-1][0], j, 0.0, 0.0)  # extend the direct range
        else:
            plan.append((i, j, b0, w))
        i = j
    return plan


def _direct_confidences(d: F64, bs: F64, out: F64) -> None:
    """``1 / (1 + sum_j exp(b d_j))`` for every b of ``bs`` and sample (column) of ``d``.

    ``d`` is class-major, each sample's values sorted descending: classes whose largest
    value is below ``-50 / b`` (terms under e^-50, below the rounding of a sum >= 1) are
    skipped.
    """
    n_terms, n = d.shape
    col_max = d.max(axis=1) if n_terms else np.zeros(0)
    per = max(1, CHUNK_ELEMENTS // max(1, n_terms * n))
    space = np.empty(per * n_terms * n)
    for i in range(0, bs.shape[0], per):
        b = bs[i : i + per]
        used = int(np.count_nonzero(col_max * b.min() >= -50.0))
        buf = space[: b.shape[0] * used * n].reshape(b.shape[0], used, n)
        np.multiply(d[None, :used], b[:, None, None], out=buf)
        np.exp(buf, out=buf)
        s = buf.sum(axis=1)
        s += 1.0
        np.divide(1.0, s, out=out[i : i + per])


def _taylor_moments(d: F64, b0: float, w: float) -> F64:
    """``M_r = sum_j exp(b0 d_j) (w d_j)^r / r!`` for r = 0..R, shape (R + 1, samples)."""
    e = np.multiply(d, b0)
    np.exp(e, out=e)
    u = np.multiply(d, w)
    moments = np.empty((_TAYLOR_DEGREE + 1, d.shape[1]))
    e.sum(axis=0, out=moments[0])
    scale = 1.0
    for r in range(1, _TAYLOR_DEGREE + 1):
        np.multiply(e, u, out=e)
        scale /= r
        e.sum(axis=0, out=moments[r])
        moments[r] *= scale
    return moments


def _small_matmul(a: F64, b: F64, out: F64) -> None:
    """``out = a @ b`` in blocks of under 2**18 multiply-adds.

    OpenBLAS runs such small products on the calling thread; larger ones start its thread
    pool, which is many times slower when the cores are busy with other processes.
    """
    m, k = a.shape
    cols = min(b.shape[1], 1024)
    rows = max(1, ((1 << 18) - 1) // (k * cols))
    for i in range(0, m, rows):
        for j in range(0, b.shape[1], cols):
            np.matmul(a[i : i + rows], b[:, j : j + cols], out=out[i : i + rows, j : j + cols])


def _accumulate(conf: F64, correct: F64, n_bins: int, sums: F64, scratch: F64) -> None:
    """Add ``correct - conf`` into ``sums[t, bin]`` (bin = floor(conf * n_bins)), one bincount.

    ``sums`` has ``n_bins + 1`` columns: a confidence of exactly 1 lands in the last one,
    folded into bin ``n_bins - 1`` at the end (the last bin is closed). ``scratch`` holds at
    least ``conf.size`` float64 values.
    """
    p = conf.shape[0]
    buf = scratch[: conf.size].reshape(conf.shape)
    idx = np.empty(conf.shape, dtype=np.intp)
    np.multiply(conf, n_bins, out=buf)
    np.copyto(idx, buf, casting="unsafe")  # truncation = floor (conf >= 0)
    idx += (np.arange(p, dtype=np.intp) * (n_bins + 1))[:, None]
    np.subtract(correct, conf, out=buf)
    sums += np.bincount(
        idx.reshape(-1), weights=buf.reshape(-1), minlength=p * (n_bins + 1)
    ).reshape(p, n_bins + 1)


def ece_temperature_curve(
    logits: object, labels: object, temperatures: object, n_bins: int = 15
) -> F64:
    """Top-label ECE (equal-width bins) of ``softmax(logits / T)`` for every T given.

    Float64 throughout; agrees with :func:`calibkit.metrics.ece` on ``logits / T`` to about
    1e-13 (the confidences to about 1e-14, relative). Blocks of temperatures are vectorised:
    confidences from direct exps, or from a Taylor series in 1/T where the temperatures are
    dense (see the comment above), and each block's bin sums from one ``bincount``.

    Examples
    --------
    Confidence ``sigmoid(2) = 0.8808`` at T = 1 against an accuracy of 0.5; about 0.5 at a
    huge T:

    >>> z = [[2.0, 0.0], [0.0, 2.0], [2.0, 0.0], [0.0, 2.0]]
    >>> ece_temperature_curve(z, [0, 1, 1, 0], [1.0, 1e6]).round(4).tolist()
    [0.3808, 0.0]
    """
    out = as_outputs(labels, logits=logits)
    n_bins = check_n_bins(n_bins)
    return _ece_curve(out, _check_temperatures(temperatures), n_bins)


def _centred_block(z: np.ndarray, start: int, stop: int) -> F64:
    """The non-top centred logits of samples ``start:stop``, each sample's sorted
    descending, class-major (float64; one block at a time, so no full-size copy)."""
    zc = np.array(z[start:stop], dtype=np.float64)
    zc -= zc.max(axis=1, keepdims=True)
    zc.sort(axis=1)
    return np.ascontiguousarray(zc[:, -2::-1].T)


def _ece_curve(out: ClassifierOutputs, temps: F64, n_bins: int) -> F64:
    z = out.as_logits()
    n, k = z.shape
    correct = (np.argmax(z, axis=1) == out.labels).astype(np.float64)
    n_terms = k - 1
    # the widest spread of a sample's logits (float64, as the centred values are)
    spread = 0.0
    for start in range(0, n, 1 << 14):
        zc = np.asarray(z[start : start + (1 << 14)], dtype=np.float64)
        spread = max(spread, float((zc.max(axis=1) - zc.min(axis=1)).max(initial=0.0)))
    order = np.argsort(1.0 / temps, kind="stable")
    bs = 1.0 / temps[order]
    plan = _plan(bs, spread if n_terms else 0.0, n_terms)
    sums = np.zeros((bs.shape[0], n_bins + 1))
    rows = min(n, max(1024, (1 << 18) // max(1, n_terms)))
    phase = Phase(_log, f"ECE at {bs.shape[0]:,} temperatures ({n:,} x {k:,})", -(-n // rows))
    for start in range(0, n, rows):
        dc, cc = _centred_block(z, start, start + rows), correct[start : start + rows]
        r = dc.shape[1]
        per = max(1, (1 << 18) // r)
        conf = np.empty((min(per, bs.shape[0]), r))
        scratch = np.empty(conf.size)
        for lo, hi, b0, w in plan:
            moments = _taylor_moments(dc, b0, w) if w > 0 else None
            for i in range(lo, hi, per):
                j = min(i + per, hi)
                c = conf[: j - i]
                if moments is None:
                    _direct_confidences(dc, bs[i:j], c)
                else:
                    powers = ((bs[i:j] - b0) / w)[:, None] ** np.arange(_TAYLOR_DEGREE + 1)
                    _small_matmul(powers, moments, c)
                    c += 1.0
                    np.divide(1.0, c, out=c)
                _accumulate(c, cc, n_bins, sums[i:j], scratch)
        phase.step(f"samples {start + r:,}/{n:,}")
    sums[:, n_bins - 1] += sums[:, n_bins]
    res = np.empty(bs.shape[0])
    res[order] = np.abs(sums[:, :n_bins]).sum(axis=1) / n
    return res


#: Slack of the bound |accuracy - mean confidence| <= ECE, far above the float32 error of
#: the mean confidence (about 1e-7) and the 1e-13 of the curve.
_GAP_MARGIN = 1e-5


def ece_grid_minimum(
    logits: object, labels: object, temperatures: object, n_bins: int = 15
) -> tuple[int, float]:
    """Index and value of the lowest top-label ECE of ``softmax(logits / T)`` over a grid.

    The same minimum as ``ece_temperature_curve(...).min()`` (to about 1e-13; among values
    that equal to that precision, the first in the grid's order), without computing the
    whole curve. A binned ECE is at least ``|accuracy - mean confidence|`` (a sum of
    absolute values is at least the absolute value of the sum), and the mean confidence
    never increases with T. So once one ECE value ``U`` is known, only the temperatures
    where that gap is at most ``U`` can do better; they form one interval of the sorted
    grid, found by bisection with one O(N K) pass per probe. Typically a few percent of
    the grid is left to evaluate.

    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(500, 4)) * 3
    >>> y = np.argmax(z / 2 + rng.gumbel(size=z.shape), axis=1)
    >>> grid = np.arange(1, 1001) * 0.01
    >>> i, value = ece_grid_minimum(z, y, grid)
    >>> curve = ece_temperature_curve(z, y, grid)
    >>> int(np.argmin(curve)) == i, bool(abs(curve.min() - value) < 1e-12)
    (True, True)
    """
    out = as_outputs(labels, logits=logits)
    n_bins = check_n_bins(n_bins)
    temps = _check_temperatures(temperatures)
    return _grid_minimum(out, temps, n_bins)


def _grid_minimum(out: ClassifierOutputs, temps: F64, n_bins: int) -> tuple[int, float]:
    z = np.asarray(out.as_logits(), dtype=np.float64)
    # the gap only has to be good to the margin below: float32 halves the cost of the probes
    shifted = (z - z.max(axis=1, keepdims=True)).astype(np.float32)
    accuracy = float(np.mean(np.argmax(z, axis=1) == out.labels))
    order = np.argsort(temps, kind="stable")
    ts = temps[order]
    gaps: dict[int, float] = {}

    def gap(i: int) -> float:  # accuracy - mean confidence: non-decreasing in i
        if i not in gaps:
            top = 1.0 / np.exp(shifted / np.float32(ts[i])).sum(axis=1, dtype=np.float64)
            gaps[i] = accuracy - float(top.mean())
        return gaps[i]

    def first(lo: int, hi: int, at_least: float) -> int:  # first i in [lo, hi) with gap >= ...
        while lo < hi:
            mid = (lo + hi) // 2
            if gap(mid) >= at_least:
                hi = mid
            else:
                lo = mid + 1
        return lo

    n = ts.shape[0]
    cross = first(0, n, 0.0)
    probes = sorted({min(max(cross + k, 0), n - 1) for k in (-1, 0)})
    bound = float(_ece_curve(out, ts[probes], n_bins).min()) + _GAP_MARGIN
    lo = first(0, cross, -bound)
    hi = first(cross, n, np.nextafter(bound, np.inf))  # the window ts[lo:hi] holds the best probe
    curve = _ece_curve(out, ts[lo:hi], n_bins)
    best = curve.min()
    ties = order[lo:hi][curve <= best + 1e-13 * max(1.0, best)]
    return int(ties.min()), float(best)


def _check_temperatures(temperatures: object) -> F64:
    try:
        temps = np.asarray(temperatures, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise InputError("temperatures", "a list of positive numbers", repr(temperatures)) from None
    if temps.size == 0 or not np.all(np.isfinite(temps)) or temps.min() <= 0:
        raise InputError("temperatures", "a non-empty list of positive numbers", str(temps[:5]))
    return temps


class TemperatureScalingECE(Calibrator):
    """Temperature scaling with T chosen on a grid by the lowest calibration-set ECE.

    A class absent from the calibration labels keeps its column by construction:
    the one temperature is shared by all classes.

    The grid is ``t_min, t_min + t_step, ..., <= t_max`` (at most 1e6 points).

    Attributes
    ----------
    temperature_ : float
        The grid temperature of lowest ECE (the smallest among ties).
    calibration_ece_ : float
        Its ECE on the calibration set. A temperature at either end of the grid gives a
        :class:`~calibkit.core.errors.BoundWarning` (the ECE may fall further beyond it).

    Examples
    --------
    {fit_example}

    >>> z = np.array([[4.0, 0.0], [0.0, 4.0], [4.0, 0.0], [0.0, 4.0]])
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as seen:  # T at the grid's end: a warning
    ...     warnings.simplefilter("always")
    ...     ts = TemperatureScalingECE(t_min=1.0, t_max=100.0, t_step=1.0).fit(z, [0, 1, 1, 0])
    >>> ts.temperature_, ts.grid().size, seen[0].category.__name__
    (100.0, 100, 'BoundWarning')
    """

    maps_logits = True
    state_constraints: ClassVar[Constraints] = {
        "temperature_": TEMPERATURE,
        "log_temperature_": LOG_TEMPERATURE,
        "calibration_ece_": Real(0.0, 1.0),
    }
    t_min: float = param(default=0.001, check=POSITIVE, doc=T_MIN_DOC)
    t_max: float = param(default=5.0, check=POSITIVE, doc=T_MAX_DOC)
    t_step: float = param(default=0.001, check=POSITIVE, doc="The step of the grid.")
    n_bins: int = param(default=15, check=N_BINS, doc="Equal-width bins of the top-label ECE.")

    def _check_params(self) -> None:
        check_temperature_bounds(self.t_min, self.t_max)
        if (self.t_max - self.t_min) / self.t_step > 1e6:
            raise InputError("t_step", "a step giving at most 1e6 grid points", repr(self.t_step))

    def grid(self) -> F64:
        """The temperatures searched."""
        count = int(np.floor((self.t_max - self.t_min) / self.t_step + 1e-9)) + 1
        return self.t_min + self.t_step * np.arange(count, dtype=np.float64)

    def _fit(self, out: ClassifierOutputs, weights: F64 | None = None) -> None:
        grid = self.grid()
        best, value = _grid_minimum(out, grid, self.n_bins)  # the smallest T among ties
        self.temperature_ = float(grid[best])
        self.log_temperature_ = float(np.log(self.temperature_))
        self.calibration_ece_ = value
        by = "calibration-set ECE"
        warn_at_bound(self.name, self.temperature_, grid[0], grid[-1], by, stacklevel=3)

    def _module(self) -> Temperature:
        from calibkit.calibrators.modules import Temperature  # torch: only when exported

        return Temperature(self.temperature_)

    def _check_state(self) -> None:
        check_log_temperature(self.log_temperature_, self.temperature_, self.t_min, self.t_max)

    def _transform(self, logits: F64) -> F64:
        return logits / self.temperature_
