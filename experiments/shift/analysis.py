"""The numbers experiments/shift/README.md quotes, from each model's ``results.csv``.

From the repository root::

    python experiments/shift/analysis.py experiments/shift/resnet20 experiments/shift/resnet32
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from collections import defaultdict
from pathlib import Path

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
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Print the summary of each folder."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folders", nargs="+", type=Path)
    for folder in p.parse_args(argv).folders:
        print(describe(folder))
    return 0


if __name__ == "__main__":
    sys.exit(main())
