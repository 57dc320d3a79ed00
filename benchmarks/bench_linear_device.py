"""The matrix family fitted on a torch device at ImageNet's size (issue 47): each method's
fit time against temperature scaling's in the same run, and its held-out NLL.

Synthetic logits (``_bench.synthetic(2 * rows, classes, temperature=2)``, float64): the
first half fits, the second half scores. Each method is fitted as ``compare`` fits it
(``create_calibrator(name)``, its default search) with ``device=DEVICE`` (default ``auto``:
CUDA when this machine has it); temperature scaling (numpy, no device) is the unit. With
``--numpy`` each method is also fitted with numpy (``device=None``, the default) in the
same process, interleaved, and the table gives the ratio and the largest difference between
the two fits' held-out probabilities. A first small fit on the device (CUDA's start-up) is
not timed.

``--optimiser`` times the optimisers alone instead: an iteration of scipy's L-BFGS-B on the
CPU (``linear_solver._lbfgs``, what the numpy path runs) against one of torch's L-BFGS on
the device (``linear_device.minimize``, what a full map's fit there runs), each with a full
map's ``K (K + 1)`` variables on a convex quadratic whose own cost is negligible.

    .venv/bin/python benchmarks/bench_linear_device.py [--device cuda] [--rows 50000]
        [--classes 1000] [--methods vector,ms_odir,dirichlet,sms] [--repeats 1] [--numpy]
        [--json FILE]
    .venv/bin/python benchmarks/bench_linear_device.py --optimiser [--device cuda]
        [--classes 1000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from _bench import interleaved, median, synthetic

from calibkit.calibrators import create_calibrator
from calibkit.core.devices import resolve_device
from calibkit.metrics import nll

#: The matrix family of issue 47 (vector, MS-ODIR, Dirichlet, structured matrix scaling).
METHODS = ("vector", "ms_odir", "dirichlet", "sms")


def fitter(
    name: str, device: str | None, z: np.ndarray, y: np.ndarray, fits: dict[str, object], key: str
) -> Callable[[], None]:
    """A fit of ``name`` on ``(z, y)`` (on ``device``; ``None``: numpy) kept in ``fits[key]``."""

    def fit() -> None:
        params = {} if device is None else {"device": device}
        fits[key] = create_calibrator(name, **params).fit(z, y)

    return fit


def optimisers(device: torch.device, k: int, repeats: int, iterations: int = 20) -> None:
    """Print the time per iteration of the two L-BFGS (module docstring, ``--optimiser``)."""
    from calibkit.calibrators.logit.linear_device import minimize
    from calibkit.calibrators.logit.linear_solver import _lbfgs

    n = k * (k + 1)
    curv = np.random.default_rng(0).uniform(0.5, 2.0, n)
    curv_t = torch.from_numpy(curv).to(device)

    def quadratic(u: np.ndarray) -> tuple[float, np.ndarray]:
        return float(0.5 * curv @ (u * u) - u.sum()), curv * u - 1.0

    def quadratic_t(u: torch.Tensor) -> tuple[float, torch.Tensor]:
        return float(0.5 * curv_t @ (u * u) - u.sum()), curv_t * u - 1.0

    contenders = {
        "scipy": lambda: _lbfgs(quadratic, n, iterations, 1e-30),
        "torch": lambda: minimize(quadratic_t, n, iterations, 1e-30, device),
    }
    times = interleaved(contenders, repeats)
    per = {name: median(t) / iterations for name, t in times.items()}
    print(
        f"### L-BFGS at {n:,} variables ({k:,} classes), {iterations} iterations, median of "
        f"{repeats}\n\n| optimiser | per iteration |\n|---|---|\n"
        f"| scipy L-BFGS-B on the CPU | {1000 * per['scipy']:.1f} ms |\n"
        f"| torch L-BFGS on {device} | {1000 * per['torch']:.1f} ms |\n\n"
        f"scipy / torch: {per['scipy'] / per['torch']:.1f}x"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="auto", help="cuda, cuda:N, cpu or auto")
    ap.add_argument("--rows", type=int, default=50_000, help="calibration rows")
    ap.add_argument("--classes", type=int, default=1000)
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--numpy", action="store_true", help="also fit each with numpy")
    ap.add_argument("--json", type=Path, help="also write the results here")
    ap.add_argument("--optimiser", action="store_true", help="time the two L-BFGS alone")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    device = resolve_device(args.device)
    if args.optimiser:
        optimisers(device, args.classes, args.repeats)
        return
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "the CPU"
    z32, y = synthetic(2 * args.rows, args.classes, temperature=2)
    z = z32.astype(np.float64)
    fit_z, fit_y, test_z, test_y = z[: args.rows], y[: args.rows], z[args.rows :], y[args.rows :]
    methods = [m for m in args.methods.split(",") if m]
    warm_z, warm_y = synthetic(2000, 50, temperature=2)
    create_calibrator("dirichlet", device=str(device)).fit(warm_z.astype(np.float64), warm_y)

    fits: dict[str, object] = {}
    contenders = {"temperature": fitter("temperature", None, fit_z, fit_y, fits, "temperature")}
    for m in methods:
        key = f"{m} on {device}"
        contenders[key] = fitter(m, str(device), fit_z, fit_y, fits, key)
        if args.numpy:
            contenders[f"{m} numpy"] = fitter(m, None, fit_z, fit_y, fits, f"{m} numpy")
    t0 = time.perf_counter()
    times = interleaved(contenders, args.repeats, warm=())
    wall = time.perf_counter() - t0

    ts = median(times["temperature"])
    rows: list[dict[str, object]] = []
    header = (
        f"### Matrix family on {name} (torch {torch.__version__}), {args.rows:,} x "
        f"{args.classes:,} synthetic logits, median of {args.repeats}"
    )
    cols = ["method", "fit on the device", "x TS", "held-out NLL"]
    if args.numpy:
        cols += ["numpy fit", "numpy / device", "max |p_device - p_numpy|"]
    lines = [header, "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    ts_nll = nll(test_y, fits["temperature"].predict_proba(test_z))  # type: ignore[attr-defined]
    lines.append(f"| temperature (numpy: the unit) | {ts:.3f} s | 1.0 | {ts_nll:.4f} |")
    rows.append({"method": "temperature", "seconds": ts, "nll": ts_nll})
    for m in methods:
        key = f"{m} on {device}"
        s = median(times[key])
        p = fits[key].predict_proba(test_z)  # type: ignore[attr-defined]
        row: dict[str, object] = {"method": m, "seconds": s, "x_ts": s / ts, "nll": nll(test_y, p)}
        cells = [m, f"{s:.2f} s", f"{s / ts:.1f}", f"{row['nll']:.4f}"]
        if args.numpy:
            s_np = median(times[f"{m} numpy"])
            p_np = fits[f"{m} numpy"].predict_proba(test_z)  # type: ignore[attr-defined]
            row |= {"numpy_seconds": s_np, "max_abs_diff": float(np.abs(p - p_np).max())}
            cells += [f"{s_np:.2f} s", f"{s_np / s:.1f}", f"{row['max_abs_diff']:.1e}"]
        rows.append(row)
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"(all fits: {wall:.0f} s wall)"]
    print("\n".join(lines))
    if args.json is not None:
        doc = {"device": name, "rows": args.rows, "classes": args.classes, "results": rows}
        args.json.write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
