"""Shared helpers of the benchmark scripts: synthetic data, interleaved timing, tables.

Not a test module: the scripts print Markdown and are run by hand (see README.md).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import os
import platform
import resource
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Collection, Iterator
from pathlib import Path

import numpy as np
import torch


def synthetic(n: int, k: int, *, temperature: float = 2.0, scale: float = 3.0, seed: int = 0):
    """Float32 logits ``N(0, scale^2)`` and labels drawn from ``softmax(logits / temperature)``.

    The NLL-optimal temperature is then ``temperature`` up to sampling noise.
    """
    rng = np.random.default_rng(seed)
    logits = np.empty((n, k), dtype=np.float32)
    labels = np.empty(n, dtype=np.int64)
    step = max(1, (1 << 22) // k)
    for start in range(0, n, step):
        z = rng.standard_normal((min(step, n - start), k)) * scale
        p = np.exp((z - z.max(axis=1, keepdims=True)) / temperature)
        cdf = np.cumsum(p, axis=1)
        u = rng.random(z.shape[0])[:, None] * cdf[:, -1:]
        labels[start : start + z.shape[0]] = np.minimum((cdf < u).sum(axis=1), k - 1)
        logits[start : start + z.shape[0]] = z
    return logits, labels


def interleaved(
    contenders: dict[str, Callable[[], object]],
    repeats: int,
    warm: Collection[str] | None = None,
) -> dict[str, list[float]]:
    """Wall times of every contender, run once per round in a rotating order.

    An untimed warm-up run first (of the contenders in ``warm``; default all). Interleaving
    spreads the noise of a shared machine over all contenders, so ratios measured in the
    same run are meaningful.
    """
    names = list(contenders)
    for name in names if warm is None else [n for n in names if n in warm]:
        contenders[name]()
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(repeats):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            gc.collect()
            t0 = time.perf_counter()
            contenders[name]()
            times[name].append(time.perf_counter() - t0)
    return times


def median(values: list[float]) -> float:
    return float(np.median(values))


def rounds(
    contenders: dict[str, Callable[[], dict[str, float]]], repeats: int
) -> dict[str, list[dict[str, float]]]:
    """What every contender returns (its own timings: a child process's wall and CPU time),
    run once per round in a rotating order after one untimed round, as :func:`interleaved`
    does for wall times measured here."""
    names = list(contenders)
    for name in names:
        contenders[name]()
    out: dict[str, list[dict[str, float]]] = {name: [] for name in names}
    for r in range(repeats):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            out[name].append(contenders[name]())
    return out


def median_of(runs: list[dict[str, float]], key: str) -> float:
    """The median of ``key`` over the runs :func:`rounds` returned."""
    return median([run[key] for run in runs])


#: The repository root (a revision's ``src`` is read from its git history).
ROOT = Path(__file__).resolve().parents[1]


@contextlib.contextmanager
def revision_src(rev: str) -> Iterator[Path]:
    """The ``src`` folder of ``rev`` (``git archive``: others' uncommitted edits stay out, no
    worktree to prune) in a temporary folder, removed at exit."""
    data = subprocess.run(
        ["git", "archive", "--format=tar", rev, "src"], cwd=ROOT, check=True, capture_output=True
    ).stdout
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            tar.extractall(tmp, filter="data")
        yield Path(tmp) / "src"


def timed_child(
    src: Path, args: list[str], cwd: Path | None = None
) -> tuple[subprocess.CompletedProcess[str], float, float]:
    """``python args`` with ``src``'s code (in ``cwd``): the result, its wall and its CPU
    seconds (user + system of the child); a failure raises with the child's stderr."""
    env = dict(os.environ, PYTHONPATH=str(src))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, cwd=cwd)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        raise RuntimeError(f"{args[:3]} failed ({src}): {done.stderr[-2000:]}")
    return done, wall, cpu


def fmt_time(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def table(headers: list[str], rows: list[list[str]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def machine() -> str:
    """One line describing the machine and the libraries."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    return (
        f"{cpu}, {os.cpu_count()} CPUs (load average {load}); numpy {np.__version__}, "
        f"torch {torch.__version__} ({torch.get_num_threads()} threads)"
    )


def parse_args(parser: argparse.ArgumentParser) -> argparse.Namespace:
    """``parser``'s arguments plus ``--threads N``, applied before anything is timed: torch and
    the BLAS pools use ``N`` threads, by default the cores free at the start
    (``calibkit.core.threads``), so a busy machine is not oversubscribed."""
    from calibkit.core.threads import set_threads

    help_text = "threads for torch and BLAS (default: the free cores)"
    parser.add_argument("--threads", type=int, default=None, help=help_text)
    args = parser.parse_args()
    args.threads = set_threads(args.threads)
    return args
