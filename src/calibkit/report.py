"""Reports of evaluations and comparisons: text tables, Markdown, HTML, JSON, CSV and PNGs.

:func:`write_compare_report` turns a :class:`~calibkit.compare.Comparison` into a folder,
written atomically (it appears complete or not at all)::

    report.md      tables (every metric with its interval, noise floors, fitted
                   parameters, fit time; the best value per column in bold) and figures
    report.html    the same, self-contained: inline CSS, figures as data URIs
    results.json   every number, as fractions, plus the metadata
    results.csv    one row per method: <metric>, <metric>_lo, <metric>_hi, floors, ...
    figures/       reliability_grid.png, reliability_<method>.png, ece_temperature.png

Human tables show calibration errors and accuracy in percent; JSON and CSV keep fractions.

>>> from calibkit.metrics import Evaluation
>>> ev = Evaluation({"accuracy": 0.9, "ece": 0.05, "ece_floor": 0.01}, {"ece": (0.04, 0.06)})
>>> print(format_evaluation_table(ev))
Metric     Value          95% CI  Noise floor
Accuracy  90.00%
ECE        5.00%  [4.00%, 6.00%]        1.00%
"""

from __future__ import annotations

import base64
import csv
import html
import io
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from calibkit import __version__
from calibkit.atomic import atomic_directory
from calibkit.compare import Comparison, MethodResult
from calibkit.metrics import METRIC_NAMES, Evaluation
from calibkit.plots import (
    ece_temperature_figure,
    figure_png_bytes,
    reliability_figure,
    reliability_grid,
)

REPORT_FORMAT = 1


@dataclass(frozen=True)
class MetricInfo:
    """How a metric is shown: its label, whether in percent, and which way is better."""

    label: str
    percent: bool
    better: str | None  # "min", "max" or None (no ranking)


METRIC_INFO: dict[str, MetricInfo] = {
    "accuracy": MetricInfo("Accuracy", True, "max"),
    "nll": MetricInfo("NLL", False, "min"),
    "brier": MetricInfo("Brier", False, "min"),
    "entropy": MetricInfo("Entropy", False, None),
    "ece": MetricInfo("ECE", True, "min"),
    "aece": MetricInfo("Adaptive ECE", True, "min"),
    "mce": MetricInfo("MCE", True, "min"),
    "rmsce": MetricInfo("RMSCE", True, "min"),
    "ece_debiased": MetricInfo("Debiased ECE", True, "min"),
    "sce": MetricInfo("SCE", True, "min"),
    "ks": MetricInfo("KS", True, "min"),
    "mmce": MetricInfo("MMCE", True, "min"),
}
SCORE_METRICS: tuple[str, ...] = ("accuracy", "nll", "brier", "entropy")

HOW_TO_READ = (
    "Each calibrator was fitted on the calibration part only and is judged on the test part; "
    "the row 'none' is the model as it came. Calibration errors and accuracy are in percent; "
    "brackets hold the {level:.0%} bootstrap interval over the test part (every method is "
    "judged on the same resamples). A floor is the error a perfectly calibrated model with the "
    "same confidences would show at this sample size: an error near its floor is as small as "
    "this test part can measure. Bold marks the best value of each column, but where the "
    "intervals of two methods overlap widely the test part cannot rank them. NLL and Brier "
    "score (lower is better) also reward sharp, correct predictions. In a reliability "
    "diagram, bars below the diagonal are over-confident bins and the shaded band is each "
    "bin's gap between accuracy and mean confidence."
)


def _info(name: str) -> MetricInfo:
    if name.endswith("_floor"):
        base = _info(name.removesuffix("_floor"))
        return MetricInfo(f"{base.label} floor", base.percent, None)
    return METRIC_INFO.get(name, MetricInfo(name, False, None))


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def format_value(name: str, value: float | None) -> str:
    """A metric value as shown to people: percent with 2 decimals, or 4 decimals.

    >>> format_value("ece", 0.05612), format_value("nll", 0.36909), format_value("ks", None)
    ('5.61%', '0.3691', 'n/a')
    """
    if value is None or not math.isfinite(value):
        return "n/a"
    return f"{100 * value:.2f}%" if _info(name).percent else f"{value:.4f}"


def _interval(name: str, ci: tuple[float, float] | None) -> str:
    if ci is None:
        return ""
    return f"[{format_value(name, ci[0])}, {format_value(name, ci[1])}]"


