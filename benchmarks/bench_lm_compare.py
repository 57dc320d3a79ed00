"""Time of `calibkit compare FILE --layout option-logprobs --groups task` on a language
model's answers (15,000 four-option questions of 60 tasks, every default method), against the
code of an earlier revision, in one run (issue #44, item 4).

    .venv/bin/python benchmarks/bench_lm_compare.py [--repeats 3] [--against ab4da7d~1]
        [--new HEAD] [--quick]

The questions (:func:`questions`: each task's skill drawn in [0.5, 3], the gold drawn from
softmax(z), the model reporting softmax(2.5 z): instruction-tuned-like overconfidence) are
written to a temporary ``.jsonl``. The ``src/`` of the revisions ``--new`` and ``--against``
(``git archive``, so that others' uncommitted edits stay out) run in child processes
(``PYTHONPATH=<side>/src``), interleaved round after round in rotating order after one
untimed round:

- **CLI**: the whole command with its report folder (start-up, imports, reading, the
  comparison with its per-task results and intervals, the figures, the files);
- **stages**: one child per side and round imports calibkit, reads the file, then times
  ``compare_parts`` (the comparison) and ``compare_report`` (the report's document and
  figures) apart, in CPU seconds.

Medians of the children's CPU time (user + system: the machine is shared, and CPU time moves
less with the load than wall time) and of the wall time, and the ratio new / old.
``--quick``: 1 round on 3,000 questions of 12 tasks (the tests' smoke run).
"""

from __future__ import annotations

import argparse
import ast
import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from _bench import (
    fmt_time,
    machine,
    median_of,
    parse_args,
    revision_src,
    rounds,
    table,
    timed_child,
)

ROOT = Path(__file__).resolve().parents[1]
#: The stages child: read the file, then the comparison and the report, each timed (CPU).
STAGES = """import json, sys, time
import calibkit as ck
from calibkit.reporting.compare_report import compare_report
from calibkit.workflows.compare import compare_parts
path = sys.argv[1]
out = ck.load_predictions(path, layout="option-logprobs")
groups = ck.load_groups(path, "task", out.n_samples, layout="option-logprobs")
t0 = time.process_time()
comp = compare_parts(out, groups=groups)
t1 = time.process_time()
compare_report(comp, title="t", name="questions.jsonl")
t2 = time.process_time()
print(json.dumps({"compare": t1 - t0, "report": t2 - t1}))
"""


def questions(path: Path, n: int, tasks: int, seed: int = 0, sharpness: float = 2.5) -> None:
    """``n`` four-option questions over ``tasks`` tasks as an ``option-logprobs`` JSONL."""
    rng = np.random.default_rng(seed)
    skill = rng.uniform(0.5, 3.0, tasks)
    task = np.arange(n) % tasks
    gold = rng.integers(0, 4, n)
    z = rng.normal(size=(n, 4)) + skill[task][:, None] * np.eye(4)[gold]
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    answer = (rng.uniform(size=(n, 1)) > p.cumsum(1)).sum(1).clip(0, 3)
    logp = sharpness * z - np.logaddexp.reduce(sharpness * z, axis=1, keepdims=True)
    with path.open("w") as f:
        for t, a, row in zip(task, answer, logp.round(6), strict=True):
            f.write(
                json.dumps({"task": f"task{t:02d}", "answer": int(a), "logprobs": row.tolist()})
            )
            f.write("\n")


@contextmanager
def repaired_src(rev: str) -> Iterator[Path]:
    """The ``src`` folder of ``rev`` (:func:`_bench.revision_src`), its ``__init__.py``
    repaired where it does not parse (:func:`repair_init`)."""
    with revision_src(rev) as src:
        repair_init(src / "calibkit" / "__init__.py")
        yield src


#: The line that f734458 to 72a81bd^ committed inside another import list of the package's
#: ``TYPE_CHECKING`` block (the package did not parse); put before that list, nothing else.
_MISPLACED = "    from calibkit.io.lm_outputs import LMOutputs\n"


def repair_init(path: Path) -> None:
    """The revisions between f734458 and 72a81bd^ have an ``__init__.py`` that does not
    parse (:data:`_MISPLACED`): that line moved out of the list, so they run."""
    text = path.read_text()
    try:
        ast.parse(text)
    except SyntaxError:
        text = text.replace(_MISPLACED, "", 1)
        anchor = "    from calibkit.io.predictions import (\n"
        path.write_text(text.replace(anchor, _MISPLACED + anchor, 1))
        ast.parse(path.read_text())


def run_cli(src: Path, path: Path, work: Path, tag: str) -> dict[str, float]:
    """The whole command, its report folder under ``work``."""
    out = work / f"rep-{tag}"
    args = ["-m", "calibkit", "compare", str(path), "--layout", "option-logprobs"]
    _, wall, cpu = timed_child(src, [*args, "--groups", "task", "--out", str(out)], work)
    return {"wall": wall, "cpu": cpu}


def run_stages(src: Path, path: Path, work: Path) -> dict[str, float]:
    done, _, _ = timed_child(src, ["-c", STAGES, str(path)], work)
    stdout = done.stdout
    result: dict[str, float] = json.loads(stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--against", default="ab4da7d~1", help="the old revision")
    ap.add_argument("--new", default="HEAD", help="the new revision")
    ap.add_argument("--quick", action="store_true")
    args = parse_args(ap)
    n, tasks = (3_000, 12) if args.quick else (15_000, 60)
    repeats = 1 if args.quick else args.repeats
    with (
        tempfile.TemporaryDirectory() as tmp,
        repaired_src(args.new) as new,
        repaired_src(args.against) as old,
    ):
        work = Path(tmp)
        path = work / "questions.jsonl"
        questions(path, n, tasks)
        sides = {"new": new, "old": old}
        cli = rounds(
            {name: (lambda s=s, t=name: run_cli(s, path, work, t)) for name, s in sides.items()},
            repeats,
        )
        stages = rounds(
            {name: (lambda s=s: run_stages(s, path, work)) for name, s in sides.items()}, repeats
        )
    print(f"{machine()}\n")
    print(
        f"`calibkit compare FILE --layout option-logprobs --groups task` on {n:,} four-option "
        f"questions of {tasks} tasks (every default method, 1,000 resamples), medians of "
        f"{repeats} interleaved rounds; new = {args.new}, old = {args.against}\n"
    )
    rows = []
    for label, runs, key in (
        ("whole command", cli, "cpu"),
        ("whole command", cli, "wall"),
        ("comparison (compare_parts)", stages, "compare"),
        ("report (compare_report)", stages, "report"),
    ):
        a, b = median_of(runs["new"], key), median_of(runs["old"], key)
        what = "wall" if key == "wall" else "CPU"
        rows.append([label, what, fmt_time(a), fmt_time(b), f"{a / b:.2f}"])
    print(table(["part", "time", "new", "old", "new / old"], rows))


if __name__ == "__main__":
    main()
