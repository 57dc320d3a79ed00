"""Temperature scaling: one positive scalar T dividing the logits (Guo et al. 2017).

``TemperatureScaling`` minimises the calibration-set NLL over T in ``[t_min, t_max]``
(default [0.1, 10]). The NLL is convex in the inverse temperature ``b = 1/T``:
``NLL(b) = mean(logsumexp(b z) - b z_y)``, with ``NLL' = mean(E_p[z] - z_y)`` and
``NLL'' = mean(Var_p[z]) >= 0``. Both derivatives come from one chunked pass over the
logits, so a Newton step safeguarded by bisection (on ``log b``, inside a bracket that
always holds the optimum) converges in a handful of passes to the same optimum as
Brent's bounded method.

``TemperatureScalingECE`` picks T from a grid (default 0.001, 0.002, ..., 5, as in the
Neural Clamping paper) by the lowest ECE on the calibration set.

Both keep the argmax (T > 0).

>>> rng = np.random.default_rng(0)
>>> z = rng.normal(size=(2000, 5)) * 3
>>> y = np.array([rng.choice(5, p=np.exp(r / 2) / np.exp(r / 2).sum()) for r in z])
>>> ts = TemperatureScaling().fit(z, y)
>>> 1.8 < ts.temperature_ < 2.2
True
"""

from __future__ import annotations



import numpy as np
import torch

from calibkit.calibrators.base import F64, Calibrator, register
from calibkit.errors import InputError
from calibkit.metrics.binned import error_from_stats
from calibkit.binning import check_n_bins, stats_from_index, equal_width_index
from calibkit.outputs import ClassifierOutputs

_CHUNK_ELEMENTS = 1 << 20


def _check_bounds(t_min: float, t_max: float) -> None:
    if not (np.isfinite(t_min) and np.isfinite(t_max) and 0 < t_min < t_max):
        raise InputError("t_min/t_max", "finite bounds with 0 < t_min < t_max", f"{t_min}/{t_max}")


