"""Temperature scaling: one positive scalar T dividing the logits (Guo et al. 2017).

``TemperatureScaling`` minimises the calibration-set NLL over T in ``[t_min, t_max]``
(default [0.1, 10]). The NLL is convex in the inverse temperature ``b = 1/T``:
``NLL(b) = mean(logsumexp(b z) - b z_y)``, with ``NLL' = mean(E_p[z] - z_y)``,
``NLL'' = mean(Var_p[z]) >= 0`` and ``NLL''' = mean(third central moment of z under p)``.
All three come from one chunked pass over the logits (see :func:`nll_derivatives`), so a
Halley step (cubically convergent; Newton or a bisection when it leaves the bracket that
holds the optimum) reaches the optimum of Brent's bounded method in two or three passes,
started from the optimum on a subsample of the rows.

``TemperatureScalingECE`` picks T from a grid (default 0.001, 0.002, ..., 5, as in the
Neural Clamping paper) by the lowest ECE on the calibration set, from
:func:`ece_temperature_curve`.

Both keep the argmax (T > 0).

>>> rng = np.random.default_rng(0)
>>> z = rng.normal(size=(2000, 5)) * 3
>>> y = np.array([rng.choice(5, p=np.exp(r / 2) / np.exp(r / 2).sum()) for r in z])
>>> ts = TemperatureScaling().fit(z, y)
>>> 1.8 < ts.temperature_ < 2.2
True
"""

from __future__ import annotations

import math

import numpy as np

from calibkit.binning import check_n_bins
from calibkit.calibrators.base import F64, Calibrator, register
from calibkit.errors import InputError
from calibkit.outputs import ClassifierOutputs, FloatArray, IntArray, as_outputs

#: Logits per chunk of a pass: two float32 buffers of this size stay in a 2 MB L2 cache.
_CHUNK_ELEMENTS = 1 << 16
#: Fits on more logits than this start from the optimum on about _SUBSAMPLE_ROWS rows.
_SUBSAMPLE_ABOVE = 1 << 20
_SUBSAMPLE_ROWS = 2048
#: Rows with fewer classes are stored transposed (class-major) for the passes.
_NARROW = 32


