"""Pair the rows of two study folders run by run: what changed between two settings?

    python scripts/compare_studies.py runs/neural_clamping_birdcat runs/neural_clamping_birdcat_bf16

For every (model, calibrator) that both folders fitted on the same (model, seed) runs, it
prints the number of runs, the ECE of B minus A (mean and largest, in points), the largest
relative change of the fitted temperature, and the median fit time of each. It reads the
rows each run cached (``calibration.json``, ``clamping-*.json``), so it also works on
studies that are not finished.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from calibkit.study.store.run_folder import RunFolder

Key = tuple[str, int, str]


def cached_rows(study: Path) -> dict[Key, dict[str, Any]]:
    """Every cached row of ``study``, by (model, seed, calibrator)."""
    rows = {}
    for path in sorted(study.glob(f"{RunFolder.GLOB}/*.json")):
        if not RunFolder.holds_rows(path.name):
            continue
        for r in json.loads(path.read_text(encoding="utf-8"))["rows"]:
            rows[(r["model"], int(r["seed"]), r["calibrator"])] = r
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", type=Path)
    parser.add_argument("b", type=Path)
    parser.add_argument("--only", default="", help="calibrators to show, comma-separated")
    args = parser.parse_args()
    a, b = cached_rows(args.a), cached_rows(args.b)
    only = set(filter(None, args.only.split(",")))
    groups: dict[tuple[str, str], list[Key]] = {}
    for key in sorted(a.keys() & b.keys()):
        if not only or key[2] in only:
            groups.setdefault((key[0], key[2]), []).append(key)
    print(
        "| model | calibrator | runs | ECE B - A (points): mean | largest | T: largest change "
        "| fit s A (median) | fit s B (median) |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for (model, cal), keys in groups.items():
        d = [100 * (b[k]["ece"] - a[k]["ece"]) for k in keys]
        t = [
            abs(b[k]["temperature"] / a[k]["temperature"] - 1)
            for k in keys
            if a[k]["temperature"] and b[k]["temperature"]
        ]
        fa = statistics.median(a[k]["fit_seconds"] for k in keys)
        fb = statistics.median(b[k]["fit_seconds"] for k in keys)
        print(
            f"| {model} | {cal} | {len(keys)} | {statistics.mean(d):+.3f} "
            f"| {max(d, key=abs):+.3f} | {max(t, default=0.0):.1e} | {fa:.1f} | {fb:.1f} |"
        )


if __name__ == "__main__":
    main()