def _metric_names(evaluation: Evaluation) -> list[str]:
    extra = [k for k in evaluation.values if k not in METRIC_NAMES and not k.endswith("_floor")]
    return [k for k in METRIC_NAMES if k in evaluation.values] + extra


def format_evaluation_table(evaluation: Evaluation) -> str:
    """A plain-text table: metric, value, bootstrap interval and noise floor (if any)."""
    level = f"{evaluation.level:.0%} CI"
    rows = [("Metric", "Value", level, "Noise floor")]
    for name in _metric_names(evaluation):
        floor = evaluation.values.get(f"{name}_floor")
        rows.append(
            (
                _info(name).label,
                format_value(name, evaluation.values[name]),
                _interval(name, evaluation.ci.get(name)),
                "" if floor is None else format_value(name, floor),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = [
        f"{r[0]:<{widths[0]}}  {r[1]:>{widths[1]}}  {r[2]:>{widths[2]}}  {r[3]:>{widths[3]}}"
        for r in rows
    ]
    return "\n".join(line.rstrip() for line in lines)


# ----- the comparison tables (one model, rendered as Markdown and as HTML) ------------------
@dataclass(frozen=True)
class Cell:
    text: str
    best: bool = False


@dataclass(frozen=True)
class Table:
    title: str
    header: list[str]
    rows: list[list[Cell]]
    n_left: int = 1  # leading text columns (left-aligned); the rest are numbers


def _column(name: str, results: list[MethodResult], ranked: bool = True) -> tuple[str, list[Cell]]:
    info = _info(name)
    values = [r.evaluation.values.get(name, math.nan) for r in results]
    shown = [format_value(name, v) for v in values]
    best_text = None
    finite = [v for v in values if math.isfinite(v)]
    if ranked and info.better and finite:
        best_text = format_value(name, max(finite) if info.better == "max" else min(finite))
    cells = [
        Cell(f"{s} {_interval(name, r.evaluation.ci.get(name))}".strip(), s == best_text)
        for s, r in zip(shown, results, strict=True)
    ]
    return info.label, cells


def _metric_table(title: str, names: list[str], comp: Comparison) -> Table:
    header = ["Method"]
    columns: list[list[Cell]] = [[Cell(r.method) for r in comp.rows]]
    for name in names:
        label, cells = _column(name, comp.rows)
        header.append(label)
        columns.append(cells)
        if any(f"{name}_floor" in r.evaluation.values for r in comp.rows):
            floor_label, floors = _column(f"{name}_floor", comp.rows, ranked=False)
            header.append(floor_label)
            columns.append(floors)
    return Table(title, header, [list(row) for row in zip(*columns, strict=True)])


def format_params(params: dict[str, float]) -> str:
    """Fitted parameters as ``name=value`` pairs (4 significant digits), or a dash."""
    return ", ".join(f"{k}={v:.4g}" for k, v in params.items()) or "–"


def comparison_tables(comp: Comparison) -> list[Table]:
    """The tables of a comparison report: calibration errors, scores, fitted parameters."""
    names = _metric_names(comp.rows[0].evaluation)
    errors = [n for n in names if n not in SCORE_METRICS]
    scores = [n for n in names if n in SCORE_METRICS]
    fitted = Table(
        "Fitted calibrators",
        ["Method", "Fitted parameters", "Fit time (s)"],
        [
            [Cell(r.method), Cell(format_params(r.params)), Cell(f"{r.fit_seconds:.3f}")]
            for r in comp.rows
        ],
        n_left=2,
    )
    return [
        _metric_table("Calibration errors on the test part", errors, comp),
        _metric_table("Accuracy and proper scores on the test part", scores, comp),
        fitted,
    ]


def _md_cell(cell: Cell) -> str:
    text = cell.text.replace("|", "\\|")
    return f"**{text}**" if cell.best and text else text


def markdown_table(table: Table) -> str:
    """A GitHub-flavoured Markdown table (text columns left-aligned, numbers right)."""
    n_right = len(table.header) - table.n_left
    lines = [
        "| " + " | ".join(table.header) + " |",
        "|" + "|".join([":---"] * table.n_left + ["---:"] * n_right) + "|",
    ]
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in table.rows]
    return "\n".join(lines)


def html_table(table: Table) -> str:
    """An HTML table with escaped cells; best cells get ``class="best"``."""
    e = html.escape

    def attr(i: int, best: bool = False) -> str:
        classes = " ".join(c for c, on in (("l", i < table.n_left), ("best", best)) if on)
        return f' class="{classes}"' if classes else ""

    head = "".join(f"<th{attr(i)}>{e(h)}</th>" for i, h in enumerate(table.header))
    body = "".join(
        "<tr>"
        + "".join(f"<td{attr(i, c.best)}>{e(c.text)}</td>" for i, c in enumerate(row))
        + "</tr>\n"
        for row in table.rows
    )
    return (
        f'<h2>{e(table.title)}</h2>\n<div class="scroll"><table>\n<thead><tr>{head}</tr></thead>'
        f"\n<tbody>\n{body}</tbody></table></div>"
    )


# ----- figures, JSON and CSV ------------------------------------------------------------------
def figure_name(method: str) -> str:
    """File name of a method's reliability diagram (unsafe characters replaced)."""
    return "reliability_" + re.sub(r"[^A-Za-z0-9_.-]", "_", method) + ".png"


def comparison_figures(comp: Comparison, title: str) -> dict[str, tuple[str, bytes]]:
    """File name -> (caption, PNG bytes) of every figure of the report."""
    figs: dict[str, tuple[str, bytes]] = {}
    panels = [(r.method, r.reliability, r.evaluation.values["ece"]) for r in comp.rows]
    grid = reliability_grid(
        panels, title=f"{title}: reliability on the test part, before and after calibration"
    )
    figs["reliability_grid.png"] = ("Reliability diagrams, every method", figure_png_bytes(grid))
    curve = ece_temperature_figure(
        comp.temperatures, comp.ece_curve, fitted=comp.fitted_temperatures
    )
    figs["ece_temperature.png"] = ("Test-part ECE versus temperature", figure_png_bytes(curve))
    for r in comp.rows:
        fig = reliability_figure(
            r.reliability,
            title=f"{title}: {r.method}",
            ece=r.evaluation.values["ece"],
            subtitle=f"test part, {comp.n_test:,} samples, {comp.n_bins} bins",
        )
        figs[figure_name(r.method)] = (f"Reliability diagram: {r.method}", figure_png_bytes(fig))
    return figs


def results_dict(comp: Comparison, title: str) -> dict[str, Any]:
    """Every number of the comparison (fractions; NaN becomes null), ready for JSON."""
    methods = []
    for r in comp.rows:
        ev, rel = r.evaluation, r.reliability
        methods.append(
            {
                "method": r.method,
                "values": {k: _finite(v) for k, v in ev.values.items()},
                "ci": {k: [_finite(lo), _finite(hi)] for k, (lo, hi) in ev.ci.items()},
                "params": {k: _finite(v) for k, v in r.params.items()},
                "fit_seconds": r.fit_seconds,
                "reliability": {
                    "edges": rel.edges.tolist(),
                    "counts": rel.counts.tolist(),
                    "accuracy": [_finite(v) for v in rel.accuracy.tolist()],
                    "mean_confidence": [_finite(v) for v in rel.mean_confidence.tolist()],
                },
            }
        )
    return {
        "calibkit_report": REPORT_FORMAT,
        "calibkit_version": __version__,
        "title": title,
        "source": comp.source,
        "n_cal": comp.n_cal,
        "n_test": comp.n_test,
        "n_classes": comp.n_classes,
        "n_bins": comp.n_bins,
        "n_boot": comp.n_boot,
        "seed": comp.seed,
        "ci_level": comp.rows[0].evaluation.level,
        "metrics": _metric_names(comp.rows[0].evaluation),
        "methods": methods,
        "ece_vs_temperature": {
            "temperatures": comp.temperatures.tolist(),
            "ece": [_finite(v) for v in comp.ece_curve.tolist()],
        },
    }


def results_csv(comp: Comparison) -> str:
    """One row per method: fraction columns, ``<metric>_lo`` / ``_hi``, floors, fit data."""
    names = _metric_names(comp.rows[0].evaluation)
    floors = [k for k in comp.rows[0].evaluation.values if k.endswith("_floor")]
    triples = [c for n in names for c in (n, f"{n}_lo", f"{n}_hi")]
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["method", *triples, *floors, "fit_seconds", "params"])

    def num(x: float | None) -> str:
        return "" if x is None or not math.isfinite(x) else repr(float(x))

    for r in comp.rows:
        ev = r.evaluation
        row = [r.method]
        for n in names:
            lo, hi = ev.ci.get(n, (math.nan, math.nan))
            row += [num(ev.values.get(n)), num(lo), num(hi)]
        row += [num(ev.values.get(f)) for f in floors]
        row += [num(r.fit_seconds), ";".join(f"{k}={v!r}" for k, v in r.params.items())]
        writer.writerow(row)
    return buf.getvalue()


