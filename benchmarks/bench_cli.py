"""End-to-end time and peak memory of the everyday commands, as a user runs them.

Each command runs in a fresh child process (``python -m calibkit ...``), so the times include
the interpreter start, the imports, reading the file, 1,000 bootstrap resamples (the default)
and drawing the figures. Peak memory is the child's maximum resident set size
(``ru_maxrss`` of the ``resource`` usage that ``os.wait4`` returns for that child alone).

    .venv/bin/python benchmarks/bench_cli.py [--repeats 3] [--only evaluate|compare] [--quick]
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
from _bench import fmt_time, machine, median, synthetic, table

#: (command, samples, classes, target seconds)
CASES = (
    ("evaluate", 10_000, 10, 2.0),
    ("evaluate", 100_000, 10, 2.0),
    ("evaluate", 50_000, 1_000, 5.0),
    ("compare", 10_000, 10, 10.0),
    ("compare", 10_000, 100, 30.0),
)


def run_child(argv: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """Wall time (s), peak resident memory (MB) and CPU time (s, user + system) of one
    ``python -m calibkit`` child. On a machine shared with other jobs the CPU time is the
    steadier figure: the wall time adds every wait for a core."""
    cmd = [sys.executable, "-m", "calibkit", *argv]
    t0 = time.perf_counter()
    pid = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE).pid
    _, status, usage = os.wait4(pid, 0)
    seconds = time.perf_counter() - t0
    if status != 0:
        raise SystemExit(f"failed ({status}): {' '.join(cmd)}")
    return seconds, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime  # maxrss: KiB


def command(name: str, data: Path, out: Path) -> list[str]:
    if name == "evaluate":
        return ["evaluate", str(data), "--plot", str(out / "x.png"), "--force"]
    return ["compare", str(data), "--out", str(out / "report")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", choices=("evaluate", "compare"), default=None)
    ap.add_argument("--quick", action="store_true", help="10x fewer samples")
    args = ap.parse_args()
    print(machine())
    env = dict(os.environ, MPLBACKEND="Agg")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, n, k, target in CASES:
            if args.only not in (None, name):
                continue
            n = n // 10 if args.quick else n
            z, y = synthetic(n, k, temperature=1.5)
            data = Path(tmp) / f"synthetic_{n}x{k}.npz"
            np.savez(data, logits=z, labels=y)
            runs = [run_child(command(name, data, Path(tmp)), env) for _ in range(args.repeats)]
            seconds = median([r[0] for r in runs])
            peak = max(r[1] for r in runs)
            cpu = median([r[2] for r in runs])
            met = "yes" if seconds < target and (k < 1_000 or peak < 1024) else "no"
            rows.append([
                f"`{name}`", f"{n:,} x {k}", fmt_time(seconds), fmt_time(cpu), f"{peak:,.0f} MB",
                f"< {target:.0f} s" + (", < 1 GB" if k >= 1_000 else ""), met,
            ])  # fmt: skip
            line = f"{name} {n:,} x {k}: {fmt_time(seconds)}, CPU {fmt_time(cpu)}, {peak:,.0f} MB"
            print(line, file=sys.stderr)
    print()
    head = ["command", "shape", "median wall time", "median CPU time", "peak memory", "target"]
    print(table([*head, "met?"], rows))
    print(f"\n{args.repeats} runs each; peak memory is the largest of the runs' max RSS.")


if __name__ == "__main__":
    main()
