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
#
# With ``d_j = z_j - z_max`` over the non-top classes (all <= 0), the top-label confidence
# at inverse temperature b = 1/T is ``1 / (1 + S(b))``, ``S(b) = sum_j exp(b d_j)``.
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
    per = max(1, _CHUNK_ELEMENTS // max(1, n_terms * n))
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
    # non-top centred logits, each sample's sorted descending, class-major
    d = np.ascontiguousarray(np.sort(z - z.max(axis=1, keepdims=True), axis=1)[:, -2::-1].T)
    n_terms = d.shape[0]
    order = np.argsort(1.0 / temps, kind="stable")
    bs = 1.0 / temps[order]
    plan = _plan(bs, float(-d.min()) if d.size else 0.0, n_terms)
    sums = np.zeros((bs.shape[0], n_bins + 1))
    rows = min(n, max(1024, (1 << 18) // max(1, n_terms)))
    for start in range(0, n, rows):
        dc, cc = d[:, start : start + rows], correct[start : start + rows]
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
    sums[:, n_bins - 1] += sums[:, n_bins]
    res = np.empty(bs.shape[0])
    res[order] = np.abs(sums[:, :n_bins]).sum(axis=1) / n
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