# ----- the documents --------------------------------------------------------------------------
def _summary(comp: Comparison) -> str:
    level = comp.rows[0].evaluation.level
    return (
        f"{comp.n_classes} classes; calibration part {comp.n_cal:,} samples, test part "
        f"{comp.n_test:,} samples; {comp.n_bins} equal-width bins; {level:.0%} intervals from "
        f"{comp.n_boot:,} bootstrap resamples (seed {comp.seed})."
    )


def markdown_report(comp: Comparison, title: str, figures: dict[str, tuple[str, bytes]]) -> str:
    """The Markdown report (figures linked from ``figures/``)."""
    parts = [f"# {title}", ""]
    if comp.source:
        parts += [f"Source: {comp.source}", ""]
    parts += [_summary(comp), "", "## How to read this", ""]
    parts += [HOW_TO_READ.format(level=comp.rows[0].evaluation.level), ""]
    for table in comparison_tables(comp):
        parts += [f"## {table.title}", "", markdown_table(table), ""]
    parts += ["## Figures", ""]
    for name, (caption, _) in figures.items():
        parts += [f"![{caption}](figures/{name})", ""]
    parts += [f"Written by calibkit {__version__}.", ""]
    return "\n".join(parts)


CSS = """
body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:1200px;padding:0 1rem;color:#222}
h1{font-size:1.6rem}h2{font-size:1.2rem;margin-top:2rem}p.meta{color:#555}.scroll{overflow-x:auto}
table{border-collapse:collapse;font-size:.85rem;font-variant-numeric:tabular-nums}
th,td{padding:.3rem .6rem;border-bottom:1px solid #ddd;text-align:right;white-space:nowrap}
th{background:#f3f5f8;border-bottom:2px solid #bbb}th.l,td.l{text-align:left}
tbody tr:nth-child(even){background:#fafbfc}td.best{font-weight:700;color:#1b5e20}
figcaption{color:#555;font-size:.85rem}img{max-width:100%;height:auto}
.gallery{display:flex;flex-wrap:wrap;gap:1rem}.gallery figure{width:360px;margin:0}
"""


