"""Whole ``calibkit compare`` runs, the current code against the code before issue 31 (REV).

Each run is a child process (``python -m calibkit compare FILE --out DIR``: interpreter
start, imports, reading, every row with 1,000 bootstrap resamples, the recommendation, the
figures and the report), timed by the wall clock, its peak memory the child's own maximum
resident set size (``os.wait4``). REV's source is extracted from git (``git archive``, into
a temporary folder removed at exit) and run with ``PYTHONPATH`` on it; the current code is
this checkout's ``src``. Each repeat runs both, in rotating order, so their ratio shares the
machine's noise. REV is capped (``--rev-timeout``): at 1,000 classes it does not finish in
25 minutes, shown as "> T s (not finished)".

Cases: the CIFAR-100 WRN file of ``../shared/data`` (10,000 x 100 probabilities; skipped
when absent) and seeded synthetic logits, 50,000 x 1,000 (``_bench.synthetic``, T = 2).
The current code's progress log (stderr) is cut into phases at its landmark lines (the
uncalibrated row, each method's row, the ECE-vs-temperature curve, the recommendation, the
figures, the writing) and each phase's time is printed beside REV's where REV says the same.
A phase whose progress lines start only after 2 s (the figures, a judged row) is counted in
the phase before it when it is shorter than that.

    .venv/bin/python benchmarks/bench_compare.py [--repeats 1] [--quick] [--only cifar100|k1000]
        [--methods A,B] [--rev-timeout 300] [--no-rev]

``--quick``: 10,000 x 1,000 instead of 50,000 x 1,000 (the CIFAR-100 case unchanged).
``--methods``: passed to every run (e.g. the methods fast today, while others are reworked).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from _bench import fmt_time, machine, median, synthetic, table

REV = "4466453"
ROOT = Path(__file__).resolve().parent.parent
CIFAR100 = ROOT / ".." / "shared" / "data" / "predictions" / "cifar100_wideresnet-16-4.npz"

#: Landmark lines of the progress log -> the phase they begin (``{1}``: the method).
LANDMARKS = (
    (re.compile(r"evaluating the uncalibrated model"), "row none"),
    (re.compile(r"\[\d+/\d+\] fitting (\S+)"), "row {1}"),
    (re.compile(r"\[\d+/\d+\] (\S+): the same map as"), "row {1} (reused)"),
    (re.compile(r"ECE at \d+ temperatures \(its figure\)"), "ECE-vs-temperature curve"),
    (re.compile(r"choosing among"), "recommendation (auto)"),
    (re.compile(r"drawing \d+ figures"), "figures"),
    (re.compile(r"writing the report"), "writing the report, exit"),
)


class Run:
    """One child: wall time, peak memory, whether it finished, its stamped stderr lines."""

    def __init__(
        self, seconds: float, peak_mb: float, finished: bool, lines: list[tuple[float, str]]
    ):
        self.seconds, self.peak_mb, self.finished, self.lines = seconds, peak_mb, finished, lines

    def phases(self) -> dict[str, float]:
        """Seconds of each phase: from its landmark line to the next (start-up before the
        first; the last one to the end of the run)."""
        marks: list[tuple[float, str]] = [(0.0, "start-up, reading, split")]
        for at, line in self.lines:
            for pattern, label in LANDMARKS:
                m = pattern.search(line)
                if m is not None and not (label == "figures" and marks[-1][1] == "figures"):
                    marks.append((at, label.replace("{1}", m.group(1) if m.groups() else "")))
                    break
        res: dict[str, float] = {}
        ends = [at for at, _ in marks[1:]] + [self.seconds]
        for (at, label), end in zip(marks, ends, strict=True):
            res[label] = res.get(label, 0.0) + end - at
        return res


def run_child(argv: list[str], src: Path, timeout: float | None) -> Run:
    """``python -m calibkit <argv>`` with ``src`` first on the path; killed after ``timeout``."""
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONPATH=str(src))
    cmd = [sys.executable, "-m", "calibkit", *argv]
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    lines: list[tuple[float, str]] = []

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append((time.perf_counter() - t0, line.rstrip("\n")))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    finished = True
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if timeout is not None and time.perf_counter() - t0 > timeout:
            os.killpg(proc.pid, signal.SIGKILL)
            _, status, usage = os.wait4(proc.pid, 0)
            finished = False
            break
        time.sleep(0.05)
    seconds = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    reader.join(timeout=5)
    if finished and proc.returncode != 0:
        tail = "\n".join(line for _, line in lines[-5:])
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{tail}")
    return Run(seconds, usage.ru_maxrss / 1024, finished, lines)  # ru_maxrss: KiB


def rev_source(folder: Path) -> Path:
    """REV's ``src`` extracted from git into ``folder`` (no worktree to prune afterwards)."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", REV, "src"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder / "src"


