"""Reports of comparisons (``calibkit compare``, ``calibkit demo``): the verdict, tables,
figures, JSON and CSV.

:func:`compare_report` turns a :class:`~calibkit.workflows.comparison.Comparison` into a
:class:`~calibkit.reporting.writer.Report`, written by the one writer
(:mod:`calibkit.reporting.writer`)::

    report.md      the verdict, the table that decides, one figure and a short guide;
                   then, folded, the tables (every metric with its interval and one-line
                   meaning, noise floors, fitted parameters, fit time; the best value per
                   column in bold) and the other figures
    report.html    the same, self-contained
    results.json   the writer's header (verdict, inputs, options, versions), then every
                   number as fractions
    results.csv    one row per method: <metric>, <metric>_lo, <metric>_hi, floors, ...
    figures/       reliability_before_after.png (none, the recommended and the group-aware
                   method), reliability_grid.png (every method), ece_temperature.png,
                   risk_coverage.png; with groups also reliability_groups.png

A newcomer reads the first screen: the verdict, the rule's table on the calibration part
(the table that decides; without a recommendation, the first table of test errors), the
reliability diagrams before and after, and "How to read this" (:data:`HOW_TO_READ`, the rest
in ``docs/reports.md``). Everything else is a folded section
(:class:`~calibkit.reporting.document.Section` ``folded``).

The verdict comes first (:func:`~calibkit.reporting.compare_verdict.compare_verdict`:
which calibrator to use and what it buys on the test part); the figures are drawn by
:func:`~calibkit.reporting.compare_figures.comparison_figures`.

With groups (``compare(..., cal_groups=, test_groups=)``) the report gains a "Calibration per
group" section (each method's ECE, NLL and accuracy per group with intervals, its worst-group
gap), ``results.json`` a ``groups`` entry per method, and a per-group reliability figure.

Human tables show calibration errors and accuracy in percent; JSON and CSV keep fractions.
:func:`write_compare_report` writes a folder in one call (for library users).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from calibkit.calibrators.logit.auto import margin_words
from calibkit.core.words import plural
from calibkit.io.atomic import check_replaceable_folder
from calibkit.io.jsonfile import json_ready
from calibkit.reporting import document
from calibkit.reporting.compare_figures import BEFORE_AFTER, comparison_figures
from calibkit.reporting.compare_verdict import (
    compare_verdict,
    recommendation_paragraphs,
    recommendation_table,
    unshrunk_note,
)
from calibkit.reporting.csv_text import csv_number, csv_text
from calibkit.reporting.per_group import MAX_FULL_TABLE_GROUPS, per_group_help, per_group_table
from calibkit.reporting.tables import (
    ACCURACY_MARK,
    comparison_tables,
    format_comparison_summary,
    format_group_summary,
    group_tables,
    marks_note,
    meanings,
    metric_keys,
    metric_names,
    same_map_lines,
)
from calibkit.reporting.writer import Report, write_report
from calibkit.workflows.comparison import Comparison
from calibkit.workflows.methods import left_out_lines

if TYPE_CHECKING:
    from calibkit.workflows.demo import DemoResult


GROUPS_HOW_TO_READ = (
    "Each method's ECE, NLL and accuracy on each group's rows of the test part. Brackets hold "
    "{level:.0%} intervals: for a group's ECE, of its true calibration error; for NLL and "
    "accuracy, Student-t intervals of the group's population mean. The ECE floor is "
    "the group's ECE were it perfectly calibrated with the same confidences: a small group's "
    "floor is high, and an ECE near it cannot be told from noise. The worst-group gap is the "
    "largest minus the smallest group ECE, and its interval is of the true gap (all the "
    "groups' intervals at once): when it reaches 0, the test part cannot tell the groups "
    "apart. A global calibrator can lower the average ECE and leave (or widen) this gap, a "
    "group-aware one (temperature_groupwise, multicalibration) fits the groups it was given."
)

#: "How to read this": what a newcomer needs to read the first screen (about 100 words);
#: everything else about reading the report is in ``docs/reports.md``, each metric's
#: meaning under its table (:func:`~calibkit.reporting.tables.meaning`).
HOW_TO_READ = (
    "Each calibrator was fitted on the calibration part only; the test part only judges it, "
    "and the row `none` is the model as it came. The verdict's method is chosen on the "
    "calibration part by calibkit's rule: temperature scaling is kept unless a richer method "
    "lowers the cross-fitted NLL by more than {margin} (the table above); never by the "
    "lowest test ECE. Errors and accuracy are in percent; brackets hold {level:.0%} "
    "intervals, and where two methods' intervals overlap the test part cannot rank them. A "
    "noise floor is the ECE a perfectly calibrated model shows at this sample size. Each "
    "metric's meaning is under its table; the rest: `docs/reports.md` in calibkit's "
    "documentation."
)


# ----- JSON and CSV ---------------------------------------------------------------------------


def results_dict(comp: Comparison, title: str | None = None) -> dict[str, Any]:
    """Every number of the comparison (fractions; NaN becomes null), ready for JSON: the
    ``results`` of its :class:`Report` (the writer adds the header: format, version, title,
    verdict, inputs, options, versions; ``title`` is not used, kept for callers)."""
    methods = []
    for r in comp.rows:
        ev, rel = r.evaluation, r.reliability
        methods.append(
            {
                "method": r.method,
                "values": dict(ev.values),
                "ci": {k: [lo, hi] for k, (lo, hi) in ev.ci.items()},
                "ci_estimand": dict(ev.estimands),
                "nll_change_vs_none": _change(comp, r.method),
                "params": {**({"chosen": r.chosen} if r.chosen else {}), **r.params},
                "same_map_as": comp.same_maps.get(r.method),
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
        "source": comp.source,
        "n_cal": comp.n_cal,
        "n_test": comp.n_test,
        "n_classes": comp.n_classes,
        "n_bins": comp.n_bins,
        "n_boot": comp.resampling.n_boot,
        "seed": comp.resampling.seed,
        "ci_level": comp.rows[0].evaluation.level,
        "metrics": metric_names(comp.rows[0].evaluation),
        "methods": methods,
        "ece_vs_temperature": {
            "temperatures": comp.temperatures.tolist(),
            "ece": comp.ece_curve.tolist(),
        },
    }
    if comp.declined:  # the default methods not run on this data, with why
        results["declined"] = dict(comp.declined)
    if comp.recommendation is not None:
        rec = comp.recommendation
        chosen: dict[str, object] = {"method": rec.method, "reason": rec.reason}
        if rec.not_cross_fitted:  # left out of the choice by their declared scope, with why
            chosen["not_cross_fitted"] = dict(rec.not_cross_fitted)
        results["recommendation"] = chosen
    if comp.smallest_gap is not None:
        results["smallest_worst_group_gap"] = comp.smallest_gap
    return json_ready(results)  # type: ignore[no-any-return]


def _change(comp: Comparison, method: str) -> dict[str, float | str] | None:
    """The paired NLL change from the uncalibrated row, for the JSON (None without
    intervals, and for the uncalibrated row)."""
    ci = comp.nll_change(method) if method != "none" else None
    if ci is None:
        return None
    return {"estimate": ci.estimate, "low": ci.low, "high": ci.high, "estimand": ci.estimand}


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
        f"{plural(comp.resampling.n_boot, 'bootstrap resample')} (seed {comp.resampling.seed})."
    )


#: With groups: how the verdict treats them (first in the folded per-group section).
GROUPS_VERDICT_HOW_TO_READ = (
    "With groups, the method to use is still chosen without them (the calibration part "
    "gives no per-group judgement of the group-aware calibrators), and the verdict adds, "
    "read on the test part, the calibrator with the smallest worst-group ECE gap and both "
    "gaps. When they are two methods, pick by what matters: the overall choice for the "
    "best NLL, the smallest-gap one for fairness across the groups; overlapping gap "
    "intervals mean the test part cannot tell the two gaps apart."
)


def _folded_tables(comp: Comparison, tables: list[document.Table]) -> list[document.Section]:
    """Each table in a folded section of its own, with what the marks of its rows mean
    (:func:`~calibkit.reporting.tables.marks_note`), under the first why rows marked
    ``(= X)`` are the same map as X (:func:`~calibkit.reporting.tables.same_map_lines`), and
    under each the one-line meaning of each metric it shows
    (:func:`~calibkit.reporting.tables.meanings`)."""
    twins, marks = " ".join(same_map_lines(comp)), marks_note(comp)
    sections = []
    for i, table in enumerate(tables):
        notes = [twins] if twins and i == 0 else []
        marked = any("(= " in r[0].text or ACCURACY_MARK in r[0].text for r in table.rows)
        notes += [marks] if marks and marked else []
        notes += meanings(metric_keys(table))
        blocks: list[document.Block] = [table, *(document.Paragraph(n) for n in notes)]
        sections.append(document.Section(table.title, blocks, folded=True))
    return sections


def declined_lines(comp: Comparison) -> list[str]:
    """The default methods the comparison did not run, with their reasons
    (:attr:`~calibkit.workflows.comparison.Comparison.declined`; one line per reason): never
    silently dropped.

    >>> import dataclasses
    >>> from calibkit import Resampling, as_outputs, compare
    >>> out = as_outputs([0, 1], probs=[[0.8, 0.2], [0.4, 0.6]])
    >>> comp = compare(out, out, [], resampling=Resampling(n_boot=0))
    >>> declined_lines(dataclasses.replace(comp, declined={"matrix": "too many parameters"}))
    ['Not run by default on this data: matrix (too many parameters).']
    """
    return [f"Not run by default on this data: {line}." for line in left_out_lines(comp.declined)]


def compare_document(
    comp: Comparison, title: str, figures: list[document.Figure], intro: Sequence[str] = ()
) -> document.Document:
    """The report as a document, a newcomer's minute first: the verdict, the summary
    (``intro``: what came before the comparison, such as the demo's training), the table
    that decides (the rule's, on the calibration part; without one, the first table of test
    errors), the figure before and after (:data:`BEFORE_AFTER`), a short "How to read
    this"; then folded, the groups, each table with its metrics' meanings, the other
    figures."""
    meta = [*intro, *([f"Source: {comp.source}"] if comp.source else []), _summary(comp)]
    meta += declined_lines(comp)
    level = comp.rows[0].evaluation.level
    how = HOW_TO_READ.format(margin=margin_words(), level=level)
    first: list[document.Block] = [f for f in figures if f.name == BEFORE_AFTER]
    more = [f for f in figures if f.name != BEFORE_AFTER]
    groups: list[document.Section] = []
    if by_group := group_tables(comp):
        paragraphs = [GROUPS_VERDICT_HOW_TO_READ, GROUPS_HOW_TO_READ.format(level=level)]
        noisy = comp.rows[0].groups.warnings if comp.rows[0].groups is not None else []
        paragraphs += [f"Uncalibrated model: {w}." for w in noisy]
        if helps := per_group_help(comp):
            paragraphs.insert(0, helps)
        blocks: list[document.Block] = [document.Paragraph(p) for p in paragraphs]
        summary = per_group_table(comp)
        blocks += [document.table_section(summary)] if summary is not None else []
        n_groups = len(comp.rows[0].groups.names) if comp.rows[0].groups is not None else 0
        if n_groups > MAX_FULL_TABLE_GROUPS:  # every method on every group: results.json
            by_group = by_group[1:]
        blocks += [document.table_section(t) for t in by_group]
        groups = [document.Section("Calibration per group", blocks, folded=True)]
    explained = recommendation_paragraphs(comp)
    tables = _folded_tables(comp, comparison_tables(comp))
    rule = recommendation_table(comp)
    decides: list[document.Block] = [document.Paragraph(p) for p in explained]
    if rule is not None:
        decides.append(document.table_section(rule))
        if note := unshrunk_note(comp):
            decides.append(
                document.Section("Rows marked (unshrunk)", [document.Paragraph(note)], folded=True)
            )
    top = [document.Section("Recommendation", decides)] if decides else []
    if rule is None and tables:  # no rule: the first table of test errors, unfolded
        top.append(document.Section(tables[0].title, tables[0].blocks))
        tables = tables[1:]
    return document.Document(
        title,
        [
            *(document.Paragraph(p, meta=True) for p in meta),
            *top,
            *(
                [document.Section("Reliability before and after calibration", first)]
                if first
                else []
            ),
            document.Section("How to read this", [document.Paragraph(how)]),
            *groups,  # the verdict speaks of them: first of the folded sections
            *tables,
            *(
                [document.Section("More figures", [document.Gallery(more)], folded=True)]
                if more
                else []
            ),
        ],
        verdict=compare_verdict(comp),
    )


def comparison_text(comp: Comparison) -> str:
    """The terminal's tables below the verdict: each method's ECE, NLL, accuracy and
    parameters, and with groups each one's worst-group gap."""
    return "\n\n".join(
        t for t in (format_comparison_summary(comp), format_group_summary(comp)) if t
    )


def compare_report(
    comp: Comparison,
    *,
    title: str,
    name: str | None = None,
    command: str = "compare",
    inputs: Mapping[str, str] | None = None,
    options: Mapping[str, Any] | None = None,
    intro: Sequence[str] = (),
    text: str | None = None,
) -> Report:
    """The :class:`Report` of a comparison: the document (verdict first), every number
    (:func:`results_dict`), ``results.csv`` and the terminal's tables (``text``, default
    :func:`comparison_text`).

    ``name``, what the figures say they show (default: ``title``), should be the input
    file's name, not its path; ``intro``: paragraphs on what came before the comparison.
    """
    doc = compare_document(comp, title, comparison_figures(comp, name or title), intro)
    return Report(
        command,
        doc,
        results_dict(comp),
        text=comparison_text(comp) if text is None else text,
        inputs=dict(inputs or {}),
        options=dict(options or {}),
        files={"results.csv": results_csv(comp)},
    )


def demo_lines(res: DemoResult) -> list[str]:
    """What the demo trained and how its test part looked before calibration."""
    comp, s = res.comparison, res.settings
    before = comp.rows[0].evaluation.values
    return [
        f"Trained a 64-{s.hidden}-10 MLP on {res.n_train} noisy digits for "
        f"{plural(s.epochs, 'epoch')} "
        f"(train accuracy {100 * res.train_accuracy:.1f}%, last epoch's loss "
        f"{res.final_loss:.4f}).",
        f"Test part, {comp.n_test} samples: accuracy {100 * before['accuracy']:.1f}%, ECE "
        f"{100 * before['ece']:.2f}% before calibration (noise floor "
        f"{100 * before['ece_floor']:.2f}%).",
    ]


def demo_summary(res: DemoResult) -> str:
    """The demo for people: what was trained, the test ECE before and after each
    calibrator, and the recommended one (chosen on the calibration part, never by the
    lowest test ECE)."""
    comp = res.comparison
    lines = demo_lines(res)
    for row in comp.rows[1:]:
        t = row.params.get("temperature")
        fitted = f" (T = {t:.3f})" if t is not None else ""
        lines.append(f"  after {row.method}{fitted}: ECE {100 * row.evaluation.values['ece']:.2f}%")
    if comp.recommendation is not None:
        from calibkit.reporting.text import plain

        lines.append("recommended: " + plain(compare_verdict(comp).headline.removeprefix("Use ")))
    return "\n".join(lines)


def demo_report(
    res: DemoResult,
    *,
    title: str,
    inputs: Mapping[str, str] | None = None,
    options: Mapping[str, Any] | None = None,
) -> Report:
    """The demo's :class:`Report`: the comparison's report, with what was trained first."""
    intro = demo_lines(res)
    text = "\n".join(intro) + "\n\n" + comparison_text(res.comparison)
    extra = {"n_train": res.n_train, "train_accuracy": res.train_accuracy}
    report = compare_report(
        res.comparison,
        title=title,
        command="demo",
        inputs=inputs,
        options=options,
        intro=intro,
        text=text,
    )
    return Report(
        report.command,
        report.document,
        {**report.results, "demo": {**extra, "final_loss": res.final_loss}},
        text=report.text,
        inputs=report.inputs,
        options=report.options,
        files=report.files,
    )


def write_compare_report(
    comp: Comparison, out_dir: Path, *, title: str, name: str | None = None
) -> None:
    """Write the report folder ``out_dir`` atomically (:func:`compare_report` written by
    :func:`~calibkit.reporting.writer.write_report`).

    ``title`` heads the report (and is kept in results.json); ``name``, what the figures
    say they show (default: ``title``), should be the input file's name, not its path.

    An existing ``out_dir`` is replaced only if calibkit wrote everything in it (see
    :mod:`calibkit.io.atomic`); otherwise an InputError is raised before any work.

    Examples
    --------
    >>> import tempfile
    >>> import numpy as np
    >>> from calibkit import Resampling, as_outputs, compare
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 3, 600)
    >>> z = rng.normal(size=(600, 3)) + 2.0 * np.eye(3)[y]
    >>> cal, test = as_outputs(y[:300], logits=z[:300]), as_outputs(y[300:], logits=z[300:])
    >>> comparison = compare(cal, test, ["temperature"], resampling=Resampling(n_boot=0))
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     write_compare_report(comparison, Path(folder) / "report", title="Demo")
    ...     sorted(path.name for path in (Path(folder) / "report").glob("report.*"))
    ['report.html', 'report.md']
    """
    check_replaceable_folder(Path(out_dir), "output")
    report = compare_report(comp, title=title, name=name)
    write_report(report, Path(out_dir))
