"""The tables and figures of the conformance study, from its cells.

``python experiments/intervals/conformance_report.py RUNS OUT`` reads the cells that
``conformance.py`` wrote in ``RUNS`` and writes ``OUT`` (a new folder, or one this script
wrote: ``index.md``, ``cells.csv`` and ``figures/coverage_ece.png``).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: the repository root on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from experiments._driver import driver_parser, input_folder, run_driver

#: The interval methods, as the report names them.
METHODS = {
    "percentile": "percentile bootstrap (evaluate before #43)",
    "basic": "basic bootstrap, truncated at 0",
    "sidak-l2-bound": "ece_interval (Sidak lower; L2 or Sidak-box upper)",
    "sun2024": "l2_ece_interval (Sun et al. 2024)",
}
TARGET = 0.93


def read_cells(folder: Path) -> list[dict[str, Any]]:
    """Every cell record in ``folder`` (its JSON files, the manifest aside)."""
    cells = []
    for path in sorted(folder.glob("*.json")):
        if path.name.startswith("."):
            continue
        cells.append(json.loads(path.read_text(encoding="utf-8")))
    return cells


def rows(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per cell, metric and method."""
    out = []
    for c in cells:
        for key, s in c["metrics"].items():
            metric, method = key.split("/")
            out.append(
                {
                    **{k: c["cell"][k] for k in ("shape", "n", "n_classes", "gap")},
                    "params": " ".join(map(str, c["cell"]["params"] or ())),
                    "reps": c["reps"],
                    "metric": metric,
                    "method": method,
                    **s,
                    "false_alarm": c["false_alarm"],
                }
            )
    return out


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _val(x: float) -> str:
    return f"{100 * x:.2f}%"


def headline(table: list[dict[str, Any]]) -> str:
    """ECE at K = 10, constant gap: the percentile bootstrap against the new interval."""
    lines = [
        "| n | true ECE | plug-in ECE (mean) | percentile: coverage | ece_interval: estimate "
        "(mean) | ece_interval: coverage | ece_interval: width |",
        "|---|---|---|---|---|---|---|",
    ]
    pick = [
        r
        for r in table
        if r["shape"] == "constant"
        and r["n_classes"] == 10
        and r["metric"] in ("ece", "ece_interval")
    ]
    for n in sorted({r["n"] for r in pick}):
        for gap in sorted({r["gap"] for r in pick if r["n"] == n}):
            cell = {r["method"]: r for r in pick if r["n"] == n and r["gap"] == gap}
            p, s = cell.get("percentile"), cell.get("sidak-l2-bound")
            if p is None or s is None:
                continue
            lines.append(
                f"| {n:,} | {_val(p['truth'])} | {_val(p['mean_estimate'])} "
                f"| {_pct(p['coverage'])} | {_val(s['mean_estimate'])} | {_pct(s['coverage'])} "
                f"| {_val(s['width'])} |"
            )
    return "\n".join(lines)


def by_metric(table: list[dict[str, Any]]) -> str:
    """Per metric and method, over the cells with n >= 1,000: the lowest coverage, the share
    of cells at or above the target, the median width, and how often an interval excluded
    its own estimate."""
    lines = [
        f"| metric | interval | cells | lowest coverage | cells >= {_pct(TARGET)} "
        "| excludes its estimate |",
        "|---|---|---|---|---|---|",
    ]
    keys = sorted({(r["metric"], r["method"]) for r in table})
    for metric, method in keys:
        sel = [
            r for r in table if r["metric"] == metric and r["method"] == method and r["n"] >= 1000
        ]
        if not sel:
            continue
        low = min(r["coverage"] for r in sel)
        ok = sum(r["coverage"] >= TARGET for r in sel) / len(sel)
        excl = max(r["excludes_estimate"] for r in sel)
        lines.append(
            f"| {metric} | {METHODS.get(method, method)} | {len(sel)} | {_pct(low)} "
            f"| {_pct(ok)} | up to {_pct(excl)} |"
        )
    return "\n".join(lines)


def by_shape(table: list[dict[str, Any]]) -> str:
    """The new intervals' lowest coverage per shape and n (all K)."""
    lines = [
        "| shape | n | ece_interval: lowest coverage | l2_ece_interval: lowest coverage |",
        "|---|---|---|---|",
    ]
    for shape in sorted({r["shape"] for r in table}):
        for n in sorted({r["n"] for r in table if r["shape"] == shape}):
            got = []
            for method in ("sidak-l2-bound", "sun2024"):
                sel = [
                    r
                    for r in table
                    if r["shape"] == shape and r["n"] == n and r["method"] == method
                ]
                got.append(_pct(min(r["coverage"] for r in sel)) if sel else "")
            lines.append(f"| {shape} | {n:,} | {got[0]} | {got[1]} |")
    return "\n".join(lines)