def _positive(value: object, name: str) -> float:
    """``value`` as a finite positive float, or an InputError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise InputError(name, "a finite positive number", repr(value))
    out = float(value)
    if not (math.isfinite(out) and out > 0):
        raise InputError(name, "a finite positive number", repr(value))
    return out


def _check_bounds(t_min: object, t_max: object) -> tuple[float, float]:
    lo, hi = _positive(t_min, "t_min"), _positive(t_max, "t_max")
    if not lo < hi:
        raise InputError("t_max", f"a value above t_min ({lo:g})", f"{hi:g}")
    return lo, hi


# ----- NLL and its derivatives in the inverse temperature ---------------------------------


class _CentredLogits:
    """Logits minus their row maximum, laid out for fast passes (see :func:`nll_derivatives`).

    Wide rows are read in place (the maximum is subtracted chunk by chunk); narrow rows
    (fewer than 32 classes) are copied once, centred and transposed to class-major order so
    that every per-row reduction adds contiguous vectors.
    """

    def __init__(self, logits: FloatArray, labels: IntArray) -> None:
        z = np.ascontiguousarray(logits)
        if z.dtype not in (np.float32, np.float64):
            z = z.astype(np.float64)
        y = np.asarray(labels, dtype=np.int64)
        n, k = z.shape
        self.n, self.k, self.dtype = n, k, z.dtype
        self.rows = max(1, _CHUNK_ELEMENTS // k)
        self.wide = k >= _NARROW
        if self.wide:
            self.z = z
            self.top = z.max(axis=1)
            zy = z[np.arange(n), y] - self.top
        else:
            self.z = np.ascontiguousarray(z.T)
            self.top = self.z.max(axis=0)
            self.z -= self.top
            zy = self.z[y, np.arange(n)]
        # centred label logit (<= 0), summed in float64
        self.zy_mean = float(np.mean(zy, dtype=np.float64))

    def moments(self, beta: float, *, value: bool = True) -> tuple[float, float, float, float]:
        """``(NLL, NLL', NLL'', NLL''')`` at inverse temperature ``beta`` (means over rows).

        Per chunk, ``x = beta * (z - max) <= 0`` and ``e = exp(x)`` at the logits' precision;
        the raw sums ``sum e x^r`` (r = 0..3) have terms of one sign, so no cancellation
        there; per-row central moments and all totals are float64.
        """
        n, rows = self.n, self.rows
        shape = (min(rows, n), self.k) if self.wide else (self.k, min(rows, n))
        xb = np.empty(shape, dtype=self.dtype)
        eb = np.empty(shape, dtype=self.dtype)
        f = g = h = h3 = 0.0
        for start in range(0, n, rows):
            stop = min(start + rows, n)
            if self.wide:
                x, e = xb[: stop - start], eb[: stop - start]
                np.subtract(self.z[start:stop], self.top[start:stop, None], out=x)
                np.multiply(x, beta, out=x)
                np.exp(x, out=e)
                s0 = e.sum(axis=1)
                np.multiply(e, x, out=e)
                s1 = e.sum(axis=1)
                np.multiply(e, x, out=e)
                s2 = e.sum(axis=1)
                s3 = np.vecdot(e, x)
            else:
                x, e = xb[:, : stop - start], eb[:, : stop - start]
                np.multiply(self.z[:, start:stop], beta, out=x)
                np.exp(x, out=e)
                s0 = e.sum(axis=0)
                np.multiply(e, x, out=e)
                s1 = e.sum(axis=0)
                np.multiply(e, x, out=e)
                s2 = e.sum(axis=0)
                s3 = np.einsum("ji,ji->i", e, x)
            inv = 1.0 / s0.astype(np.float64)
            m1 = s1 * inv
            m2 = s2 * inv
            m3 = s3 * inv
            if value:
                f += float(np.log(inv).sum())
            g += float(m1.sum())
            h += float((m2 - m1 * m1).sum())
            h3 += float((m3 - m1 * (3.0 * m2 - 2.0 * m1 * m1)).sum())
        # x = beta * z_c: moments of z_c are those of x divided by beta ** r
        return (
            -f / n - beta * self.zy_mean,
            g / (n * beta) - self.zy_mean,
            max(h, 0.0) / (n * beta**2),
            h3 / (n * beta**3),
        )


def nll_derivatives(
    logits: FloatArray, labels: IntArray, beta: float
) -> tuple[float, float, float]:
    """Mean NLL of ``softmax(beta * logits)`` and its first two derivatives in ``beta``.

    One pass in cache-sized chunks, at the logits' precision (float32: relative error of
    each row's moments about 1e-7); logits are centred on their row maximum first and the
    per-row and total sums are float64.
    """
    f, g, h, _ = _CentredLogits(logits, labels).moments(beta)
    return f, g, h


def _solve(data: _CentredLogits, b_min: float, b_max: float, start: float, tol: float) -> float:
    """Minimise the convex NLL(b) over ``[b_min, b_max]``, from ``start``.

    ``[lo, hi]`` always holds the optimum; a bound becomes "checked" once the derivative's
    sign there is known. Halley steps; Newton when Halley's denominator is not positive;
    a step that leaves the bracket goes to an unchecked bound (evaluated next) or bisects
    in log space. Stops when an in-bracket step is below ``sqrt(tol) * b`` (the error after
    it is then of order ``tol`` or below) or the bracket is narrower than ``tol * b``.
    """
    lo, hi = b_min, b_max
    lo_checked = hi_checked = False
    b = min(max(start, lo), hi)
    for _ in range(60):
        _, g, h, h3 = data.moments(b, value=False)
        if g == 0.0:
            return b
        if g > 0:
            if b == b_min:  # NLL increasing from the lower bound
                return b
            hi, hi_checked = b, True
        else:
            if b == b_max:
                return b
            lo, lo_checked = b, True
        denom = 2.0 * h * h - g * h3
        if h > 0 and denom > 0:
            cand = b - 2.0 * g * h / denom
        elif h > 0:
            cand = b - g / h
        else:
            cand = math.inf if g < 0 else -math.inf
        if lo < cand < hi:
            if abs(cand - b) <= math.sqrt(tol) * b:
                return cand
        elif cand >= hi and not hi_checked:
            cand = hi
        elif cand <= lo and not lo_checked:
            cand = lo
        else:
            cand = math.sqrt(lo * hi)
        if hi - lo <= tol * b:
            return cand
        b = cand
    return b


def fit_inverse_temperature(
    logits: FloatArray, labels: IntArray, b_min: float, b_max: float, tol: float = 1e-12
) -> float:
    """The inverse temperature in ``[b_min, b_max]`` minimising the mean NLL.

    Large inputs (more than 2**20 logits) first solve on about 2,048 evenly spaced rows;
    from there, two or three passes over all the data reach relative accuracy ``tol``
    (limited in practice by the float32 evaluation of NLL', about 1e-7 relative in b).
    """
    data = _CentredLogits(logits, labels)
    start = 1.0
    if data.n * data.k > _SUBSAMPLE_ABOVE and data.n >= 4 * _SUBSAMPLE_ROWS:
        step = data.n // _SUBSAMPLE_ROWS
        sub = _CentredLogits(np.asarray(logits)[::step], np.asarray(labels)[::step])
        start = _solve(sub, b_min, b_max, start, 1e-6)
    return _solve(data, b_min, b_max, start, tol)


@register("temperature")
class TemperatureScaling(Calibrator):
    """Temperature scaling fitted by NLL (T in ``[t_min, t_max]``, default [0.1, 10])."""

    maps_logits = True

    def __init__(self, t_min: float = 0.1, t_max: float = 10.0) -> None:
        self.t_min, self.t_max = _check_bounds(t_min, t_max)

    def _fit(self, out: ClassifierOutputs) -> None:
        b = fit_inverse_temperature(out.as_logits(), out.labels, 1.0 / self.t_max, 1.0 / self.t_min)
        self.log_temperature_ = float(-np.log(b))
        self.temperature_ = float(1.0 / b)

    def _transform(self, logits: F64) -> F64:
        return logits / self.temperature_


# ----- ECE as a function of the temperature --------------------------------------------


def _confidences(d: F64, temps: F64, out: F64) -> None:
    """Top-label confidence ``1 / (1 + sum_j exp(d_j / T))`` for every T and row, float64.

    ``d`` holds the non-top centred logits, class-major, sorted so that row 0 holds each
    sample's largest: columns whose largest entry is below ``-50 T`` (terms below e^-50,
    under the float64 rounding of a sum >= 1) are skipped.
    """
    kk, n = d.shape
    col_max = d.max(axis=1) if kk else np.zeros(0)
    per = max(1, _CHUNK_ELEMENTS // max(1, kk * n))
    rows = max(1, _CHUNK_ELEMENTS // max(1, kk))
    for i in range(0, temps.shape[0], per):
        t = temps[i : i + per]
        used = int(np.count_nonzero(col_max >= -50.0 * t.max()))
        if used == 0:
            out[i : i + per] = 1.0
            continue
        inv = (1.0 / t)[:, None, None]
        for start in range(0, n, rows):
            chunk = d[:used, start : start + rows]
            buf = np.multiply(chunk[None], inv)
            np.exp(buf, out=buf)
            s = buf.sum(axis=1)
            s += 1.0
            np.divide(1.0, s, out=out[i : i + per, start : start + rows])


def _ece_rows(conf: F64, correct: F64, n_bins: int) -> F64:
    """Equal-width ECE of every row of ``conf`` (one confidence per sample), one bincount.

    ``ECE = sum_b |sum_{i in b} (correct_i - conf_i)| / N`` with ``b = floor(conf * n_bins)``
    (the last bin closed), as :func:`calibkit.metrics.ece`.
    """
    p, n = conf.shape
    idx = (conf * n_bins).astype(np.intp)
    np.minimum(idx, n_bins - 1, out=idx)
    idx += (np.arange(p, dtype=np.intp) * n_bins)[:, None]
    weights = correct - conf
    sums = np.bincount(idx.reshape(-1), weights=weights.reshape(-1), minlength=p * n_bins)
    ece: F64 = np.abs(sums.reshape(p, n_bins)).sum(axis=1) / n
    return ece


def ece_temperature_curve(
    logits: object, labels: object, temperatures: object, n_bins: int = 15
) -> F64:
    """Top-label ECE (equal-width bins) of ``softmax(logits / T)`` for every T given.

    Float64 throughout. Vectorised over blocks of temperatures: the confidences of a
    block come from one exp per (temperature, sample, non-top class) and the block's ECEs
    from one ``bincount``. Used by the grid-search calibrator and the ECE-vs-temperature
    figure.
    """
    out = as_outputs(labels, logits=logits)
    n_bins = check_n_bins(n_bins)
    try:
        temps = np.asarray(temperatures, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise InputError("temperatures", "a list of positive numbers", repr(temperatures)) from None
    if temps.size == 0 or not np.all(np.isfinite(temps)) or temps.min() <= 0:
        raise InputError("temperatures", "a non-empty list of positive numbers", str(temps[:5]))
    return _ece_curve(out, temps, n_bins)


def _ece_curve(out: ClassifierOutputs, temps: F64, n_bins: int) -> F64:
    z = np.asarray(out.as_logits(), dtype=np.float64)
    n = z.shape[0]
    correct = (np.argmax(z, axis=1) == out.labels).astype(np.float64)
    # non-top centred logits, each row sorted descending, then class-major
    d = np.sort(z - z.max(axis=1, keepdims=True), axis=1)[:, -2::-1]
    d = np.ascontiguousarray(d.T)
    res = np.empty(temps.shape[0])
    block = max(1, (1 << 18) // n)
    conf = np.empty((min(block, temps.shape[0]), n))
    for i in range(0, temps.shape[0], block):
        t = temps[i : i + block]
        c = conf[: t.shape[0]]
        _confidences(d, t, c)
        res[i : i + block] = _ece_rows(c, correct, n_bins)
    return res


@register("temperature_ece")
class TemperatureScalingECE(Calibrator):
    """Temperature scaling with T chosen on a grid by the lowest calibration-set ECE."""

    maps_logits = True

    def __init__(
        self, t_min: float = 0.001, t_max: float = 5.0, t_step: float = 0.001, n_bins: int = 15
    ) -> None:
        self.t_min, self.t_max = _check_bounds(t_min, t_max)
        self.t_step = _positive(t_step, "t_step")
        if (self.t_max - self.t_min) / self.t_step > 1e6:
            raise InputError("t_step", "a step giving at most 1e6 grid points", repr(t_step))
        self.n_bins = check_n_bins(n_bins)

    def grid(self) -> F64:
        """The temperatures searched."""
        count = int(np.floor((self.t_max - self.t_min) / self.t_step + 1e-9)) + 1
        return self.t_min + self.t_step * np.arange(count, dtype=np.float64)

    def _fit(self, out: ClassifierOutputs) -> None:
        grid = self.grid()
        curve = _ece_curve(out, grid, self.n_bins)
        best = int(np.argmin(curve))  # first minimum: the smallest T among ties
        self.temperature_ = float(grid[best])
        self.log_temperature_ = float(np.log(self.temperature_))
        self.calibration_ece_ = float(curve[best])

    def _transform(self, logits: F64) -> F64:
        return logits / self.temperature_
