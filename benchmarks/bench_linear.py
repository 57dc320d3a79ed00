"""Matrix-family calibrators at 10,000 x 100: fit time with the full ODIR grid, and memory;
then the structured scalings against probmetrics on the CIFAR-100 file's compare split.

The issue's targets: Dirichlet / MS-ODIR, including the regularisation grid (7 values,
5-fold CV, then the refit), under 10 s at 10,000 x 100 with O(N K) memory (dirichletcal
builds an N x (K+1) x (K+1) array; it needs Python >= 3.12 and cannot run here); and (issue
15) a matrix-family method at least as fast and as good as probmetrics' structured matrix
scaling. Temperature scaling is timed alongside as the unit. Peak memory comes from
tracemalloc (numpy allocations) over one fit; probmetrics' torch tensors are not traced.

The second part splits ``cifar100_wideresnet-16-4.npz`` 5,000 / 5,000 as ``compare`` does
(seed 0), fits every method on the first half (probmetrics gets the probabilities) and
reports the fit time (median, interleaved), its ratio to probmetrics' SMS, and the test
NLL and ECE (15 equal-width bins).

    .venv/bin/python benchmarks/bench_linear.py [--repeats 5] [--data ../shared/data]
"""

from __future__ import annotations

import argparse
import logging
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import numpy as np
from _bench import fmt_time, interleaved, machine, median, parse_args, synthetic, table

from calibkit.calibrators import create_calibrator
from calibkit.io.predictions import load_predictions
from calibkit.metrics import ece, nll
from calibkit.workflows.compare import split_outputs

ROOT = Path(__file__).resolve().parents[1]
METHODS = ("temperature", "vector", "ms_odir", "dirichlet", "sms", "sms_cv")
STRUCTURED = ("temperature_smoothed", "svs", "sms", "sms_cv", "ms_odir", "dirichlet")


def peak_bytes(fit: Callable[[], object]) -> int:
    tracemalloc.start()
    fit()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def fit_times(cases: dict[str, tuple[np.ndarray, np.ndarray]], repeats: int) -> None:
    for title, (z, y) in cases.items():
        times = interleaved(
            {m: (lambda m=m, z=z, y=y: create_calibrator(m).fit(z, y)) for m in METHODS}, repeats
        )
        unit = median(times["temperature"])
        input_mb = z.astype(np.float64).nbytes / 2**20
        rows = []
        for m in METHODS:
            peak = peak_bytes(lambda m=m, z=z, y=y: create_calibrator(m).fit(z, y)) / 2**20
            t = median(times[m])
            rows.append(
                [m, fmt_time(t), f"{t / unit:.1f}", f"{peak:.0f} MB", f"{peak / input_mb:.1f}"]
            )
        print(f"\n### {title}\n")
        print(
            table(["method", "median fit", "/ temperature", "peak memory", "/ input (f64)"], rows)
        )


def probmetrics_fits() -> dict[str, Callable[[np.ndarray, np.ndarray], object]]:
    """probmetrics' SMS, SVS and ts-mix (fitted on probabilities), if it is installed."""
    try:
        from probmetrics.calibrators import SMSCalibrator, SVSCalibrator
        from probmetrics.calibrators import get_calibrator as pm
    except ImportError:
        return {}
    logging.getLogger("probmetrics").setLevel(logging.WARNING)
    return {
        "probmetrics sms": lambda p, y: SMSCalibrator(print_init_info=False).fit(p, y),
        "probmetrics svs": lambda p, y: SVSCalibrator(print_init_info=False).fit(p, y),
        "probmetrics ts-mix": lambda p, y: pm("ts-mix").fit(p, y),
    }


def against_probmetrics(path: Path, repeats: int) -> None:
    cal, test = split_outputs(load_predictions(path), 5000, seed=0)
    zc, yc, zt, yt = cal.as_logits(), cal.labels, test.as_logits(), test.labels
    pc, pt = np.exp(zc - zc.max(1, keepdims=True)), np.exp(zt - zt.max(1, keepdims=True))
    pc, pt = pc / pc.sum(1, keepdims=True), pt / pt.sum(1, keepdims=True)
    fits: dict[str, Callable[[], object]] = {
        m: (lambda m=m: create_calibrator(m).fit(zc, yc)) for m in STRUCTURED
    }
    theirs = probmetrics_fits()
    fits |= {name: (lambda f=f: f(pc, yc)) for name, f in theirs.items()}
    times = interleaved(fits, repeats)
    unit = median(times["probmetrics sms"]) if theirs else None
    rows = []
    for name, fit in fits.items():
        model = fit()
        probs = model.predict_proba(pt if name in theirs else zt)  # type: ignore[attr-defined]
        peak = peak_bytes(fit) / 2**20
        t = median(times[name])
        ratio = "–" if unit is None else f"{t / unit:.2f}"
        values = [f"{float(nll(yt, probs=probs)):.4f}", f"{100 * float(ece(yt, probs=probs)):.2f}"]
        rows.append([name, fmt_time(t), ratio, f"{peak:.0f} MB", *values])
    print(f"\n### {path.name}, compare's 5,000 / 5,000 split (seed 0)\n")
    headers = ["method", "median fit", "/ probmetrics sms", "peak memory", "test NLL", "test ECE %"]
    print(table(headers, rows))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--only-split", action="store_true", help="skip the 10,000 x 100 fit times")
    args = parse_args(ap)
    print(machine())
    cifar = args.data / "predictions" / "cifar100_wideresnet-16-4.npz"
    if not args.only_split:
        cases = {"synthetic 10,000 x 100": synthetic(10_000, 100)}
        if cifar.exists():
            with np.load(cifar) as f:
                cases["CIFAR-100 WRN-16-4 log-probs, 10,000 x 100"] = (
                    np.log(np.maximum(f["probs"].astype(np.float64), 1e-300)),
                    f["labels"],
                )
        fit_times(cases, args.repeats)
    if cifar.exists():
        against_probmetrics(cifar, args.repeats)


if __name__ == "__main__":
    main()
