"""Time of `calibkit evaluate FILE --kind logits` (every metric, 1,000 bootstrap resamples,
noise floors) as whole processes, against the code of an earlier revision.

    .venv/bin/python benchmarks/bench_evaluate.py [--repeats 5] [--against 4466453] [--quick]

Each shape's logits (`_bench.synthetic(n, k, temperature=1.5)`: 10,000 x 10, 100,000 x 10
and 50,000 x 1,000) are written to a temporary .npz. The code of the working tree (`src/`)
and that of the revision `--against` (a temporary `git worktree add --detach`, removed at
exit) then evaluate it in child processes (`PYTHONPATH=<side>/src`), with the default 1,000
resamples and with `--n-boot 0` (the rest of the command: reading, metrics, noise floors),
interleaved round after round in rotating order after one untimed round. The table gives
median wall times, the ratio new / old, the bootstrap's share (the difference of the two)
and each side's peak memory (the child's own maximum resident set, with 1,000 resamples).
The children inherit the thread settings (`--threads`, default the free cores).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from _bench import fmt_time, interleaved, machine, median, parse_args, synthetic, table

ROOT = Path(__file__).resolve().parents[1]
SHAPES = ((10_000, 10), (100_000, 10), (50_000, 1000))
#: The child: calibkit's CLI, then its own peak memory on stderr (whatever the exit code).
CHILD = """import resource, sys
try:
    from calibkit.cli import main
    code = main(sys.argv[1:])
finally:
    sys.stderr.write(f"\\nmaxrss_kb={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}\\n")
sys.exit(code)
"""


@contextlib.contextmanager
def worktree(rev: str, where: Path) -> Iterator[Path]:
    """The ``src`` folder of a detached worktree of ``rev`` at ``where``, removed at exit."""
    subprocess.run(
        ["git", "worktree", "add", "--detach", "-q", str(where), rev], cwd=ROOT, check=True
    )
    try:
        yield where / "src"
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(where)], cwd=ROOT, check=False)


def evaluate_once(src: Path, path: Path, n_boot: int) -> int:
    """Run ``calibkit evaluate path --kind logits --n-boot n_boot`` with ``src``'s code;
    the child's peak memory in KB."""
    env = dict(os.environ, PYTHONPATH=str(src))
    cmd = [sys.executable, "-c", CHILD, "evaluate", str(path), "--kind", "logits"]
    done = subprocess.run(
        [*cmd, "--n-boot", str(n_boot)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(f"evaluate failed ({src}): {done.stderr[-2000:]}")
    return int(done.stderr.rsplit("maxrss_kb=", 1)[1].split()[0])


def run(src: Path, path: Path, n_boot: int, memory: list[int]) -> None:
    """:func:`evaluate_once`, its peak memory kept in ``memory`` (with resamples only)."""
    kb = evaluate_once(src, path, n_boot)
    if n_boot:
        memory.append(kb)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--against", default="4466453", help="the revision to compare with")
    ap.add_argument("--quick", action="store_true", help="10x fewer samples (a smoke test)")
    args = parse_args(ap)
    print(machine())
    rows = []
    with tempfile.TemporaryDirectory() as tmp, worktree(args.against, Path(tmp) / "old") as old:
        sides = {"new": ROOT / "src", "old": old}
        for n, k in SHAPES:
            n = n // 10 if args.quick else n
            z, y = synthetic(n, k, temperature=1.5)
            path = Path(tmp) / f"logits_{n}x{k}.npz"
            np.savez(path, logits=z, labels=y)
            memory: dict[str, list[int]] = {side: [] for side in sides}

            contenders = {
                f"{side} {nb}": (lambda s=side, nb=nb, p=path, m=memory: run(sides[s], p, nb, m[s]))
                for side in sides
                for nb in (1000, 0)
            }
            t0 = time.perf_counter()
            times = {name: median(v) for name, v in interleaved(contenders, args.repeats).items()}
            boot = {side: times[f"{side} 1000"] - times[f"{side} 0"] for side in sides}
            rows.append([
                f"{n:,} x {k}",
                fmt_time(times["new 1000"]), fmt_time(times["old 1000"]),
                f"{times['new 1000'] / times['old 1000']:.2f}",
                fmt_time(times["new 0"]), fmt_time(times["old 0"]),
                fmt_time(boot["new"]), fmt_time(boot["old"]), f"{boot['new'] / boot['old']:.2f}",
                f"{max(memory['new']) / 1024:.0f} / {max(memory['old']) / 1024:.0f} MB",
            ])  # fmt: skip
            print(f"{n:,} x {k}: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    print(f"\n`calibkit evaluate FILE --kind logits`, whole processes, medians of {args.repeats} "
          f"interleaved rounds; old = {args.against}\n")  # fmt: skip
    headers = ["shape", "new", "old", "new / old", "new --n-boot 0", "old --n-boot 0",
               "bootstrap new", "bootstrap old", "new / old", "peak memory new / old"]  # fmt: skip
    print(table(headers, rows))


if __name__ == "__main__":
    main()
