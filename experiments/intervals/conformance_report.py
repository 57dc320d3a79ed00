"""The tables and figures of the conformance study, from its cells.

``python experiments/intervals/conformance_report.py RUNS [RUNS ...] OUT`` reads the cells
that ``conformance.py`` wrote in each ``RUNS`` folder (the ``bootstrap`` measure's, the
``printed`` measure's and its ``recheck`` cells, in one folder or several) and writes
``OUT`` (a new folder, or one this script wrote: ``index.md``, ``cells.csv`` and
``figures/coverage_ece.png``).
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
    "printed": "as calibkit prints it",
    "paired": "paired Student-t (compare)",
    "t_plugin": "t interval of the seeds' measured ECEs",
    "t_debiased": "t interval of the seeds' debiased ECEs",
    "mean_of_bounds": "mean of the seeds' true-ECE bounds",
    "min_low_mean_high": "lowest of the seeds' lower bounds, mean of their upper (the study "
    "prints it)",
}
TARGET = 0.93
#: The ``printed`` measure's rows that calibkit prints (the others are the alternatives).
PRINTED_METHODS = ("printed", "paired", "min_low_mean_high")


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
                    "measure": c["cell"].get("measure", "bootstrap"),
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
    """Per metric and method (the ``bootstrap`` measure), over the cells with n >= 1,000:
    the lowest coverage, the share of cells at or above the target, and how often an
    interval excluded its own estimate."""
    lines = [
        f"| metric | interval | cells | lowest coverage | cells >= {_pct(TARGET)} "
        "| excludes its estimate |",
        "|---|---|---|---|---|---|",
    ]
    table = [r for r in table if r["measure"] == "bootstrap"]
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


def _upper(covered: float, reps: int, level: float = 0.95) -> float:
    """The one-sided ``level`` Clopper-Pearson upper bound of a coverage seen in ``reps``
    data sets: below it, the cell's true coverage is implausible."""
    from scipy import stats

    k = round(covered * reps)
    return 1.0 if k >= reps else float(stats.beta.ppf(level, k + 1, reps - k))


def _shown(r: dict[str, Any]) -> bool:
    """A row of the ``printed``, ``paired`` or ``study`` measure (the NLL change of a
    ``printed`` cell was judged against a truth from a plain sample of the model, as noisy
    as the data set itself at K = 100 and n = 100,000: the ``paired`` measure's truth
    replaces it; its study rows predate the study's printed interval: the ``study``
    measure's replace them)."""
    if r["measure"] == "printed":
        return r["metric"] not in ("nll_change", "study_mean_ece")
    return r["measure"] in ("paired", "study")


def printed(table: list[dict[str, Any]]) -> str:
    """Every interval calibkit prints and the alternatives measured beside them (the
    ``printed`` measure, n >= 1,000): cells, pooled and lowest coverage (with the lowest
    cell's 95% upper bound), cells at the target, width and how often an interval excluded
    its estimate. ``group_ece_<g>`` rows are pooled as ``group_ece``."""
    lines = [
        "| quantity | interval | printed | cells | coverage (pooled) | lowest coverage "
        f"(its 95% upper bound) | cells >= {_pct(TARGET)} | excludes its estimate |",
        "|---|---|---|---|---|---|---|---|",
    ]
    sel = [r for r in table if _shown(r) and r["n"] >= 1000]
    for r in sel:
        r["quantity"] = "group_ece" if r["metric"].startswith("group_ece_") else r["metric"]
    for quantity, method in sorted({(r["quantity"], r["method"]) for r in sel}):
        cells = [r for r in sel if r["quantity"] == quantity and r["method"] == method]
        pooled = sum(r["coverage"] * r["reps"] for r in cells) / sum(r["reps"] for r in cells)
        worst = min(cells, key=lambda r: r["coverage"])
        ok = sum(r["coverage"] >= TARGET for r in cells) / len(cells)
        excl = max(r["excludes_estimate"] for r in cells)
        lines.append(
            f"| {quantity} | {METHODS.get(method, method)} "
            f"| {'yes' if method in PRINTED_METHODS else 'no'} | {len(cells)} | {_pct(pooled)} "
            f"| {_pct(worst['coverage'])} ({_pct(_upper(worst['coverage'], worst['reps']))}) "
            f"| {_pct(ok)} | up to {_pct(excl)} |"
        )
    return "\n".join(lines)


