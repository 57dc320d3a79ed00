"""Reports of evaluations and comparisons: text tables, Markdown, HTML, JSON, CSV and PNGs.

:func:`write_compare_report` turns a :class:`~calibkit.workflows.compare.Comparison` into a folder,
written atomically (it appears complete or not at all)::

    report.md      tables (every metric with its interval, noise floors, fitted
                   parameters, fit time; the best value per column in bold) and figures
    report.html    the same, self-contained: inline CSS, figures as data URIs
    results.json   every number, as fractions, plus the metadata
    results.csv    one row per method: <metric>, <metric>_lo, <metric>_hi, floors, ...
    figures/       reliability_grid.png, reliability_<method>.png, ece_temperature.png,
                   risk_coverage.png; with groups also reliability_groups.png

With groups (``compare(..., cal_groups=, test_groups=)``) the report gains a "Calibration per
group" section (each method's ECE, NLL and accuracy per group with intervals, its worst-group
gap), ``results.json`` a ``groups`` entry per method, and a per-group reliability figure.

Human tables show calibration errors and accuracy in percent; JSON and CSV keep fractions.

"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from calibkit.calibrators import CALIBRATORS
from calibkit.core.version import __version__
from calibkit.io.atomic import atomic_directory, check_replaceable_folder
from calibkit.io.jsonfile import json_ready, write_json
from calibkit.reporting.csv_text import csv_number, csv_text
from calibkit.reporting.document import (
    Block,
    Document,
    Figure,
    Gallery,
    Paragraph,
    Section,
    table_section,
)
from calibkit.reporting.figures import (
    ece_temperature_figure,
    figure_png_bytes,
    group_reliability_figure,
    reliability_figure,
    reliability_grid,
    risk_coverage_figure,
)
from calibkit.reporting.render import to_html, to_markdown
from calibkit.reporting.tables import comparison_tables, group_tables, marks_note, metric_names
from calibkit.workflows.compare import Comparison

REPORT_FORMAT = 1
#: The two figures shown full width; one reliability diagram per method follows in a gallery.
GRID, CURVE = "reliability_grid.png", "ece_temperature.png"
#: The risk-coverage curves of every method (selective prediction), also full width.
RC = "risk_coverage.png"
#: Reliability per group (with groups), full width too.
GROUPS_FIGURE = "reliability_groups.png"

GROUPS_HOW_TO_READ = (
    "Each method's ECE, NLL and accuracy on each group's rows of the test part; brackets hold "
    "{level:.0%} bootstrap intervals that redraw every group within itself (each resample "
    "keeps the group sizes). The ECE floor is the group's ECE were it perfectly calibrated "
    "with the same confidences: a small group's floor is high, and an ECE near it cannot be "
    "told from noise. The worst-group gap is the largest minus the smallest group ECE; a "
    "global calibrator can lower the average ECE and leave (or widen) this gap, a group-aware "
    "one (temperature_groupwise, multicalibration) fits the groups it was given."
)

HOW_TO_READ = (
    "Each calibrator was fitted on the calibration part only and is judged on the test part; "
    "the row 'none' is the model as it came. Calibration errors and accuracy are in percent; "
    "brackets hold the {level:.0%} bootstrap interval over the test part (every method is "
    "judged on the same resamples). Binned calibration errors are biased upwards at finite "
    "sample size, and a resample repeats samples, so for a well-calibrated model the interval "
    "can lie wholly above the estimate: it shows the spread, not the truth. The debiased "
    "ECE, shown beside the ECE, subtracts an estimate of that upward bias: read the two "
    "together. A floor is the "
    "error a perfectly calibrated model with the same confidences would show at this sample "
    "size: an error near its floor is as small as this test part can measure. Bold marks the "
    "best value of each column, but where the intervals of two methods overlap widely the "
    "test part cannot rank them. NLL and Brier "
    "score (lower is better) also reward sharp, correct predictions. In a reliability "
    "diagram, bars below the diagonal are over-confident bins and the shaded band is each "
    "bin's gap between accuracy and mean confidence. The selective-prediction metrics "
    "(failure AUROC, AURC, E-AURC, AUGRC, risk at 80% coverage, coverage at 5% risk) judge "
    "only how the confidence ranks the test samples: a method that keeps the ranking leaves "
    "them unchanged, and the ranking table says which methods change it."
)


# ----- figures, JSON and CSV ------------------------------------------------------------------
def figure_name(method: str) -> str:
    """File name of a method's reliability diagram (unsafe characters replaced)."""
    return "reliability_" + re.sub(r"[^A-Za-z0-9_.-]", "_", method) + ".png"


