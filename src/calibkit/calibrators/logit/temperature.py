"""Temperature scaling: one positive scalar T dividing the logits (Guo et al. 2017).

``TemperatureScaling`` minimises the calibration-set NLL over T in ``[t_min, t_max]``
(default [0.1, 10]). The NLL is convex in the inverse temperature ``b = 1/T``:
``NLL(b) = mean(logsumexp(b z) - b z_y)``, with ``NLL' = mean(E_p[z] - z_y)``,
``NLL'' = mean(Var_p[z]) >= 0`` and ``NLL''' = mean(third central moment of z under p)``.
All three come from one chunked pass over the logits (see :func:`nll_derivatives`), so a
Halley step (cubically convergent; Newton or a bisection when it leaves the bracket that
holds the optimum) reaches the optimum of Brent's bounded method in two or three passes,
started from the optimum on a subsample of the rows.

The grid-search variant, ``TemperatureScalingECE``, lives in
:mod:`calibkit.calibrators.logit.temperature_grid`. Both keep the argmax (T > 0).

>>> rng = np.random.default_rng(0)
>>> z = rng.normal(size=(2000, 5)) * 3
>>> y = np.array([rng.choice(5, p=np.exp(r / 2) / np.exp(r / 2).sum()) for r in z])
>>> ts = TemperatureScaling().fit(z, y)
>>> 1.8 < ts.temperature_ < 2.2
True
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from calibkit.calibrators.base import F64, Calibrator
from calibkit.core.errors import BoundWarning, InputError
from calibkit.core.fitted_state import InRange, Param
from calibkit.core.outputs import ClassifierOutputs, FloatArray, IntArray
from calibkit.core.params import param
from calibkit.core.validation import POSITIVE, Constraints, Real

if TYPE_CHECKING:
    from calibkit.calibrators.modules import Temperature

#: Logits per chunk of a pass: two float32 buffers of this size stay in a 2 MB L2 cache.
CHUNK_ELEMENTS = 1 << 16
#: Fits on more logits than this start from the optimum on about _SUBSAMPLE_ROWS rows.
_SUBSAMPLE_ABOVE = 1 << 20
_SUBSAMPLE_ROWS = 2048
#: Rows with fewer classes are stored transposed (class-major) for the passes.
_NARROW = 32


#: A fitted temperature in the range its fit searched, ``[t_min, t_max]`` of the parameters
#: (to rounding), and its logarithm in ``[log t_min, log t_max]``: a loaded file's value is
#: checked against its own parameters' range before anything computes with it (``exp`` of a
#: hand-edited log temperature past 709 would overflow).
TEMPERATURE = InRange(Param("t_min"), Param("t_max"), within=POSITIVE)
LOG_TEMPERATURE = InRange(Param("t_min", log=True), Param("t_max", log=True))
#: The fitted state of both temperature scalings (besides ``n_classes_``).
TEMPERATURE_STATE: Constraints = {"log_temperature_": LOG_TEMPERATURE, "temperature_": TEMPERATURE}
#: The largest magnitude of a log temperature a fit without a declared range may keep
#: (Neural Clamping's SGD): ``exp`` of it is a finite positive float.
MAX_LOG_TEMPERATURE = 700.0
#: A log temperature whose range no parameter states (see :data:`MAX_LOG_TEMPERATURE`).
ANY_LOG_TEMPERATURE = Real(-MAX_LOG_TEMPERATURE, MAX_LOG_TEMPERATURE)


def check_log_temperature(
    log_t: float, t: float, t_min: float | None = None, t_max: float | None = None
) -> None:
    """An InputError unless ``log_t`` is ``log(t)`` (to rounding) and ``t`` lies in the
    searched range ``[t_min, t_max]`` where given (to rounding: ``1 / (1 / t)``): a loaded
    state's check. Compared on the log scale, which never overflows.

    >>> check_log_temperature(1000.0, 2.0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calibkit.core.errors.InputError: state.log_temperature_: expected log(...) = 0.69..., got 1000.0
    """
    if not t > 0 or not math.isfinite(t):
        raise InputError("state.temperature_", "a finite number > 0", repr(t))
    if not math.isclose(log_t, math.log(t), rel_tol=1e-9, abs_tol=1e-9):
        raise InputError(
            "state.log_temperature_", f"log(temperature_) = {math.log(t)!r}", repr(log_t)
        )
    if t_min is None or t_max is None:
        return
    if not t_min * (1 - 1e-9) <= t <= t_max * (1 + 1e-9):
        expected = f"a temperature in [t_min, t_max] = [{t_min:g}, {t_max:g}]"
        raise InputError("state.temperature_", expected, repr(t))


#: What ``t_min`` and ``t_max`` mean, for every method that searches a temperature.
T_MIN_DOC = "The lowest temperature searched (below ``t_max``)."
T_MAX_DOC = "The highest temperature searched (above ``t_min``)."


def check_temperature_bounds(t_min: float, t_max: float) -> None:
    """An InputError unless ``t_min < t_max`` (both already checked as positive)."""
    if not t_min < t_max:
        raise InputError("t_max", f"a value above t_min ({t_min:g})", f"{t_max:g}")


#: A fitted temperature within this relative distance of ``t_min`` or ``t_max`` is at it.
AT_BOUND = 1e-6
#: What a temperature at each bound says about the data, and what to do.
_AT_BOUND_WHY = {
    "t_min": (
        "lower",
        "smaller",
        "the logits are far too flat for how often their top class is right "
        "(probabilities, or scaled-down logits, passed as logits?); check the input, or pass "
        "a smaller t_min",
    ),
    "t_max": (
        "upper",
        "larger",
        "the logits predict these labels barely better than chance (labels that do not "
        "belong to these logits?); check the labels, or pass a larger t_max",
    ),
}


def warn_at_bound(
    method: str, t: float, t_min: float, t_max: float, by: str = "NLL", stacklevel: int = 2
) -> None:
    """A :class:`~calibkit.core.errors.BoundWarning` when the fitted temperature ``t`` of
    ``method`` lies at ``t_min`` or ``t_max`` (within :data:`AT_BOUND`): the optimum of
    ``by`` over ``[t_min, t_max]`` is at the bound, so the best temperature may lie beyond.

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as seen:
    ...     warnings.simplefilter("always")
    ...     warn_at_bound("temperature", 10.0, 0.1, 10.0)
    ...     warn_at_bound("temperature", 1.5, 0.1, 10.0)
    >>> len(seen), str(seen[0].message)[:58]
    (1, 'temperature: T reached its upper bound t_max = 10; a large')
    """
    for name, bound in (("t_min", t_min), ("t_max", t_max)):
        if math.isclose(t, bound, rel_tol=AT_BOUND):
            side, beyond, why = _AT_BOUND_WHY[name]
            warnings.warn(
                f"{method}: T reached its {side} bound {name} = {bound:g}; a {beyond} T may "
                f"lower the {by} further: {why}",
                BoundWarning,
                stacklevel=stacklevel + 1,
            )


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
        self.rows = max(1, CHUNK_ELEMENTS // k)
        self.wide = k >= _NARROW
        if self.wide:
            self.z = z
            self.top = z.max(axis=1)
            zy = z[np.arange(n), y] - self.top
        else:  # blocked transpose: each block is read once, from cache
            self.z = np.empty((k, n), dtype=z.dtype)
            self.top = np.empty(n, dtype=z.dtype)
            step = 1 << 14
            for start in range(0, n, step):
                block, top = self.z[:, start : start + step], self.top[start : start + step]
                np.copyto(block, z[start : start + step].T)
                block.max(axis=0, out=top)
                block -= top
            zy = self.z[y, np.arange(n)]
        # centred label logit (<= 0), summed in float64
        self.zy_mean = float(np.mean(zy, dtype=np.float64))

    def moments(self, beta: float, *, value: bool = True) -> tuple[float, float, float, float]:
        """``(NLL, NLL', NLL'', NLL''')`` at inverse temperature ``beta`` (means over rows).

        Per chunk, ``x = beta * (z - max) <= 0`` and ``e = exp(x)`` at the logits' precision,
        and per row the raw sums ``s_r = sum e x^r`` (r = 0..3), whose terms all have one sign
        (no cancellation). Central moments (per block of about 8,192 rows, in cache) and all
        totals are then float64.
        """
        n, k, rows = self.n, self.k, self.rows
        block = rows * max(1, 8192 // rows)
        shape = (min(rows, n), k) if self.wide else (k, min(rows, n))
        xb = np.empty(shape, dtype=self.dtype)
        eb = np.empty(shape, dtype=self.dtype)
        sb = np.empty((4, min(block, n)), dtype=self.dtype)
        ones = np.ones(k, dtype=self.dtype)
        f = g = h = h3 = 0.0
        for first in range(0, n, block):
            last = min(first + block, n)
            for start in range(first, last, rows):
                stop = min(start + rows, last)
                s0, s1, s2, s3 = sb[:, start - first : stop - first]
                if self.wide:  # row dot products (BLAS dot) beat sum(axis=1) by 2-3x
                    x, e = xb[: stop - start], eb[: stop - start]
                    np.subtract(self.z[start:stop], self.top[start:stop, None], out=x)
                    np.multiply(x, beta, out=x)
                    np.exp(x, out=e)
                    np.vecdot(e, ones, out=s0)
                    np.vecdot(e, x, out=s1)
                    np.multiply(e, x, out=e)
                    np.vecdot(e, x, out=s2)
                    np.multiply(e, x, out=e)
                    np.vecdot(e, x, out=s3)
                else:  # class-major: sums over axis 0 add contiguous vectors
                    x, e = xb[:, : stop - start], eb[:, : stop - start]
                    np.multiply(self.z[:, start:stop], beta, out=x)
                    np.exp(x, out=e)
                    e.sum(axis=0, out=s0)
                    np.multiply(e, x, out=e)
                    e.sum(axis=0, out=s1)
                    np.multiply(e, x, out=e)
                    e.sum(axis=0, out=s2)
                    np.multiply(e, x, out=e)
                    e.sum(axis=0, out=s3)
            s = sb[:, : last - first]
            inv = 1.0 / s[0].astype(np.float64)
            m1 = s[1] * inv
            m2 = s[2] * inv
            m3 = s[3] * inv
            if value:
                f -= float(np.log(inv).sum())
            g += float(m1.sum())
            h += float((m2 - m1 * m1).sum())
            h3 += float((m3 - m1 * (3.0 * m2 - 2.0 * m1 * m1)).sum())
        # x = beta * z_c: the moments of z_c are those of x divided by beta ** r
        return (
            f / n - beta * self.zy_mean if value else math.nan,
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
    in log space. Stops when the bracket is narrower than ``tol * b`` or when the error
    left after an in-bracket step is predicted below ``tol * b``: ``K |step|^3`` for Halley
    (K observed from the last two Halley steps, at least 1), ``|step|^2`` for Newton.
    """
    lo, hi = b_min, b_max
    lo_checked = hi_checked = False
    b = min(max(start, lo), hi)
    last_halley = 0.0  # relative size of the previous Halley step (0: none)
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
        halley = h > 0 and denom > 0
        if halley:
            cand = b - 2.0 * g * h / denom
        elif h > 0:
            cand = b - g / h
        else:
            cand = math.inf if g < 0 else -math.inf
        if lo < cand < hi:
            rel = abs(cand - b) / b
            if halley:
                k = max(1.0, rel / last_halley**3) if last_halley > 0 else 1.0
                if k * rel**3 <= tol:
                    return cand
                last_halley = rel
            elif rel * rel <= tol:
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


def fit_weighted_inverse_temperature(
    logits: FloatArray, labels: IntArray, weights: F64, b_min: float, b_max: float
) -> float:
    """The inverse temperature in ``[b_min, b_max]`` minimising the ``weights``-weighted
    mean NLL: Brent's bounded search over ``log b`` (the NLL is convex in ``b``), to a
    relative accuracy of about 1e-12 in ``b``."""
    from scipy.optimize import minimize_scalar

    z = np.asarray(logits, dtype=np.float64)
    z = z - z.max(axis=1, keepdims=True)
    zy = z[np.arange(z.shape[0]), np.asarray(labels)]
    w = weights / weights.sum()

    def nll(log_b: float) -> float:
        b = math.exp(log_b)
        return float(w @ (np.log(np.exp(b * z).sum(axis=1)) - b * zy))

    bounds = (math.log(b_min), math.log(b_max))
    res = minimize_scalar(nll, bounds=bounds, method="bounded", options={"xatol": 1e-12})
    return math.exp(float(res.x))


def nll_inverse_temperature(
    out: ClassifierOutputs, weights: F64 | None, t_min: float, t_max: float
) -> float:
    """The inverse temperature minimising the (``weights``-weighted) mean NLL of ``out``
    for T in ``[t_min, t_max]``: the fit of every method that centres on temperature
    scaling (each fits it once and passes it to the steps that need it)."""
    logits, b_min, b_max = out.as_logits(), 1 / t_max, 1 / t_min
    if weights is None:
        return fit_inverse_temperature(logits, out.labels, b_min, b_max)
    return fit_weighted_inverse_temperature(logits, out.labels, weights, b_min, b_max)


class TemperatureScaling(Calibrator):
    """Temperature scaling fitted by NLL (T in ``[t_min, t_max]``, default [0.1, 10]).

    A fit that stops at ``t_min`` or ``t_max`` gives a
    :class:`~calibkit.core.errors.BoundWarning` naming the bound and what to do
    (:func:`warn_at_bound`).

    A class absent from the calibration labels keeps its column by construction:
    the one temperature is shared by all classes.

    Attributes
    ----------
    temperature_ : float
        The fitted temperature; ``log_temperature_`` is its logarithm.

    Examples
    --------
    {fit_example}

    >>> z = np.array([[4.0, 0.0], [0.0, 4.0], [4.0, 0.0], [0.0, 4.0]])
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as seen:  # T at its bound: a BoundWarning
    ...     warnings.simplefilter("always")
    ...     ts = TemperatureScaling(t_max=100.0).fit(z, [0, 1, 1, 0])
    >>> round(ts.temperature_), seen[0].category.__name__
    (100, 'BoundWarning')
    >>> ts.get_params()
    {'t_min': 0.1, 't_max': 100.0}
    """

    maps_logits = True
    accepts_sample_weight = True
    state_constraints: ClassVar[Constraints] = TEMPERATURE_STATE
    t_min: float = param(default=0.1, check=POSITIVE, doc=T_MIN_DOC)
    t_max: float = param(default=10.0, check=POSITIVE, doc=T_MAX_DOC)

    def _check_params(self) -> None:
        check_temperature_bounds(self.t_min, self.t_max)

    def _fit(self, out: ClassifierOutputs, weights: F64 | None = None) -> None:
        b = nll_inverse_temperature(out, weights, self.t_min, self.t_max)
        self.log_temperature_ = float(-np.log(b))
        self.temperature_ = float(1.0 / b)
        warn_at_bound(self.name, self.temperature_, self.t_min, self.t_max, stacklevel=3)

    def _check_state(self) -> None:
        check_log_temperature(self.log_temperature_, self.temperature_, self.t_min, self.t_max)

    def _transform(self, logits: F64) -> F64:
        return logits / self.temperature_

    def _module(self) -> Temperature:
        from calibkit.calibrators.modules import Temperature  # torch: only when exported

        return Temperature(self.temperature_)


# ----- ECE as a function of the temperature --------------------------------------------
#
# With ``d_j = z_j - z_max`` over the non-top classes (all <= 0), the top-label confidence
# at inverse temperature b = 1/T is ``1 / (1 + S(b))``, ``S(b) = sum_j exp(b d_j)``.
