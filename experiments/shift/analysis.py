"""The numbers experiments/shift/README.md quotes, from each model's ``results.csv``.

From the repository root::

    python experiments/shift/analysis.py experiments/shift/resnet20 experiments/shift/resnet32

It writes nothing; a folder without a ``results.csv`` is refused in one line (exit status 2).
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from collections import defaultdict
from pathlib import Path

if __package__ in (None, ""):  # run as a file: the repository root makes `experiments` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from experiments._driver import driver_parser, input_folder, run_driver

#: The calibrators of the ECE table.
METHODS = ("none", "temperature", "vector", "ms_odir", "dirichlet")
#: The paired comparisons counted per severity: (method, against, metric).
PAIRS = (
    ("temperature", "none", "ece"),
    ("temperature", "none", "nll"),
    ("dirichlet", "temperature", "ece"),
    ("ms_odir", "temperature", "ece"),
)


def read(folder: Path) -> list[dict[str, str]]:
    """The rows of ``folder/results.csv``."""
    with (folder / "results.csv").open(encoding="utf-8") as f:
        return list(csv.DictReader(f))


def by_severity(rows: list[dict[str, str]], method: str, metric: str) -> dict[int, float]:
    """Mean of ``metric`` over the corruptions at each severity (0: clean) for ``method``.

    >>> rows = [{"method": "m", "severity": "1", "ece": e} for e in ("0.1", "0.3")]
    >>> by_severity(rows, "m", "ece")
    {1: 0.2}
    """
    groups: dict[int, list[float]] = defaultdict(list)
    for r in rows:
        if r["method"] == method and r[metric] != "":
            groups[int(r["severity"])].append(float(r[metric]))
    return {s: round(sum(v) / len(v), 12) for s, v in sorted(groups.items())}


def wins(rows: list[dict[str, str]], a: str, b: str, metric: str, severity: int) -> tuple[int, int]:
    """``(sets where a's metric is below b's, sets)`` at ``severity``."""
    vals = {
        (r["method"], r["corruption"]): float(r[metric])
        for r in rows
        if int(r["severity"]) == severity and r[metric] != ""
    }
    keys = [c for m, c in vals if m == a and (b, c) in vals]
    return sum(vals[a, c] < vals[b, c] for c in keys), len(keys)


def describe(folder: Path) -> str:
    """A plain-text summary of one model's shift results."""
    rows = read(folder)
    lines = [f"== {folder.name}"]
    methods = list(dict.fromkeys(r["method"] for r in rows))
    for metric in (
        "accuracy",
        "nll",
        "ece",
        "ece_floor",
        "failure_auroc",
        "coverage",
        "mean_set_size",
    ):
        for m in methods:
            s = by_severity(rows, m, metric)
            if s and not all(math.isnan(v) for v in s.values()):
                lines.append(f"{metric:14s} {m:12s} " + " ".join(f"{v:.4f}" for v in s.values()))
    for severity in range(1, 6):
        for a, b, metric in PAIRS:
            won, n = wins(rows, a, b, metric, severity)
            if n:
                lines.append(f"severity {severity}: {a} {metric} below {b} on {won}/{n}")
    return "\n".join(lines + extremes(rows))


def extremes(rows: list[dict[str, str]]) -> list[str]:
    """Means over every shifted set, the worst sets at severity 5, and for how many
    corruptions the uncalibrated ECE rises monotonically with severity."""
    shifted = [r for r in rows if r["severity"] != "0"]
    out = []
    for m in ("none", "temperature", "dirichlet"):
        mine = [r for r in shifted if r["method"] == m]
        means = {k: sum(float(r[k]) for r in mine) / len(mine) for k in ("accuracy", "nll", "ece")}
        out.append(f"all shifted sets, {m}: " + " ".join(f"{k} {v:.4f}" for k, v in means.items()))
    for m, metric in (("none", "accuracy"), ("temperature", "ece"), ("ts+raps", "coverage"),
                      ("ts+lac", "coverage")):  # fmt: skip
        five = sorted(
            (float(r[metric]), r["corruption"])
            for r in shifted
            if r["method"] == m and r["severity"] == "5"
        )
        if five:
            out.append(f"severity 5, {m} {metric}: lowest {five[0]}, highest {five[-1]}")
    ece = {
        (r["corruption"], int(r["severity"])): float(r["ece"])
        for r in shifted
        if r["method"] == "none"
    }
    names = sorted({c for c, _ in ece})
    rising = [c for c in names if all(ece[c, s] <= ece[c, s + 1] for s in range(1, 5))]
    out.append(f"none's ECE rises with severity on {len(rising)}/{len(names)}: {', '.join(rising)}")
    return out


#: The README's tables: (title, rows of (method, metric, label, percent)).
TABLES = (
    ("ECE (15 bins, %)", [(m, "ece", m, True) for m in METHODS]),
    (
        "Accuracy (%) and NLL",
        [
            ("none", "accuracy", "accuracy", True),
            ("none", "nll", "NLL, none", False),
            ("temperature", "nll", "NLL, temperature", False),
        ],
    ),
)


def markdown(folders: list[Path]) -> str:
    """The README's tables (mean over the corruptions per severity) as Markdown.

    Conformal rows give ``coverage % / mean set size``.
    """
    head = "| model | {} | clean | 1 | 2 | 3 | 4 | 5 |\n|---|---|---|---|---|---|---|---|"
    out = []
    for title, spec in TABLES:
        out += [f"{title}:", "", head.format("row")]
        for folder in folders:
            rows = read(folder)
            for method, metric, label, pct in spec:
                v = by_severity(rows, method, metric).values()
                cells = [f"{100 * x:.1f}" if pct else f"{x:.3f}" for x in v]
                out.append(f"| {folder.name} | {label} | " + " | ".join(cells) + " |")
        out.append("")
    out += ["Conformal sets on TS (coverage % / mean set size):", "", head.format("score")]
    for folder in folders:
        rows = read(folder)
        for score in ("ts+raps", "ts+lac"):
            cov = by_severity(rows, score, "coverage").values()
            size = by_severity(rows, score, "mean_set_size").values()
            cells = [f"{100 * c:.1f} / {z:.2f}" for c, z in zip(cov, size, strict=True)]
            out.append(f"| {folder.name} | {score} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """Print the summary of each folder (``--markdown``: the README's tables)."""
    p = driver_parser(__file__, __doc__)
    p.add_argument("folders", nargs="+", type=Path, metavar="FOLDER", help="a calibkit shift --out")
    p.add_argument("--markdown", action="store_true", help="the README's tables")

    def work(args: argparse.Namespace) -> None:
        folders = [input_folder(f, "FOLDER", ["results.csv"]) for f in args.folders]
        if args.markdown:
            print(markdown(folders))
            return
        for folder in folders:
            print(describe(folder))

    return run_driver(p, work, argv)


if __name__ == "__main__":
    sys.exit(main())
