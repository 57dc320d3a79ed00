"""Time of `calibkit.metrics.evaluate` (every metric, 1,000 bootstrap resamples, noise floors).

The per-replicate cost of the bootstrap (drawing the resample included) is reported against
one weighted `MetricSuite.compute` (every metric once, drawing excluded): the ratio says what
evaluating blocks of replicates at once saves (used up to 30,000 samples).

    .venv/bin/python benchmarks/bench_evaluate.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _bench import fmt_time, machine, median, parse_args, synthetic, table

from calibkit.core.outputs import as_outputs
from calibkit.metrics import MetricSuite, evaluate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=3)
    args = parse_args(ap)
    print(machine())
    rows = []
    for n, k in ((5_000, 10), (10_000, 100), (100_000, 10)):
        z, y = synthetic(n, k, temperature=1.5)
        suite = MetricSuite.from_outputs(as_outputs(y, logits=z))
        full, boot, once = [], [], []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            evaluate(y, logits=z, n_boot=1000)
            full.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            suite.bootstrap(200)
            boot.append((time.perf_counter() - t0) / 200)
            w = np.bincount(np.random.default_rng(0).integers(0, n, n), minlength=n).astype(float)
            t0 = time.perf_counter()
            suite.compute(w)
            once.append(time.perf_counter() - t0)
        rows.append([
            f"{n:,} x {k}", fmt_time(median(full)), fmt_time(median(boot)),
            fmt_time(median(once)), f"{median(once) / median(boot):.1f}x",
        ])  # fmt: skip
    print()
    print(table(["shape", "evaluate (1,000 resamples)", "per replicate", "one weighted compute()",
                 "saving"], rows))  # fmt: skip


if __name__ == "__main__":
    main()
