"""Time of `calibkit evaluate FILE --kind logits` (every metric with its interval, noise
floors) and of the library call `calibkit.evaluate(labels, logits=z)`, against the code of an
earlier revision, in one run.

    .venv/bin/python benchmarks/bench_evaluate.py [--repeats 5] [--against 166bfda]
        [--new REV] [--quick] [--k1000]

Each shape's logits (`_bench.synthetic(n, k, temperature=1.5)`: 10,000 x 10 and 100,000 x 10;
with `--k1000` also 50,000 x 1,000) are written to a temporary .npz. The code of the working
tree (`src/`; `--new REV`: that revision's instead, so that others' uncommitted edits stay
out, or `--new DIR`: a `src` folder) and that of the revision `--against` (its `src/` from
`git archive`, in a temporary folder) then run in child processes
(`PYTHONPATH=<side>/src`), interleaved round
after round in rotating order after one untimed round:

- **CLI**: the whole command with the default 1,000 resamples (start-up, imports, reading,
  every metric, intervals, noise floors, the printed report), and with `--n-boot 0`;
- **library**: one child per side and round imports calibkit, reads the file, calls
  `calibkit.evaluate` once untimed, then once timed (the call alone).

The tables give median wall times and the children's CPU time (user + system: the machine
is shared, and CPU time moves less with the load than wall time), the ratio new / old, and
each side's peak memory (the CLI child's own maximum resident set, with 1,000 resamples).
The children inherit the thread settings (`--threads`, default the free cores).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from _bench import (
    fmt_time,
    machine,
    median_of,
    parse_args,
    revision_src,
    rounds,
    synthetic,
    table,
    timed_child,
)

ROOT = Path(__file__).resolve().parents[1]
SHAPES = ((10_000, 10), (100_000, 10))
#: The CLI child: calibkit's CLI, then its own peak memory on stderr (whatever the exit code;
#: VmHWM, not ru_maxrss, which Linux carries over from the forked parent across exec).
CLI = """import sys
try:
    from calibkit.cli import main
    code = main(sys.argv[1:])
finally:
    with open("/proc/self/status") as f:
        kb = next(line.split()[1] for line in f if line.startswith("VmHWM"))
    sys.stderr.write(f"\\nmaxrss_kb={kb}\\n")
sys.exit(code)
"""
#: The library child: one untimed call, then one timed (wall and CPU), as JSON on stdout.
LIBRARY = """import json, sys, time
import numpy as np
import calibkit
data = np.load(sys.argv[1])
z, y = data["logits"], data["labels"]
calibkit.evaluate(y, logits=z)
t0, c0 = time.perf_counter(), time.process_time()
calibkit.evaluate(y, logits=z)
print(json.dumps({"wall": time.perf_counter() - t0, "cpu": time.process_time() - c0}))
"""


def cli(src: Path, path: Path, n_boot: int) -> dict[str, float]:
    """``calibkit evaluate path --kind logits --n-boot n_boot``: wall, CPU, peak memory."""
    done, wall, cpu = timed_child(
        src, ["-c", CLI, "evaluate", str(path), "--kind", "logits", "--n-boot", str(n_boot)]
    )
    kb = int(done.stderr.rsplit("maxrss_kb=", 1)[1].split()[0])
    return {"wall": wall, "cpu": cpu, "mb": kb / 1024}


def library(src: Path, path: Path) -> dict[str, float]:
    """One timed ``calibkit.evaluate`` call (after an untimed one) in a fresh child."""
    done, _, _ = timed_child(src, ["-c", LIBRARY, str(path)])
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--against", default="166bfda", help="the revision to compare with")
    ap.add_argument("--quick", action="store_true", help="10x fewer samples (a smoke test)")
    ap.add_argument("--k1000", action="store_true", help="also 50,000 x 1,000")
    ap.add_argument("--new", default=None, help="a revision or src folder, not the working tree")
    args = parse_args(ap)
    print(machine())
    shapes = SHAPES + (((50_000, 1000),) if args.k1000 else ())
    cli_rows, lib_rows = [], []
    with contextlib.ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory())
        old = stack.enter_context(revision_src(args.against))
        if args.new is None or Path(args.new).is_dir():
            new = ROOT / "src" if args.new is None else Path(args.new)
        else:
            new = stack.enter_context(revision_src(args.new))
        sides = {"new": new, "old": old}
        for n, k in shapes:
            n = n // 10 if args.quick else n
            z, y = synthetic(n, k, temperature=1.5)
            path = Path(tmp) / f"logits_{n}x{k}.npz"
            np.savez(path, logits=z, labels=y)
            t0 = time.perf_counter()
            contenders: dict[str, Callable[[], dict[str, float]]] = {}
            for side, src in sides.items():
                for nb in (1000, 0):
                    contenders[f"{side} {nb}"] = lambda s=src, nb=nb, p=path: cli(s, p, nb)
                contenders[f"{side} lib"] = lambda s=src, p=path: library(s, p)
            runs = rounds(contenders, args.repeats)
            shape = f"{n:,} x {k}"
            for key, label in (("wall", "wall"), ("cpu", "CPU")):
                new, old_ = median_of(runs["new 1000"], key), median_of(runs["old 1000"], key)
                cli_rows.append([
                    shape, label, fmt_time(new), fmt_time(old_), f"{new / old_:.2f}",
                    fmt_time(median_of(runs["new 0"], key)),
                    fmt_time(median_of(runs["old 0"], key)),
                    f"{max(r['mb'] for r in runs['new 1000']):.0f} / "
                    f"{max(r['mb'] for r in runs['old 1000']):.0f} MB",
                ])  # fmt: skip
                new, old_ = median_of(runs["new lib"], key), median_of(runs["old lib"], key)
                lib_rows.append([shape, label, fmt_time(new), fmt_time(old_), f"{new / old_:.2f}"])
            print(f"{shape}: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    print(
        f"\n`calibkit evaluate FILE --kind logits` (1,000 resamples: the default), whole "
        f"processes, medians of {args.repeats} interleaved rounds; new = "
        f"{args.new or 'the working tree'}, old = {args.against}\n"
    )
    headers = ["shape", "time", "new", "old", "new / old", "new --n-boot 0", "old --n-boot 0",
               "peak memory new / old"]  # fmt: skip
    print(table(headers, cli_rows))
    print(
        f"\n`calibkit.evaluate(labels, logits=z)` (the library call alone, after one untimed "
        f"call), medians of {args.repeats}; old = {args.against}\n"
    )
    print(table(["shape", "time", "new", "old", "new / old"], lib_rows))


if __name__ == "__main__":
    main()
