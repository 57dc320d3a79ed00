"""Start-up of the commands that need no torch: `calibkit --version`, `methods`, and `fit` /
`apply` of temperature scaling, as whole processes, against the code of an earlier revision.

    .venv/bin/python benchmarks/bench_startup.py [--repeats 5] [--against 3a59dcf]

Each command runs in a child process (`python -c CHILD ARGS`, `PYTHONPATH=<side>/src`, in a
temporary folder holding a 1,000 x 10 `preds.npz` of logits), for the working tree (`new`)
and for the revision `--against` (`old`: its `src` from `git archive`, removed
at exit), interleaved round after round in rotating order after one untimed round. The
table gives median wall times, the ratio new / old and whether the child imported torch
(issue #46, item 11: `methods` and `fit` / `apply` of a numpy-only calibrator imported
torch, about 5 s of each command on a busy 2-core machine).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from _bench import fmt_time, interleaved, machine, median, revision_src, synthetic, table

ROOT = Path(__file__).resolve().parents[1]
#: The child: calibkit's CLI quietly, then whether torch was imported (on stderr).
CHILD = """import contextlib, io, sys
from calibkit.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main(sys.argv[1:])
sys.stderr.write(f"\\ntorch={'torch' in sys.modules}\\n")
sys.exit(code)
"""
COMMANDS = {
    "--version": ["--version"],
    "methods": ["methods"],
    "fit --method temperature": ["fit", "--method", "temperature", "preds.npz", "-o", "t.json"],
    "apply": ["apply", "t.json", "preds.npz", "-o", "c.npz"],
}


def once(src: Path, argv: list[str], cwd: Path, torch_seen: dict[str, bool], key: str) -> None:
    """Run ``calibkit ARGV`` with ``src``'s code in ``cwd``; note whether it imported torch."""
    env = dict(os.environ, PYTHONPATH=str(src))
    extra = ["--force"] if argv[0] in ("fit", "apply") else []
    done = subprocess.run(
        [sys.executable, "-c", CHILD, *argv, *extra],
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(f"calibkit {' '.join(argv)} failed ({src}): {done.stderr[-2000:]}")
    torch_seen[key] = "torch=True" in done.stderr


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--against", default="3a59dcf", help="the revision to compare with")
    args = ap.parse_args()
    print(machine())
    with tempfile.TemporaryDirectory() as tmp, revision_src(args.against) as old:
        cwd = Path(tmp) / "run"
        cwd.mkdir()
        z, y = synthetic(1000, 10)
        np.savez(cwd / "preds.npz", logits=z, labels=y)
        sides = {"new": ROOT / "src", "old": old}
        seen: dict[str, bool] = {}
        contenders = {
            f"{side} {name}": (
                lambda s=sides[side], a=argv, k=f"{side} {name}": once(s, a, cwd, seen, k)
            )
            for name, argv in COMMANDS.items()
            for side in sides
        }
        times = {name: median(v) for name, v in interleaved(contenders, args.repeats).items()}
    rows = [
        [
            f"`calibkit {name}`",
            fmt_time(times[f"new {name}"]),
            fmt_time(times[f"old {name}"]),
            f"{times[f'new {name}'] / times[f'old {name}']:.2f}",
            "yes" if seen[f"new {name}"] else "no",
            "yes" if seen[f"old {name}"] else "no",
        ]
        for name in COMMANDS
    ]
    print(
        f"\nwhole processes, medians of {args.repeats} interleaved rounds; old = {args.against}\n"
    )
    headers = ["command", "new", "old", "new / old", "torch new", "torch old"]
    print(table(headers, rows))


if __name__ == "__main__":
    main()