def comparison_figures(comp: Comparison, name: str) -> list[Figure]:
    """Every figure of the report: the reliability grid, ECE(T), one diagram per method.

    ``name`` says what was compared (a file's name, not its path); every title holds it,
    after the method where there is one, so each figure reads on its own.
    """
    panels = [(r.method, r.reliability, r.evaluation.values["ece"]) for r in comp.rows]
    grid = reliability_grid(
        panels, title=f"{name}: reliability on the test part, before and after calibration"
    )
    curve = ece_temperature_figure(
        comp.temperatures,
        comp.ece_curve,
        fitted=comp.fitted_temperatures,
        title=f"{name}: test-part ECE of the uncalibrated logits / T",
    )
    figs = [
        Figure(
            "reliability_grid.png", "Reliability diagrams, every method", figure_png_bytes(grid)
        ),
        Figure("ece_temperature.png", "Test-part ECE versus temperature", figure_png_bytes(curve)),
    ]
    curves = {r.method: r.risk_coverage for r in comp.rows if r.risk_coverage is not None}
    if curves:
        rc = risk_coverage_figure(curves, title=f"{name}: risk-coverage on the test part")
        figs.append(Figure(RC, "Risk-coverage curves, every method", figure_png_bytes(rc)))
    group_figure = _group_figure(comp, name)
    if group_figure is not None:
        figs.append(group_figure)
    for r in comp.rows:
        fig = reliability_figure(
            r.reliability,
            title=f"{r.method}: {name}",
            ece=r.evaluation.values["ece"],
            subtitle=f"test part, {comp.n_test:,} samples, {comp.n_bins} bins",
        )
        caption = f"Reliability diagram: {r.method}"
        figs.append(Figure(figure_name(r.method), caption, figure_png_bytes(fig)))
    return figs


def group_figure_methods(comp: Comparison) -> list[str]:
    """The methods of the per-group reliability figure: the uncalibrated model, the
    recommended method (else temperature scaling), and the group-aware method with the
    smallest worst-group gap."""
    names = [r.method for r in comp.rows if r.group_reliability is not None]
    rec = comp.recommendation.method if comp.recommendation is not None else "temperature"
    chosen = [names[0]] if names else []
    chosen += [m for m in (rec, "temperature") if m in names][:1]
    aware = [
        r
        for r in comp.rows
        if r.method in names
        and r.method in CALIBRATORS
        and CALIBRATORS.kind_of(r.method) == "groups"
    ]
    if aware:
        chosen.append(min(aware, key=lambda r: r.groups.gap if r.groups else math.inf).method)
    return list(dict.fromkeys(chosen))


def _group_figure(comp: Comparison, name: str) -> Figure | None:
    methods = group_figure_methods(comp)
    if not methods:
        return None
    rows = {r.method: r for r in comp.rows}
    first = rows[methods[0]].groups
    assert first is not None
    panels = []
    for g, n in zip(first.names, first.sizes, strict=True):
        lines = {}
        for m in methods:
            ge, bins = rows[m].groups, rows[m].group_reliability
            assert ge is not None
            assert bins is not None
            lines[m] = (bins[g], ge.values[g]["ece"])
        panels.append((f"group {g} ({n:,} samples)", lines))
    fig = group_reliability_figure(panels, title=f"{name}: reliability per group, test part")
    caption = "Reliability per group: " + ", ".join(methods)
    return Figure(GROUPS_FIGURE, caption, figure_png_bytes(fig))


def results_dict(comp: Comparison, title: str) -> dict[str, Any]:
    """Every number of the comparison (fractions; NaN becomes null), ready for JSON."""
    methods = []
    for r in comp.rows:
        ev, rel = r.evaluation, r.reliability
        methods.append(
            {
                "method": r.method,
                "values": dict(ev.values),
                "ci": {k: [lo, hi] for k, (lo, hi) in ev.ci.items()},
                "params": {**({"chosen": r.chosen} if r.chosen else {}), **r.params},
                "fit_seconds": r.fit_seconds,
                "tests": {name: test.to_dict() for name, test in r.tests.items()},
                "ranking": None
                if r.ranking is None
                else {"same_as_none": r.ranking.same, "kendall_tau": r.ranking.tau},
                **({} if r.groups is None else {"groups": r.groups.to_dict()}),
                "reliability": {
                    "edges": rel.edges.tolist(),
                    "counts": rel.counts.tolist(),
                    "accuracy": rel.accuracy.tolist(),
                    "mean_confidence": rel.mean_confidence.tolist(),
                },
            }
        )
    results = {
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
            "ece": comp.ece_curve.tolist(),
        },
    }
    if comp.recommendation is not None:
        rec = comp.recommendation
        results["recommendation"] = {"method": rec.method, "reason": rec.reason}
    return json_ready(results)  # type: ignore[no-any-return]


def results_csv(comp: Comparison) -> str:
    """One row per method: fraction columns, ``<metric>_lo`` / ``_hi``, floors, fit data."""
    names = metric_names(comp.rows[0].evaluation)
    floors = [k for k in comp.rows[0].evaluation.values if k.endswith("_floor")]
    triples = [c for n in names for c in (n, f"{n}_lo", f"{n}_hi")]
    rows = []
    for r in comp.rows:
        ev = r.evaluation
        row = [r.method]
        for n in names:
            lo, hi = ev.ci.get(n, (math.nan, math.nan))
            row += [csv_number(ev.values.get(n)), csv_number(lo), csv_number(hi)]
        row += [csv_number(ev.values.get(f)) for f in floors]
        params = {**({"chosen": r.chosen} if r.chosen else {}), **r.params}
        row += [csv_number(r.fit_seconds), ";".join(f"{k}={v!r}" for k, v in params.items())]
        rows.append(row)
    return csv_text(["method", *triples, *floors, "fit_seconds", "params"], rows)


