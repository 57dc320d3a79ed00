"""The report of ``calibkit shift``: the tidy table as CSV and JSON, the mean over the
corruptions per severity as text and Markdown, and the box plots by severity.

>>> from calibkit.workflows.shift import ShiftRow
>>> rows = [ShiftRow("none", "clean", 0, 4, {"accuracy": 0.5, "ece": 0.25})]
>>> print(results_csv(rows), end="")
method,corruption,severity,n_samples,accuracy,ece
none,clean,0,4,0.5,0.25
>>> print(format_summary(rows))
method  severity  corruptions  accuracy %  ece %
none    clean     1            50.0        25.0
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from calibkit.reporting.csv_text import csv_number, csv_text
from calibkit.workflows.shift import ShiftRow, severity_summary

__all__ = ["FIGURES", "format_summary", "results_csv", "summary_markdown", "write_shift_report"]

#: The figure files and the metrics each shows.
FIGURES = {
    "shift_calibration.png": ("accuracy", "nll", "ece"),
    "shift_selective.png": ("brier", "failure_auroc", "aurc"),
    "shift_conformal.png": ("coverage", "mean_set_size"),
}
_PERCENT = {"accuracy", "ece", "ece_floor", "failure_auroc", "coverage"}


def _metrics(rows: Sequence[ShiftRow]) -> list[str]:
    return list(rows[0].values) if rows else []


def results_csv(rows: Sequence[ShiftRow]) -> str:
    """One line per row: method, corruption, severity, n_samples, then each metric."""
    metrics = _metrics(rows)
    header = ["method", "corruption", "severity", "n_samples", *metrics]
    body = [
        [
            r.method,
            r.corruption,
            r.severity,
            r.n_samples,
            *(csv_number(r.values[m]) for m in metrics),
        ]
        for r in rows
    ]
    return csv_text(header, body)


def _summary_cells(rows: Sequence[ShiftRow]) -> tuple[list[str], list[list[str]]]:
    metrics = _metrics(rows)
    header = ["method", "severity", "corruptions"]
    header += [f"{m} %" if m in _PERCENT else m for m in metrics]
    cells = []
    for method, severity, n, means in severity_summary(rows):
        nums = [
            ""
            if math.isnan(means[m])
            else f"{100 * means[m]:.1f}"
            if m in _PERCENT
            else f"{means[m]:.3f}"
            for m in metrics
        ]
        cells.append([method, "clean" if severity == 0 else str(severity), str(n), *nums])
    return header, cells


def format_summary(rows: Sequence[ShiftRow]) -> str:
    """The mean over the corruptions per method and severity, as a plain-text table."""
    header, cells = _summary_cells(rows)
    table = [header, *cells]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in table
    )


def summary_markdown(rows: Sequence[ShiftRow]) -> str:
    """The same table in Markdown."""
    header, cells = _summary_cells(rows)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(c) + " |" for c in cells]) + "\n"


def write_shift_report(
    folder: Path,
    rows: Sequence[ShiftRow],
    *,
    title: str,
    config: Mapping[str, Any],
    alpha: float | None,
) -> list[str]:
    """Write ``report.md``, ``results.csv``, ``results.json``, ``config.json`` and the
    figures of :data:`FIGURES` (those with data) into the existing, empty ``folder`` (the
    caller's temporary folder); returns the files written."""
    from calibkit.reporting.figures import figure_png_bytes
    from calibkit.reporting.shift_figures import shift_boxplots

    files: dict[str, str | bytes] = {
        "results.csv": results_csv(rows),
        "results.json": json.dumps([r.as_dict() for r in rows], indent=1, allow_nan=False) + "\n",
        "config.json": json.dumps(dict(config), indent=1, allow_nan=False) + "\n",
    }
    figures = []
    for name, metrics in FIGURES.items():
        keep = [r for r in rows if any(not math.isnan(r.values.get(m, math.nan)) for m in metrics)]
        if not keep or any(m not in keep[0].values for m in metrics):
            continue
        target = None if alpha is None else 1 - alpha
        fig = shift_boxplots(keep, metrics, title=f"{title}: {', '.join(metrics)}", target=target)
        files[name] = figure_png_bytes(fig)
        figures.append(name)
    corruptions = sorted({r.corruption for r in rows if r.severity})
    md = [
        f"# {title}",
        "",
        "Each method is fitted once on the clean calibration part and judged on the clean test "
        "part and on every corrupted copy of it. Mean over the corruptions "
        f"({', '.join(corruptions) or 'none'}) per severity; per-set numbers in results.csv. "
        "Fractions as percentages; `ece_floor`: the ECE a perfectly calibrated model with the "
        "same confidences would show at this sample size.",
        "",
        summary_markdown(rows),
        "Configuration: config.json.",
        "",
        *(f"![{f}]({f})\n" for f in figures),
    ]
    files["report.md"] = "\n".join(md)
    for name, data in files.items():
        path = folder / name
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data, encoding="utf-8")
    return list(files)
