"""How fast each command refuses bad input: a missing file, a mistyped name, a bad value.

Each case runs ``python -m calibkit ...`` in a fresh child process (interpreter start and
imports included) and must exit 2; its wall and CPU time are set beside those of a child
that only imports torch, the cost a refusal paid when it came after the heavy imports.

    .venv/bin/python benchmarks/bench_refusals.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _bench import machine, median, table

#: Each refusal: the command line (run in a folder holding ``preds.npz``, 3 classes).
CASES = (
    ["evaluate", "nofile.npz"],
    ["compare", "nofile.npz"],
    ["conformal", "nofile.npz"],
    ["labelshift", "--cal", "nofile.npz", "--target", "preds.npz"],
    ["fit", "--method", "temperature", "nofile.npz", "-o", "x.json"],
    ["apply", "nofile.json", "preds.npz", "-o", "y.npz"],
    ["shift", "--model", "resnet20", "--weights", "nofile.pt"],
    ["study", "missing.toml"],
    ["fit", "--method", "temprature", "preds.npz", "-o", "x.json"],
    ["compare", "preds.npz", "--methods", "temprature,ms_odir"],
    ["labelshift", "--cal", "preds.npz", "--target", "preds.npz", "--priors", "0.5,0.5"],
    ["evaluate", "preds.npz", "--extra", "smooth_eci"],
    ["shift", "--model", "resnt20", "--weights", "preds.npz"],
    ["study", "--models", "mlpp", "--smoke"],
    ["evalute", "preds.npz"],
)


def child(argv: list[str], cwd: Path) -> tuple[float, float, int]:
    """Wall time (s), CPU time (s, user + system) and exit status of one child."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    return (
        time.perf_counter() - t0,
        usage.ru_utime + usage.ru_stime,
        os.waitstatus_to_exitcode(status),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        cwd = Path(folder)
        rng = np.random.default_rng(0)
        np.savez(
            cwd / "preds.npz", logits=rng.normal(size=(300, 3)), labels=rng.integers(0, 3, 300)
        )
        torch_runs = [
            child([sys.executable, "-c", "import torch"], cwd) for _ in range(args.repeats)
        ]
        torch_wall = median([w for w, _, _ in torch_runs])
        torch_cpu = median([c for _, c, _ in torch_runs])
        rows = []
        for case in CASES:
            runs = [
                child([sys.executable, "-m", "calibkit", *case], cwd) for _ in range(args.repeats)
            ]
            if any(code != 2 for _, _, code in runs):
                raise SystemExit(f"expected exit 2: calibkit {' '.join(case)}")
            wall, cpu = median([w for w, _, _ in runs]), median([c for _, c, _ in runs])
            rows.append(
                [f"`{' '.join(case)}`", f"{wall:.2f}", f"{cpu:.2f}", f"{cpu / torch_cpu:.2f}x"]
            )
    print(machine())
    print(
        f"`import torch` alone: {torch_wall:.2f} s wall, {torch_cpu:.2f} s CPU"
        f" (median of {args.repeats})\n"
    )
    print(table(["refusal", "wall (s)", "CPU (s)", "CPU / import torch"], rows))


if __name__ == "__main__":
    main()