def show_time(run: Run) -> str:
    return fmt_time(run.seconds) if run.finished else f"> {run.seconds:.0f} s (not finished)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="10,000 x 1,000 instead of 50,000")
    ap.add_argument("--only", choices=("cifar100", "k1000"), default=None)
    ap.add_argument("--methods", default=None, help="--methods for every run")
    ap.add_argument(
        "--rev-timeout", type=float, default=300.0, help="REV's cap (s) at 1,000 classes"
    )
    ap.add_argument("--no-rev", action="store_true", help="the current code only")
    args = ap.parse_args()
    print(machine())
    extra = [] if args.methods is None else ["--methods", args.methods]
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        cases: list[tuple[str, Path, float | None]] = []
        if args.only in (None, "cifar100"):
            if CIFAR100.exists():
                cases.append(("CIFAR-100 WRN 10,000 x 100 (probs)", CIFAR100.resolve(), None))
            else:
                print(f"skipped: {CIFAR100} is absent", file=sys.stderr)
        if args.only in (None, "k1000"):
            n = 10_000 if args.quick else 50_000
            z, y = synthetic(n, 1_000, temperature=2.0)
            data = tmp / f"synthetic_{n}x1000.npz"
            np.savez(data, logits=z, labels=y)
            del z, y
            cases.append((f"synthetic {n:,} x 1,000 (logits)", data, args.rev_timeout))
        contenders = {"current": ROOT / "src"}
        if not args.no_rev:
            (tmp / "rev").mkdir()
            contenders["REV " + REV] = rev_source(tmp / "rev")
        rows, breakdowns = [], []
        for label, data, cap in cases:
            runs: dict[str, list[Run]] = {name: [] for name in contenders}
            names = list(contenders)
            for r in range(args.repeats):
                for name in names[r % len(names) :] + names[: r % len(names)]:
                    out = tmp / f"report_{len(rows)}_{r}_{name.split()[0]}"
                    timeout = cap if name != "current" else None
                    run = run_child(
                        ["compare", str(data), "--out", str(out), *extra], contenders[name], timeout
                    )
                    runs[name].append(run)
                    print(
                        f"{label}, {name}: {show_time(run)}, {run.peak_mb:,.0f} MB", file=sys.stderr
                    )
            cur = runs["current"]
            cur_s = median([x.seconds for x in cur])
            for name, done in runs.items():
                finished = all(x.finished for x in done)
                secs = median([x.seconds for x in done])
                ratio = (
                    ""
                    if name == "current"
                    else (f"{secs / cur_s:.1f}x" if finished else f"> {secs / cur_s:.1f}x")
                )
                shown = fmt_time(secs) if finished else f"> {secs:.0f} s (not finished)"
                rows.append([label, name, shown, f"{max(x.peak_mb for x in done):,.0f} MB", ratio])
            phases = [x.phases() for x in cur]
            rev_phases = [
                x.phases() for name, done in runs.items() if name != "current" for x in done
            ]
            order = list(phases[0]) + [p for x in rev_phases for p in x if p not in phases[0]]
            for phase in dict.fromkeys(order):
                here = [p[phase] for p in phases if phase in p]
                mine = fmt_time(median(here)) if here else ""
                theirs = [p[phase] for p in rev_phases if phase in p]
                before = fmt_time(median(theirs)) if theirs else ""
                breakdowns.append([label, phase, mine, before])
    print()
    print(table(["case", "code", "median wall time", "peak memory", "REV / current"], rows))
    print()
    print(table(["case", "phase (current code's progress log)", "current", "REV"], breakdowns))
    print(f"\n{args.repeats} run(s) each, medians; a REV run killed at its cap counts its cap.")


if __name__ == "__main__":
    main()