def false_alarms(cells: list[dict[str, Any]]) -> str:
    """How often the noise-floor verdict calls a calibrated model miscalibrated."""
    calibrated = [c for c in cells if c["cell"]["shape"] == "constant" and c["cell"]["gap"] == 0.0]
    ks = sorted({c["cell"]["n_classes"] for c in calibrated})
    lines = ["| n | " + " | ".join(f"K = {k:,}" for k in ks) + " |", "|---" * (len(ks) + 1) + "|"]
    for n in sorted({c["cell"]["n"] for c in calibrated}):
        by_k = {c["cell"]["n_classes"]: c["false_alarm"] for c in calibrated if c["cell"]["n"] == n}
        lines.append(
            f"| {n:,} | " + " | ".join(_pct(by_k[k]) if k in by_k else "" for k in ks) + " |"
        )
    return "\n".join(lines)


def figure(table: list[dict[str, Any]]) -> bytes:
    """Coverage of the true ECE against n (K = 10, constant gap): percentile bootstrap and
    ece_interval, one line per gap."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    for ax, (metric, method, title) in zip(
        axes,
        (
            ("ece", "percentile", "percentile bootstrap (evaluate before #43)"),
            ("ece_interval", "sidak-l2-bound", "ece_interval"),
        ),
        strict=True,
    ):
        sel = [
            r
            for r in table
            if r["shape"] == "constant"
            and r["n_classes"] == 10
            and r["metric"] == metric
            and r["method"] == method
        ]
        for gap in sorted({r["gap"] for r in sel}):
            pts = sorted((r["n"], r["coverage"]) for r in sel if r["gap"] == gap)
            ax.plot(
                [p[0] for p in pts],
                [p[1] for p in pts],
                marker="o",
                label=f"true ECE {100 * gap:g}%",
            )
        ax.axhline(0.95, color="grey", lw=0.8, ls="--")
        ax.axhline(TARGET, color="red", lw=0.8, ls=":")
        ax.set_xscale("log")
        ax.set_xlabel("samples n")
        ax.set_title(title, fontsize=10)
    axes[0].set_ylabel("coverage of the true ECE (95% interval)")
    axes[1].legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()


def page(cells: list[dict[str, Any]], table: list[dict[str, Any]]) -> str:
    reps = sorted({c["reps"] for c in cells})
    return f"""# Do calibkit's intervals cover the truth?

Measured by `experiments/intervals/conformance.py` on simulated models whose true
calibration error is known exactly (`calibkit.metrics.simulated.simulate`): {len(cells)}
cells, {", ".join(map(str, reps))} data sets each, 15 equal-width bins, 95% intervals, 200
bootstrap replicates (`evaluate` uses 1,000: the coverage of a percentile interval hardly
moves with it). The truth of a binned metric is its population value for the same bins.

![coverage of the true ECE](figures/coverage_ece.png)

## The ECE, K = 10, a constant gap

{headline(table)}

## Every metric and interval, cells with n >= 1,000

{by_metric(table)}

## The intervals of the true error, by shape (lowest coverage over K and the true error)

{by_shape(table)}

## The noise-floor verdict on calibrated models (false alarms; 5% intended)

{false_alarms(cells)}
"""


def main(argv: list[str] | None = None) -> int:
    parser = driver_parser(__file__, __doc__)
    parser.add_argument("runs", metavar="RUNS", help="the cells conformance.py wrote")
    parser.add_argument("out", metavar="OUT", help="the report folder")
    return run_driver(parser, _work, argv)


def _work(args: argparse.Namespace) -> int:
    from calibkit.core.errors import InputError
    from calibkit.io.atomic import atomic_directory, check_replaceable_folder

    check_replaceable_folder(Path(args.out), "OUT")
    cells = read_cells(input_folder(args.runs, "RUNS"))
    if not cells:
        raise InputError("RUNS", "a folder of conformance cells", f"{args.runs} (none)")
    table = rows(cells)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(table[0]))
    writer.writeheader()
    writer.writerows(table)
    png = figure(table)
    with atomic_directory(Path(args.out)) as tmp:
        (tmp / "index.md").write_text(page(cells, table), encoding="utf-8")
        (tmp / "cells.csv").write_text(buf.getvalue(), encoding="utf-8")
        (tmp / "figures").mkdir()
        (tmp / "figures" / "coverage_ece.png").write_bytes(png)
    print(f"{len(cells)} cells -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