# ----- the documents --------------------------------------------------------------------------
def _summary(comp: Comparison) -> str:
    level = comp.rows[0].evaluation.level
    return (
        f"{comp.n_classes} classes; calibration part {comp.n_cal:,} samples, test part "
        f"{comp.n_test:,} samples; {comp.n_bins} equal-width bins; {level:.0%} intervals from "
        f"{comp.n_boot:,} bootstrap resamples (seed {comp.seed})."
    )


def recommendation_paragraphs(comp: Comparison) -> list[str]:
    """What to use and why (the rule, on the calibration part), its test numbers beside
    temperature scaling's, and the methods whose ECE is below its noise floor (not better
    than each other at this size: not crowned)."""
    rec = comp.recommendation
    if rec is None:
        return []
    rows = {r.method: r.evaluation for r in comp.rows}
    text = [f"**Use {rec.method}.** Chosen on the calibration part alone: {rec.reason}."]
    chosen, ts = rows.get(rec.method), rows.get("temperature")
    if chosen is not None:
        v = chosen.values
        line = (
            f"On the test part: NLL {v['nll']:.4f}, ECE {100 * v['ece']:.2f}% "
            f"(noise floor {100 * v.get('ece_floor', math.nan):.2f}%)"
        )
        if ts is not None and rec.method != "temperature":
            t = ts.values
            line += f"; temperature scaling NLL {t['nll']:.4f}, ECE {100 * t['ece']:.2f}%"
        text.append(line + ".")
    below = [
        r.method
        for r in comp.rows
        if r.evaluation.values.get("ece", math.inf) < r.evaluation.values.get("ece_floor", 0.0)
    ]
    if below:
        text.append(
            "ECE below its noise floor (indistinguishable from calibrated at this test size, "
            "so not better than each other by ECE; compare NLL and Brier): "
            + ", ".join(below)
            + "."
        )
    return text


def compare_document(comp: Comparison, title: str, figures: list[Figure]) -> Document:
    """The report as a document: summary, how to read it, the tables, the figures."""
    intro = [Paragraph(f"Source: {comp.source}", meta=True)] if comp.source else []
    how = HOW_TO_READ.format(level=comp.rows[0].evaluation.level)
    big = [f for f in figures if f.name in (GRID, CURVE, RC, GROUPS_FIGURE)]
    singles = [f for f in figures if f.name not in (GRID, CURVE, RC, GROUPS_FIGURE)]
    by_group = group_tables(comp)
    groups = []
    if by_group:
        paragraphs = [GROUPS_HOW_TO_READ.format(level=comp.rows[0].evaluation.level)]
        noisy = comp.rows[0].groups.warnings if comp.rows[0].groups is not None else []
        paragraphs += [f"Uncalibrated model: {w}." for w in noisy]
        blocks: list[Block] = [Paragraph(p) for p in paragraphs]
        blocks += [table_section(t) for t in by_group]
        groups = [Section("Calibration per group", blocks)]
    return Document(
        title,
        [
            *intro,
            Paragraph(_summary(comp), meta=True),
            *(
                [Section("Recommendation", [Paragraph(p) for p in recommendation_paragraphs(comp)])]
                if comp.recommendation is not None
                else []
            ),
            Section("How to read this", [Paragraph(p) for p in (how, marks_note(comp)) if p]),
            *(table_section(t) for t in comparison_tables(comp)),
            *groups,
            Section("Figures", [*big, Gallery(singles)]),
        ],
    )


def written_before_manifests(name: str) -> bool:
    """Whether ``name`` (a path inside a report folder) is one a compare report has always
    held: such a folder written by an older calibkit, without a manifest, may be replaced."""
    top = ("report.md", "report.html", "results.json", "results.csv")
    return name in top or (name.startswith("figures/") and name.endswith(".png"))


def write_compare_report(
    comp: Comparison, out_dir: Path, *, title: str, name: str | None = None
) -> None:
    """Write the report folder ``out_dir`` atomically.

    ``title`` heads the report (and is kept in results.json); ``name``, what the figures
    say they show (default: ``title``), should be the input file's name, not its path.

    An existing ``out_dir`` is replaced only if calibkit wrote everything in it (see
    :mod:`calibkit.io.atomic`); otherwise an InputError is raised before any work.
    """
    check_replaceable_folder(Path(out_dir), "output", legacy=written_before_manifests)
    doc = compare_document(comp, title, comparison_figures(comp, name or title))
    with atomic_directory(Path(out_dir), legacy=written_before_manifests) as tmp:
        (tmp / "figures").mkdir()
        for fig in doc.figures():
            (tmp / "figures" / fig.name).write_bytes(fig.png)
        (tmp / "report.md").write_text(to_markdown(doc), encoding="utf-8")
        (tmp / "report.html").write_text(to_html(doc), encoding="utf-8")
        write_json(tmp / "results.json", results_dict(comp, title))
        (tmp / "results.csv").write_text(results_csv(comp), encoding="utf-8")
