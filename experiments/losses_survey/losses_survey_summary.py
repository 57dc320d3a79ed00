"""Summarise the survey-losses study: each objective against CE, paired by seed.

    python experiments/losses_survey/losses_survey_summary.py runs/losses_survey \\
        > experiments/losses_survey/results/summary.md

Reads the study folder's ``results.json`` (test-part metrics of every run, with and
without post-hoc calibration, and the ECE noise floor) and each run's test logits, for
Murphy's binned decomposition of the Brier score (reliability, resolution, uncertainty; 15
bins per class, one-vs-rest, :func:`calibkit.metrics.brier_decomposition`). Every cell is
mean ± std over the seeds; a paired t-test over the seeds (same seed = same
initialisation seed and batch order) compares each objective with CE: ``↓``/``↑`` marks a
mean significantly lower/higher than CE's at p < 0.05, and ``p`` columns give the p-value.
It writes nothing but its standard output.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from scipy import stats

if __package__ in (None, ""):  # run as a file: the repository root makes `experiments` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from calibkit.metrics import brier_decomposition
from calibkit.study.store.run_folder import RunFolder
from experiments._driver import driver_parser, input_folder, run_driver

CE = "ce"
CALIBRATORS = {"none": "raw", "temperature": "TS (NLL)", "temperature_ece": "TS", "histogram": "HB"}


def murphy(out: Path, model: str, seed: int) -> dict[str, float]:
    data = RunFolder.of(out, model, seed).logits()
    d = brier_decomposition(data["test_labels"], logits=data["test_logits"], n_bins=15)
    return {"rel": d.reliability, "res": d.resolution, "unc": d.uncertainty}


def values(rows: list[dict], model: str, calibrator: str, metric: str) -> dict[int, float]:
    return {
        r["seed"]: float(r[metric])
        for r in rows
        if r["model"] == model and r["calibrator"] == calibrator
    }


def cell(by_seed: dict[int, float], ce: dict[int, float], scale: float, digits: int) -> str:
    x = np.array([by_seed[s] for s in sorted(by_seed)]) * scale
    text = f"{x.mean():.{digits}f} ± {x.std(ddof=1) if x.size > 1 else 0.0:.{digits}f}"
    seeds = sorted(set(by_seed) & set(ce))
    a = np.array([by_seed[s] for s in seeds])
    b = np.array([ce[s] for s in seeds])
    if len(seeds) < 2 or np.array_equal(a, b):  # CE itself, or too few seeds
        return text
    p = float(stats.ttest_rel(a, b).pvalue)
    mark = ("↓" if a.mean() < b.mean() else "↑") if p < 0.05 else ""
    return f"{text} {mark}(p {p:.2g})"


def table(rows: list[dict], models: list[str], calibrator: str, metrics: list[tuple]) -> str:
    head = "| objective | seeds | " + " | ".join(m[1] for m in metrics) + " |"
    lines = [head, "|" + "---|" * (len(metrics) + 2)]
    for model in models:
        vals = [values(rows, model, calibrator, m[0]) for m in metrics]
        ces = [values(rows, CE, calibrator, m[0]) for m in metrics]
        cells = [cell(v, c, m[2], m[3]) for v, c, m in zip(vals, ces, metrics, strict=True)]
        lines.append(f"| {model} | {len(vals[0])} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def summary(out: Path) -> None:
    """Print the summary of the study folder ``out``."""
    results = json.loads((out / "results.json").read_text())
    rows = results["rows"]
    models = list(dict.fromkeys(r["model"] for r in rows))
    for r in [r for r in rows if r["calibrator"] == "none"]:
        r.update(murphy(out, r["model"], r["seed"]))
    print(f"# {results['name']}: each objective against CE, paired by seed\n")
    print(
        "Mean ± std over the seeds, test part (2,000 images). ↓/↑: significantly lower/higher"
        " than CE (paired t-test over the seeds, p < 0.05); p: its p-value. ECE and its"
        " noise floor in percent (15 equal-width bins, top label); REL/RES/UNC: Murphy's"
        " parts of the Brier score (15 bins per class, one-vs-rest, summed over classes).\n"
    )
    raw = [
        ("accuracy", "accuracy (%)", 100, 2),
        ("ece", "ECE (%)", 100, 2),
        ("ece_floor", "ECE floor (%)", 100, 2),
        ("nll", "NLL", 1, 4),
        ("brier", "Brier", 1, 4),
        ("rel", "REL", 1, 4),
        ("res", "RES", 1, 4),
        ("unc", "UNC", 1, 4),
    ]
    print("## Without post-hoc calibration\n")
    print(table(rows, models, "none", raw) + "\n")
    post = [("ece", "ECE (%)", 100, 2), ("nll", "NLL", 1, 4), ("temperature", "T", 1, 3)]
    for calibrator in ("temperature", "temperature_ece", "histogram"):
        metrics = post if calibrator != "histogram" else post[:2]
        print(f"## After {CALIBRATORS[calibrator]}\n")
        print(table(rows, models, calibrator, metrics) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; its exit status (2: bad input)."""
    parser = driver_parser(__file__, __doc__)
    parser.add_argument("study", metavar="STUDY_DIR", help="the survey study's --out folder")

    def work(args: argparse.Namespace) -> None:
        summary(input_folder(args.study, "STUDY_DIR", ["results.json"]))

    return run_driver(parser, work, argv)


if __name__ == "__main__":
    sys.exit(main())