def rechecked(table: list[dict[str, Any]]) -> str:
    """The printed intervals below the target in a ``printed`` cell, and their coverage
    when the cell was drawn again with fresh seeds (the ``recheck`` measure)."""
    again = {
        (r["shape"], r["n"], r["n_classes"], r["gap"], r["params"], r["metric"], r["method"]): r
        for r in table
        if r["measure"] in ("recheck", "paired-recheck", "study-recheck")
    }
    lines = [
        "| cell | quantity | coverage | data sets | again, fresh data sets | coverage |",
        "|---|---|---|---|---|---|",
    ]
    for r in table:
        if not _shown(r) or r["method"] not in PRINTED_METHODS:
            continue
        if r["n"] < 1000 or r["coverage"] >= TARGET:
            continue
        key = (r["shape"], r["n"], r["n_classes"], r["gap"], r["params"], r["metric"], r["method"])
        a = again.get(key)
        what = f"gap {_val(r['gap'])}" if r["params"] == "" else f"params {r['params']}"
        lines.append(
            f"| {r['shape']}, K = {r['n_classes']:,}, n = {r['n']:,}, {what} | {r['metric']} "
            f"| {_pct(r['coverage'])} | {r['reps']} | {a['reps'] if a else '-'} "
            f"| {_pct(a['coverage']) if a else '-'} |"
        )
    return "\n".join(lines)


def by_shape(table: list[dict[str, Any]]) -> str:
    """The new intervals' lowest coverage per shape and n (all K)."""
    lines = [
        "| shape | n | ece_interval: lowest coverage | l2_ece_interval: lowest coverage |",
        "|---|---|---|---|",
    ]
    table = [r for r in table if r["measure"] == "bootstrap"]
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
    calibrated = [
        c
        for c in cells
        if c["cell"]["shape"] == "constant"
        and c["cell"]["gap"] == 0.0
        and c["cell"].get("measure", "bootstrap") == "bootstrap"
    ]
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
    boot = [c for c in cells if c["cell"].get("measure", "bootstrap") == "bootstrap"]
    reps = sorted({c["reps"] for c in boot})
    shown = [c for c in cells if c["cell"].get("measure") == "printed"]
    shown_reps = sorted({c["reps"] for c in shown})
    paired = [c for c in cells if c["cell"].get("measure") == "paired"]
    paired_reps = sorted({c["reps"] for c in paired})
    return f"""# Do calibkit's intervals cover the truth?

Measured by `experiments/intervals/conformance.py` on simulated models whose true
calibration error is known exactly (`calibkit.metrics.simulated.simulate`): {len(boot)}
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

## Every interval calibkit prints, as it prints it (n >= 1,000)

`--measure printed`: {len(shown)} cells (the grid above from n = 1,000), \
{", ".join(map(str, shown_reps))} data sets each; `--measure paired` (compare's NLL change
alone): {len(paired)} cells (K <= 100), {", ".join(map(str, paired_reps))} data sets each. \
`printed` says whether calibkit prints
that interval; the others were measured beside it and are not printed. The truths: the
population binned errors for evaluate's four true-error intervals; each group's population
ECE and their largest minus smallest for `group_ece` and `worst_group_gap` (shape
`groups`: gaps -g, 0 and g); for `nll_change`, the population mean NLL change of a fixed
temperature map (T = 1.5) from the model's probabilities (compare's rows are maps fitted
on the calibration part, fixed when the test part is judged): the mean, over 40 million
entries of the model, of each row's expected change given its probabilities (the simulator
draws the predicted class with P(correct | c) and another with its share of 1 - c: the
label's noise averaged out, 4-8x less spread than the changes themselves); for the
smooth ECE, the constant gap itself (smoothing a constant
residual leaves it unchanged; n <= 5,000); for a study's mean (K = 10, constant gap, five
seeds), the true ECE. A coverage seen over 60 data sets has a standard error of about 2.8
points at 95%: the lowest of many cells falls below 93% by chance alone, so the lowest
cell's 95% upper bound is given, and every printed cell below the target was drawn again
with fresh seeds (`--measure recheck`, below).

{printed(table)}

### Printed intervals below 93% in a cell, drawn again

{rechecked(table)}
"""


def main(argv: list[str] | None = None) -> int:
    parser = driver_parser(__file__, __doc__)
    parser.add_argument(
        "runs", metavar="RUNS", nargs="+", help="the folders of cells conformance.py wrote"
    )
    parser.add_argument("out", metavar="OUT", help="the report folder")
    return run_driver(parser, _work, argv)


def _work(args: argparse.Namespace) -> int:
    from calibkit.core.errors import InputError
    from calibkit.io.atomic import atomic_directory, check_replaceable_folder

    check_replaceable_folder(Path(args.out), "OUT")
    cells = [c for runs in args.runs for c in read_cells(input_folder(runs, "RUNS"))]
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