def nll_derivatives(
    logits: torch.Tensor, labels: torch.Tensor, beta: float
) -> tuple[float, float, float]:
    """Mean NLL of ``softmax(beta * logits)`` and its first two derivatives in ``beta``.

    One pass in cache-sized chunks; logits are centred on their row maximum first so that
    ``Var_p[z]`` has no cancellation; sums are accumulated in float64.
    """
    n, k = logits.shape
    rows = max(1, _CHUNK_ELEMENTS // k)
    f = g = h = 0.0
    with torch.no_grad():
        for start in range(0, n, rows):
            z = logits[start : start + rows]
            zc = z - z.max(dim=1, keepdim=True).values  # <= 0, top entry 0
            zy = zc.gather(1, labels[start : start + rows, None])[:, 0]
            e = torch.exp(zc * beta)
            s0 = e.sum(dim=1, dtype=torch.float64)
            ez = e * zc
            s1 = ez.sum(dim=1, dtype=torch.float64)
            s2 = (ez * zc).sum(dim=1, dtype=torch.float64)
            mean = s1 / s0
            var = torch.clamp(s2 / s0 - mean * mean, min=0.0)
            f += float((torch.log(s0) - beta * zy.double()).sum())
            g += float((mean - zy.double()).sum())
            h += float(var.sum())
    return f / n, g / n, h / n


def fit_inverse_temperature(
    logits: torch.Tensor, labels: torch.Tensor, b_min: float, b_max: float, tol: float = 1e-10
) -> float:
    """Minimise the convex NLL(b) over ``[b_min, b_max]`` by safeguarded Newton steps."""
    lo, hi = b_min, b_max
    _, g_lo, _ = nll_derivatives(logits, labels, lo)
    if g_lo >= 0:  # NLL increasing from the lower bound: the optimum is the bound
        return lo
    _, g_hi, _ = nll_derivatives(logits, labels, hi)
    if g_hi <= 0:
        return hi
    b = min(max(1.0, lo), hi)
    for _ in range(100):
        _, g, h = nll_derivatives(logits, labels, b)
        if g > 0:
            hi = b
        else:
            lo = b
        step = -g / h if h > 0 else np.inf
        cand = b + step
        if not (lo < cand < hi):  # Newton left the bracket: bisect in log space
            cand = float(np.sqrt(lo * hi))
        if abs(cand - b) <= tol * b or hi - lo <= tol * b:
            return cand
        b = cand
    return b


@register("temperature")
class TemperatureScaling(Calibrator):
    """Temperature scaling fitted by NLL (T in ``[t_min, t_max]``, default [0.1, 10])."""

    maps_logits = True

    def __init__(self, t_min: float = 0.1, t_max: float = 10.0) -> None:
        _check_bounds(t_min, t_max)
        self.t_min = float(t_min)
        self.t_max = float(t_max)

    def _fit(self, out: ClassifierOutputs) -> None:
        z = torch.from_numpy(np.ascontiguousarray(out.as_logits()))
        y = torch.from_numpy(out.labels)
        b = fit_inverse_temperature(z, y, 1.0 / self.t_max, 1.0 / self.t_min)
        self.log_temperature_ = float(-np.log(b))
        self.temperature_ = float(1.0 / b)

    def _transform(self, logits: F64) -> F64:
        return logits / self.temperature_


def ece_temperature_curve(
    logits: object, labels: object, temperatures: object, n_bins: int = 15
) -> F64:
    """Top-label ECE (equal-width bins) of ``softmax(logits / T)`` for every T given.

    Vectorised over temperatures in chunks; used by the grid-search calibrator and the
    ECE-vs-temperature figure.
    """
    from calibkit.outputs import as_outputs

    out = as_outputs(labels, logits=logits)
    n_bins = check_n_bins(n_bins)
    temps = np.asarray(temperatures, dtype=np.float64).reshape(-1)
    if temps.size == 0 or not np.all(np.isfinite(temps)) or temps.min() <= 0:
        raise InputError("temperatures", "a non-empty list of positive numbers", str(temps[:5]))
    z = torch.from_numpy(np.ascontiguousarray(out.as_logits(), dtype=np.float64))
    zc = z - z.max(dim=1, keepdim=True).values
    pred = torch.argmax(z, dim=1).numpy()
    correct = (pred == out.labels).astype(np.float64)
    n, k = zc.shape
    per = max(1, (1 << 22) // (n * k))
    res = np.empty(temps.shape[0])
    edges = np.arange(n_bins + 1, dtype=np.float64) / n_bins
    with torch.no_grad():
        for i in range(0, temps.shape[0], per):
            t = torch.from_numpy(temps[i : i + per])[:, None, None]
            conf = (1.0 / torch.exp(zc[None] / t).sum(dim=2)).numpy()  # (per, n)
            for j, c in enumerate(conf):
                idx = equal_width_index(c, n_bins)
                res[i + j] = error_from_stats(stats_from_index(idx, edges, n_bins, c, correct))
    return res


@register("temperature_ece")
class TemperatureScalingECE(Calibrator):
    """Temperature scaling with T chosen on a grid by the lowest calibration-set ECE."""

    maps_logits = True

    def __init__(
        self, t_min: float = 0.001, t_max: float = 5.0, t_step: float = 0.001, n_bins: int = 15
    ) -> None:
        _check_bounds(t_min, t_max)
        if not (t_step > 0 and (t_max - t_min) / t_step <= 1e6):
            raise InputError("t_step", "a positive step giving at most 1e6 grid points", str(t_step))
        self.t_min, self.t_max, self.t_step = float(t_min), float(t_max), float(t_step)
        self.n_bins = check_n_bins(n_bins)

    def grid(self) -> F64:
        """The temperatures searched."""
        count = int(np.floor((self.t_max - self.t_min) / self.t_step + 1e-9)) + 1
        return self.t_min + self.t_step * np.arange(count)

    def _fit(self, out: ClassifierOutputs) -> None:
        grid = self.grid()
        curve = ece_temperature_curve(out.as_logits(), out.labels, grid, self.n_bins)
        best = int(np.argmin(curve))  # first minimum: the smallest T among ties
        self.temperature_ = float(grid[best])
        self.log_temperature_ = float(np.log(self.temperature_))
        self.calibration_ece_ = float(curve[best])

    def _transform(self, logits: F64) -> F64:
        return logits / self.temperature_


