"""Matrix-family calibrators at 10,000 x 100: fit time with the full ODIR grid, and memory.

The issue's target: Dirichlet / MS-ODIR, including the regularisation grid (7 values,
5-fold CV, then the refit), under 10 s at 10,000 x 100 with O(N K) memory (dirichletcal
builds an N x (K+1) x (K+1) array; it needs Python >= 3.12 and cannot run here).
Temperature scaling is timed alongside as the unit. Peak memory comes from tracemalloc
(numpy allocations) over one fit.

    .venv/bin/python benchmarks/bench_linear.py [--repeats 5] [--data ../shared/data]
"""

from __future__ import annotations

import argparse
import tracemalloc
from pathlib import Path

import numpy as np
from _bench import fmt_time, interleaved, machine, median, parse_args, synthetic, table

from calibkit.calibrators import get_calibrator

ROOT = Path(__file__).resolve().parents[1]
METHODS = ("temperature", "vector", "ms_odir", "dirichlet")


def peak_bytes(method: str, z: np.ndarray, y: np.ndarray) -> int:
    tracemalloc.start()
    get_calibrator(method).fit(z, y)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    args = parse_args(ap)
    print(machine())
    cases = {"synthetic 10,000 x 100": synthetic(10_000, 100)}
    cifar = args.data / "predictions" / "cifar100_wideresnet-16-4.npz"
    if cifar.exists():
        with np.load(cifar) as f:
            cases["CIFAR-100 WRN-16-4 log-probs, 10,000 x 100"] = (
                np.log(np.maximum(f["probs"].astype(np.float64), 1e-300)),
                f["labels"],
            )
    for title, (z, y) in cases.items():
        times = interleaved(
            {m: (lambda m=m, z=z, y=y: get_calibrator(m).fit(z, y)) for m in METHODS}, args.repeats
        )
        unit = median(times["temperature"])
        input_mb = z.astype(np.float64).nbytes / 2**20
        rows = []
        for m in METHODS:
            peak = peak_bytes(m, z, y) / 2**20
            rows.append(
                [
                    m,
                    fmt_time(median(times[m])),
                    f"{median(times[m]) / unit:.1f}",
                    f"{peak:.0f} MB",
                    f"{peak / input_mb:.1f}",
                ]
            )
        print(f"\n### {title}\n")
        print(
            table(["method", "median fit", "/ temperature", "peak memory", "/ input (f64)"], rows)
        )


if __name__ == "__main__":
    main()
