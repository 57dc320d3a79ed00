"""Temperature scaling: the NLL fit against scipy, torch LBFGS and scikit-learn; grid search.

    .venv/bin/python benchmarks/bench_temperature.py [--repeats 3] [--quick] [--threads N]
        [--only fit|grid]

Fit: float32 logits whose labels are drawn from softmax(logits / 2), so the optimum T is
about 2. The reference optimum T_ref is scipy's bounded Brent on the full-array float64
NLL in log T with ``xatol=1e-10`` (run once; scipy is also timed with its default xatol);
every method's T is compared with it. Targets: calibkit under 1 s
at 50,000 x 1,000 and under 0.3 s at 1,000,000 x 10.

Grid search: ``TemperatureScalingECE`` (5,000 temperatures 0.001..5) against the obvious
loop of ``calibkit.metrics.ece(labels, logits=z / T)``, timed on every 50th temperature and
scaled by 50 (marked "extrapolated"); the two curves are compared at those temperatures.
"""

from __future__ import annotations

import argparse
import math
import warnings
from collections.abc import Callable

import numpy as np
import torch
from _bench import fmt_time, interleaved, machine, median, parse_args, synthetic, table
from scipy.optimize import minimize_scalar
from scipy.special import logsumexp

from calibkit.calibrators import TemperatureScaling, TemperatureScalingECE, ece_temperature_curve
from calibkit.metrics import ece

FIT_SHAPES = [(50_000, 1_000), (1_000_000, 10)]
QUICK_FIT_SHAPES = [(5_000, 1_000), (100_000, 10)]
GRID_SHAPES = [(5_000, 10), (10_000, 100)]
QUICK_GRID_SHAPES = [(1_000, 10), (2_000, 100)]


def scipy_brent(z: np.ndarray, y: np.ndarray, xatol: float = 1e-5) -> float:
    """T by bounded Brent on the full-array float64 NLL in log T, in [0.1, 10]."""
    z64 = z.astype(np.float64)
    zy = z64[np.arange(z.shape[0]), y]

    def nll(log_t: float) -> float:
        inv = math.exp(-log_t)
        return float(np.mean(logsumexp(z64 * inv, axis=1) - zy * inv))

    res = minimize_scalar(
        nll, bounds=(math.log(0.1), math.log(10.0)), method="bounded", options={"xatol": xatol}
    )
    return math.exp(res.x)


def torch_lbfgs(z: np.ndarray, y: np.ndarray) -> float:
    """T by torch LBFGS (strong Wolfe line search) on log T, float32 logits."""
    zt, yt = torch.from_numpy(z), torch.from_numpy(y)
    log_t = torch.zeros(1, requires_grad=True)
    opt = torch.optim.LBFGS(
        [log_t],
        lr=1.0,
        max_iter=100,
        tolerance_grad=1e-9,
        tolerance_change=1e-12,
        line_search_fn="strong_wolfe",
    )

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(zt / log_t.exp(), yt)
        loss.backward()
        return loss

    opt.step(closure)
    return float(log_t.exp())


def sklearn_ts(z: np.ndarray, y: np.ndarray) -> float:
    """T from scikit-learn's CalibratedClassifierCV(method="temperature") on frozen logits."""
    from sklearn.base import BaseEstimator, ClassifierMixin
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.frozen import FrozenEstimator

    class Logits(ClassifierMixin, BaseEstimator):
        """A 'model' whose decision function is its input: the logits themselves."""

        def fit(self, x: np.ndarray, labels: np.ndarray) -> Logits:
            self.classes_ = np.unique(labels)
            return self

        def decision_function(self, x: np.ndarray) -> np.ndarray:
            return x

        def predict(self, x: np.ndarray) -> np.ndarray:
            return np.asarray(x).argmax(axis=1)

    model = FrozenEstimator(Logits().fit(z, y))
    cal = CalibratedClassifierCV(model, method="temperature").fit(z, y)
    return float(1.0 / cal.calibrated_classifiers_[0].calibrators[0].beta_)