def html_report(comp: Comparison, title: str, figures: dict[str, tuple[str, bytes]]) -> str:
    """The self-contained HTML report (inline CSS, figures as base64 data URIs)."""
    e = html.escape

    def figure(name: str) -> str:
        caption, png = figures[name]
        data = base64.b64encode(png).decode("ascii")
        return (
            f'<figure><img src="data:image/png;base64,{data}" alt="{e(caption)}">'
            f"<figcaption>{e(caption)}</figcaption></figure>"
        )

    singles = [n for n in figures if n not in ("reliability_grid.png", "ece_temperature.png")]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{e(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{e(title)}</h1>",
    ]
    if comp.source:
        parts.append(f'<p class="meta">Source: {e(comp.source)}</p>')
    parts += [f'<p class="meta">{e(_summary(comp))}</p>', "<h2>How to read this</h2>"]
    parts.append(f"<p>{e(HOW_TO_READ.format(level=comp.rows[0].evaluation.level))}</p>")
    parts += [html_table(t) for t in comparison_tables(comp)]
    parts += ["<h2>Figures</h2>", figure("reliability_grid.png"), figure("ece_temperature.png")]
    parts.append('<div class="gallery">' + "".join(figure(n) for n in singles) + "</div>")
    parts += [f'<p class="meta">Written by calibkit {e(__version__)}.</p>', "</body></html>", ""]
    return "\n".join(parts)


def write_compare_report(comp: Comparison, out_dir: Path, *, title: str) -> None:
    """Write the report folder ``out_dir`` atomically (replacing an existing one)."""
    figures = comparison_figures(comp, title)
    with atomic_directory(Path(out_dir)) as tmp:
        (tmp / "figures").mkdir()
        for name, (_, png) in figures.items():
            (tmp / "figures" / name).write_bytes(png)
        (tmp / "report.md").write_text(markdown_report(comp, title, figures), encoding="utf-8")
        (tmp / "report.html").write_text(html_report(comp, title, figures), encoding="utf-8")
        text = json.dumps(results_dict(comp, title), indent=1, allow_nan=False)
        (tmp / "results.json").write_text(text + "\n", encoding="utf-8")
        (tmp / "results.csv").write_text(results_csv(comp), encoding="utf-8")
