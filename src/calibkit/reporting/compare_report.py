"""Reports of evaluations and comparisons: text tables, Markdown, HTML, JSON, CSV and PNGs.

:func:`write_compare_report` turns a :class:`~calibkit.workflows.compare.Comparison` into a folder,
written atomically (it appears complete or not at all)::

    report.md      tables (every metric with its interval, noise floors, fitted
                   parameters, fit time; the best value per column in bold) and figures
    report.html    the same, self-contained: inline CSS, figures as data URIs
    results.json   every number, as fractions, plus the metadata
    results.csv    one row per method: <metric>, <metric>_lo, <metric>_hi, floors, ...
    figures/       reliability_grid.png, reliability_<method>.png, ece_temperature.png

Human tables show calibration errors and accuracy in percent; JSON and CSV keep fractions.

"""

from __future__ import annotations

import base64
import csv
import html
import io
import json
import math
import re
from pathlib import Path
from typing import Any

from calibkit.core.version import __version__
from calibkit.io.atomic import atomic_directory
from calibkit.reporting.figures import (
    ece_temperature_figure,
    figure_png_bytes,
    reliability_figure,
    reliability_grid,
)
from calibkit.reporting.tables import (
    comparison_tables,
    finite_or_none,
    html_table,
    markdown_table,
    metric_names,
)
from calibkit.workflows.compare import Comparison

REPORT_FORMAT = 1

HOW_TO_READ = (
    "Each calibrator was fitted on the calibration part only and is judged on the test part; "
    "the row 'none' is the model as it came. Calibration errors and accuracy are in percent; "
    "brackets hold the {level:.0%} bootstrap interval over the test part (every method is "
    "judged on the same resamples). Binned calibration errors are biased upwards at finite "
    "sample size, and a resample repeats samples, so for a well-calibrated model the interval "
    "can lie wholly above the estimate: it shows the spread, not the truth. A floor is the "
    "error a perfectly calibrated model with the same confidences would show at this sample "
    "size: an error near its floor is as small as this test part can measure. Bold marks the "
    "best value of each column, but where the intervals of two methods overlap widely the "
    "test part cannot rank them. NLL and Brier "
    "score (lower is better) also reward sharp, correct predictions. In a reliability "
    "diagram, bars below the diagonal are over-confident bins and the shaded band is each "
    "bin's gap between accuracy and mean confidence."
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
                "values": {k: finite_or_none(v) for k, v in ev.values.items()},
                "ci": {
                    k: [finite_or_none(lo), finite_or_none(hi)] for k, (lo, hi) in ev.ci.items()
                },
                "params": {k: finite_or_none(v) for k, v in r.params.items()},
                "fit_seconds": r.fit_seconds,
                "reliability": {
                    "edges": rel.edges.tolist(),
                    "counts": rel.counts.tolist(),
                    "accuracy": [finite_or_none(v) for v in rel.accuracy.tolist()],
                    "mean_confidence": [finite_or_none(v) for v in rel.mean_confidence.tolist()],
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
        "metrics": metric_names(comp.rows[0].evaluation),
        "methods": methods,
        "ece_vs_temperature": {
            "temperatures": comp.temperatures.tolist(),
            "ece": [finite_or_none(v) for v in comp.ece_curve.tolist()],
        },
    }


def results_csv(comp: Comparison) -> str:
    """One row per method: fraction columns, ``<metric>_lo`` / ``_hi``, floors, fit data."""
    names = metric_names(comp.rows[0].evaluation)
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
td.second{text-decoration:underline}
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