def fit_shape(n: int, k: int, repeats: int) -> str:
    z, y = synthetic(n, k, temperature=2.0)
    found: dict[str, float] = {}

    def keep(name: str, fn: Callable[[], float]) -> Callable[[], None]:
        def run() -> None:
            found[name] = fn()

        return run

    ours_name = "calibkit TemperatureScaling"
    contenders = {
        ours_name: keep(ours_name, lambda: TemperatureScaling().fit(z, y).temperature_),
        "scipy bounded Brent (default xatol)": keep(
            "scipy bounded Brent (default xatol)", lambda: scipy_brent(z, y)
        ),
        "torch LBFGS on log T": keep("torch LBFGS on log T", lambda: torch_lbfgs(z, y)),
        "scikit-learn (temperature)": keep("scikit-learn (temperature)", lambda: sklearn_ts(z, y)),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        times = interleaved(contenders, repeats, warm=[ours_name])
        # the reference optimum: one run, tight tolerance
        ref_name = "scipy bounded Brent, xatol=1e-10 (T_ref, 1 run)"
        times[ref_name] = interleaved(
            {ref_name: keep(ref_name, lambda: scipy_brent(z, y, 1e-10))}, 1, warm=[]
        )[ref_name]
    ours = median(times[ours_name])
    ref = found[ref_name]
    rows = [
        [
            name,
            fmt_time(median(ts)),
            f"{median(ts) / ours:.1f}x",
            f"{found[name]:.9f}",
            f"{abs(found[name] / ref - 1):.1e}",
        ]
        for name, ts in times.items()
    ]
    head = f"### Temperature fit (NLL), {n:,} x {k:,} float32 (median of {repeats})\n\n"
    return head + table(["method", "median", "time / calibkit", "T", "relative gap to T_ref"], rows)


def grid_shape(n: int, k: int, repeats: int) -> str:
    z, y = synthetic(n, k, temperature=2.0, seed=1)
    cal = TemperatureScalingECE()
    grid = cal.grid()
    sub = grid[::50]
    z64 = z.astype(np.float64)

    def naive() -> np.ndarray:
        return np.array([ece(y, logits=z64 / t) for t in sub])

    contenders = {
        "calibkit TemperatureScalingECE.fit": lambda: cal.fit(z, y),
        "loop of calibkit ece(logits=z / T)": naive,
    }
    times = interleaved(contenders, repeats)
    gap = float(np.max(np.abs(ece_temperature_curve(z, y, sub) - naive())))
    ours = median(times["calibkit TemperatureScalingECE.fit"])
    loop = median(times["loop of calibkit ece(logits=z / T)"]) * grid.shape[0] / sub.shape[0]
    rows = [
        ["calibkit TemperatureScalingECE.fit", fmt_time(ours), "1.0x", f"{cal.temperature_:.3f}"],
        [
            f"loop of ece(logits=z / T), {sub.shape[0]} T x {grid.shape[0] // sub.shape[0]}"
            " (extrapolated)",
            fmt_time(loop),
            f"{loop / ours:.0f}x",
            "",
        ],
    ]
    head = (
        f"### Grid-search TS ({grid.shape[0]:,} temperatures), {n:,} x {k:,} "
        f"(median of {repeats}); max |curve - loop| = {gap:.1e}\n\n"
    )
    return head + table(["method", "median", "time / calibkit", "T"], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="timed rounds (default 3)")
    parser.add_argument("--quick", action="store_true", help="10x smaller fit shapes")
    parser.add_argument("--only", choices=["fit", "grid"], help="run one section")
    args = parse_args(parser)
    print(f"Machine: {machine()}\n")
    if args.only in (None, "fit"):
        for n, k in QUICK_FIT_SHAPES if args.quick else FIT_SHAPES:
            print(fit_shape(n, k, args.repeats), end="\n\n", flush=True)
    if args.only in (None, "grid"):
        for n, k in QUICK_GRID_SHAPES if args.quick else GRID_SHAPES:
            print(grid_shape(n, k, args.repeats), end="\n\n", flush=True)


if __name__ == "__main__":
    main()
