"""Reports of comparisons (``calibkit compare``, ``calibkit demo``): the verdict, tables,
figures, JSON and CSV.

:func:`compare_report` turns a :class:`~calibkit.workflows.comparison.Comparison` into a
:class:`~calibkit.reporting.writer.Report`, written by the one writer
(:func:`~calibkit.reporting.writer.write_report`, atomically: the folder appears complete or
not at all)::

    report.md      the verdict, the table that decides, one figure and a short guide;
                   then, folded, the tables (every metric with its interval and one-line
                   meaning, noise floors, fitted parameters, fit time; the best value per
                   column in bold) and the other figures
    report.html    the same, self-contained: inline CSS, figures as data URIs
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

The verdict (:func:`compare_verdict`) comes first: which calibrator to use (chosen on the
calibration part alone, :class:`~calibkit.workflows.compare.Recommendation`) and what it buys
on the test part in NLL and ECE against temperature scaling (against the uncalibrated model
when temperature scaling is the choice). With groups it also names the calibrator with the
smallest worst-group ECE gap on the test part
(:attr:`~calibkit.workflows.comparison.Comparison.smallest_gap`) with both gaps.

With groups (``compare(..., cal_groups=, test_groups=)``) the report gains a "Calibration per
group" section (each method's ECE, NLL and accuracy per group with intervals, its worst-group
gap), ``results.json`` a ``groups`` entry per method, and a per-group reliability figure.

Human tables show calibration errors and accuracy in percent; JSON and CSV keep fractions.
:func:`write_compare_report` writes a folder in one call (for library users).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from calibkit.calibrators import CALIBRATORS
from calibkit.calibrators.logit.auto import MARGIN_SE, enters_unshrunk, margin_words
from calibkit.core.catalog import title as method_title
from calibkit.core.progress import Phase
from calibkit.core.words import plural
from calibkit.io.atomic import check_replaceable_folder
from calibkit.io.jsonfile import json_ready
from calibkit.reporting.csv_text import csv_number, csv_text
from calibkit.reporting.curves import ece_temperature_figure, risk_coverage_figure
from calibkit.reporting.document import (
    Block,
    Cell,
    Document,
    Figure,
    Gallery,
    Paragraph,
    Section,
    Table,
    Verdict,
    table_section,
)
from calibkit.reporting.figures import (
    figure_png_bytes,
    group_reliability_figure,
    reliability_grid,
)
from calibkit.reporting.per_group import (
    BEST_PANELS,
    MAX_FULL_TABLE_GROUPS,
    aware_method,
    panel_groups,
    per_group_help,
    per_group_table,
    reference_method,
)
from calibkit.reporting.tables import (
    ACCURACY_MARK,
    column_info,
    comparison_tables,
    format_comparison_summary,
    format_group_summary,
    format_points,
    format_value,
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
    from matplotlib.figure import Figure as MplFigure

    from calibkit.workflows.demo import DemoResult

_log = logging.getLogger(__name__)
#: The one figure shown unfolded: the reliability diagrams of :func:`single_methods`.
BEFORE_AFTER = "reliability_before_after.png"
#: Folded: every method's reliability diagram, and the test-part ECE against temperature.
GRID, CURVE = "reliability_grid.png", "ece_temperature.png"
#: The risk-coverage curves of every method (selective prediction), folded too.
RC = "risk_coverage.png"
#: Reliability per group (with groups), folded too.
GROUPS_FIGURE = "reliability_groups.png"

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


# ----- figures, JSON and CSV ------------------------------------------------------------------
def comparison_figures(comp: Comparison, name: str) -> list[Figure]:
    """Every figure of the report: the reliability diagrams before and after calibration
    (:func:`single_methods`), the grid of every method, ECE(T), the risk-coverage curves,
    and with groups the reliability per group.

    ``name`` says what was compared (a file's name, not its path); every title holds it,
    so each figure reads on its own.
    """
    curves = {r.method: r.risk_coverage for r in comp.rows if r.risk_coverage is not None}
    n = 3 + bool(curves)
    phase = Phase(_log, f"drawing {n} figures", n)

    def png(fig: MplFigure) -> bytes:
        data = figure_png_bytes(fig)
        phase.step()
        return data

    panels = {
        r.method: (
            r.method,
            r.reliability,
            r.evaluation.values["ece"],
            r.evaluation.values.get("ece_floor"),
        )
        for r in comp.rows
    }
    chosen = single_methods(comp)
    before_after = reliability_grid(
        [panels[m] for m in chosen],
        ncols=len(chosen),
        title=f"{name}: reliability on the test part, before and after calibration",
    )
    grid = reliability_grid(
        list(panels.values()), title=f"{name}: reliability on the test part, every method"
    )
    floors = {r.method: r.evaluation.values.get("ece_floor") for r in comp.rows}
    first = next(iter(comp.fitted_temperatures), None)
    curve = ece_temperature_figure(
        comp.temperatures,
        comp.ece_curve,
        fitted=comp.fitted_temperatures,
        title=f"{name}: test-part ECE against the temperature",
        floor=floors.get(first) if first is not None else None,
    )
    shown = ", ".join(chosen)
    figs = [
        Figure(BEFORE_AFTER, f"Reliability diagrams: {shown}", png(before_after)),
        Figure(GRID, "Reliability diagrams, every method", png(grid)),
        Figure(CURVE, "Test-part ECE versus temperature", png(curve)),
    ]
    if curves:
        rc = risk_coverage_figure(curves, title=f"{name}: risk-coverage on the test part")
        figs.append(Figure(RC, "Risk-coverage curves, every method", png(rc)))
    group_figure = _group_figure(comp, name)
    if group_figure is not None:
        figs.append(group_figure)
    return figs


def single_methods(comp: Comparison) -> list[str]:
    """The methods of the figure shown first (:data:`BEFORE_AFTER`, one panel each): the
    uncalibrated model, the recommended method (else temperature scaling), and with groups
    the group-aware method with the smallest worst-group gap. Every method is in the folded
    grid; a figure of each again cost 0.3 s a method (15 methods: 4.5 of a report's 17 s),
    and a diagram of each of these on its own drew them twice (issue #46, item 6).
    """
    rec = comp.recommendation.method if comp.recommendation is not None else "temperature"
    names = [r.method for r in comp.rows]
    chosen = [names[0], *(m for m in (rec, aware_method(comp)) if m in names)]
    return list(dict.fromkeys(chosen))


def group_figure_methods(comp: Comparison) -> list[str]:
    """The methods of the per-group reliability figure: the uncalibrated model, the
    recommended method (else temperature scaling), the group-aware method with the
    smallest worst-group gap, and the method with the smallest worst-group gap of all (the
    one the verdict names, group-aware or not)."""
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
    if comp.smallest_gap in names:  # the verdict names it: the figure draws it
        chosen.append(comp.smallest_gap)
    return list(dict.fromkeys(chosen))


def _group_figure(comp: Comparison, name: str) -> Figure | None:
    methods = group_figure_methods(comp)
    if not methods:
        return None
    rows = {r.method: r for r in comp.rows}
    first = rows[methods[0]].groups
    assert first is not None
    sizes = dict(zip(first.names, first.sizes, strict=True))
    drawn = panel_groups(comp)
    panels = []
    for g in drawn:
        n = sizes[g]
        lines = {}
        for m in methods:
            ge, bins = rows[m].groups, rows[m].group_reliability
            assert ge is not None
            assert bins is not None
            lines[m] = (bins[g], ge.values[g]["ece"], ge.values[g].get("ece_floor"))
        panels.append((f"group {g} ({n:,} samples)", lines))
    fig = group_reliability_figure(panels, title=f"{name}: reliability per group, test part")
    caption = "Reliability per group: " + ", ".join(methods)
    if len(drawn) < len(first.names):
        best = min(BEST_PANELS, len(drawn) // 2)
        caption += (
            f"; the {len(drawn) - best} worst and {best} best of {len(first.names)} groups by "
            f"{reference_method(comp)}'s ECE (every group: the table)"
        )
    return Figure(GROUPS_FIGURE, caption, figure_png_bytes(fig))


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


def metric_change(name: str, before: float, after: float) -> str:
    """'lowers NLL from 0.2410 to 0.2262' (raises, or leaves it at, as the numbers say).

    >>> metric_change("ece", 0.0121, 0.0084), metric_change("nll", 0.2, 0.2)
    ('lowers ECE from 1.21% to 0.84%', 'leaves NLL at 0.2000')
    """
    label = column_info(name).label
    a, b = format_value(name, before), format_value(name, after)
    if a == b:
        return f"leaves {label} at {b}"
    return f"{'lowers' if after < before else 'raises'} {label} from {a} to {b}"


def nll_ece_change(before: Mapping[str, float], after: Mapping[str, float]) -> str:
    """How NLL and ECE change from ``before`` to ``after``, in one phrase.

    >>> nll_ece_change({"nll": 0.25, "ece": 0.02}, {"nll": 0.23, "ece": 0.01})
    'lowers NLL from 0.2500 to 0.2300 and ECE from 2.00% to 1.00%'
    """
    nll, ece = (
        metric_change(n, before.get(n, math.nan), after.get(n, math.nan)) for n in ("nll", "ece")
    )
    verb = nll.split(" ", 1)[0]
    if verb != "leaves" and ece.startswith(verb + " "):  # 'lowers NLL from a to b and ECE ...'
        ece = ece.removeprefix(verb + " ")
    return f"{nll} and {ece}"


def named(method: str) -> str:
    """A method as a verdict names it: its key in code with its declared title
    (:func:`calibkit.core.catalog.title`), a combination ``a+b`` by its parts; the
    key alone for a method declared nowhere (a plug-in's).

    >>> named("ms_odir")
    '`ms_odir` (matrix scaling with off-diagonal and intercept regularisation)'
    >>> named("bcts"), named("someone_elses")
    ('`bcts` (bias-corrected temperature scaling)', '`someone_elses`')
    """
    parts = [method_title(p) for p in method.split("+")]
    if not all(parts):
        return f"`{method}`"
    return f"`{method}` ({', then '.join(p for p in parts if p)})"


def _buys(comp: Comparison, method: str) -> str:
    """What ``method`` does on the test part against temperature scaling (or against the
    uncalibrated model, for temperature scaling or when it was not compared)."""
    rows = {r.method: r.evaluation.values for r in comp.rows}
    base = "temperature" if method != "temperature" and "temperature" in rows else "none"
    against = "temperature scaling" if base == "temperature" else "the uncalibrated model"
    return f"on the test part it {nll_ece_change(rows[base], rows[method])} against {against}"


def paired_nll_sentence(comp: Comparison, method: str) -> str:
    """The paired NLL change on the test part from the row ``_buys`` compares ``method``
    with, with its interval and whether the test part tells the two apart; empty without
    intervals."""
    names = [r.method for r in comp.rows]
    base = "temperature" if method != "temperature" and "temperature" in names else "none"
    ci = comp.nll_change(method, base) if method in names else None
    if ci is None:
        return ""
    against = "temperature scaling" if base == "temperature" else "the uncalibrated model"
    text = (
        f"Paired NLL change on the test part against {against}: {ci.estimate:+.4f} "
        f"({ci.level:.0%} CI [{ci.low:+.4f}, {ci.high:+.4f}])"
    )
    if ci.low <= 0.0 <= ci.high:
        return text + ": the test part cannot tell their NLLs apart."
    return text + "."


def _gap_text(comp: Comparison, method: str) -> str:
    row = comp.row(method)
    assert row.groups is not None
    return format_points(row.groups.gap)  # a difference of percentages


def _gaps_overlap(comp: Comparison, a: str, b: str) -> bool | None:
    ca, cb = comp.row(a).groups, comp.row(b).groups
    if ca is None or cb is None or ca.gap_ci is None or cb.gap_ci is None:
        return None
    return ca.gap_ci[0] <= cb.gap_ci[1] and cb.gap_ci[0] <= ca.gap_ci[1]


def compare_verdict(comp: Comparison) -> Verdict:
    """The verdict of a comparison: the calibrator to use and what it buys on the test part
    (NLL and ECE against temperature scaling, or against the uncalibrated model when
    temperature scaling is the choice); with groups, the calibrator with the smallest
    worst-group ECE gap too; the rule and its numbers on the calibration part below."""
    rec, names = comp.recommendation, [r.method for r in comp.rows]
    if rec is None:
        return Verdict(
            f"No method was chosen: the tables judge {len(names) - 1} calibrators on the test "
            "part (compare(..., recommend=True) chooses one on the calibration part).",
            "Do not pick by the lowest test ECE: step maps such as histogram binning reach it "
            "by luck.",
        )
    use = f"Use {named(rec.method)}"
    buys = _buys(comp, rec.method) if rec.method in names else ""
    detail = [f"Chosen on the calibration part alone: {rec.reason}."]
    if paired := paired_nll_sentence(comp, rec.method):
        detail.append(paired)
    if rec.method not in names:
        detail.append(f"{rec.method} was not among the compared methods: no test numbers.")
    else:
        v = comp.row(rec.method).evaluation.values
        if v.get("ece", math.inf) < v.get("ece_floor", -math.inf):
            floor = format_value("ece", v["ece_floor"])
            detail.append(
                f"Its test ECE is below its noise floor ({floor}): as small as "
                "this test part can measure."
            )
    if helps := per_group_help(comp):
        detail.append(helps)
    gap = comp.smallest_gap
    if gap is None:
        return Verdict(f"{use}: {buys}." if buys else f"{use}.", " ".join(detail))
    if gap == rec.method:
        head = (
            f"{use}: {buys}; it also has the smallest worst-group ECE gap ({_gap_text(comp, gap)})."
        )
        return Verdict(head, " ".join(detail))
    overlap = rec.method in names and _gaps_overlap(comp, gap, rec.method)
    if overlap:  # the test part cannot tell the two gaps apart: no second recommendation
        head = f"{use}: {buys}" if buys else use
        head += (
            f"; its worst-group ECE gap ({_gap_text(comp, rec.method)}) cannot be told apart "
            f"on the test part from the smallest, `{gap}`'s ({_gap_text(comp, gap)})."
        )
        detail.append(
            f"The two gaps' {_level(comp)} intervals overlap, so the test part does not say "
            f"that {named(gap)} is fairer across the groups; more test samples per group "
            "would."
        )
        return Verdict(head, " ".join(detail))
    if buys:  # the headline is about the groups; what the choice buys overall goes below
        detail.insert(0, f"Overall, {buys.removeprefix('on the test part it ')} on the test part.")
        detail[0] = f"Overall, `{rec.method}` " + detail[0].removeprefix("Overall, ")
    head = f"{use} overall; for the groups, {named(gap)} "
    head += f"has the smallest worst-group ECE gap on the test part: {_gap_text(comp, gap)}"
    if rec.method in names and comp.row(rec.method).groups is not None:
        head += f" against {_gap_text(comp, rec.method)} for `{rec.method}`"
        if overlap is False:
            detail.append(
                f"The two gaps' {_level(comp)} intervals do not overlap: the test part tells "
                "them apart."
            )
    detail.append(
        "The overall choice ignores the groups; the smallest gap is read on the test part."
    )
    return Verdict(head + ".", " ".join(detail))


def _level(comp: Comparison) -> str:
    """The intervals' level in words (``95%``)."""
    return f"{comp.rows[0].evaluation.level:.0%}"


def recommendation_paragraphs(comp: Comparison) -> list[str]:
    """The longer explanation below the verdict: the recommended method's test numbers
    beside temperature scaling's, and the methods whose ECE is below its noise floor (not
    better than each other at this size: not crowned)."""
    rec = comp.recommendation
    if rec is None:
        return []
    rows = {r.method: r.evaluation for r in comp.rows}
    text = []
    chosen, ts = rows.get(rec.method), rows.get("temperature")
    if chosen is not None:
        v = chosen.values
        line = (
            f"{rec.method} on the test part: NLL {v['nll']:.4f}, ECE {100 * v['ece']:.2f}% "
            f"(noise floor {100 * v.get('ece_floor', math.nan):.2f}%)"
        )
        if ts is not None and rec.method != "temperature":
            t = ts.values
            line += f"; temperature scaling NLL {t['nll']:.4f}, ECE {100 * t['ece']:.2f}%"
        text.append(line + ".")
    for name, why in rec.not_cross_fitted.items():
        text.append(f"Not a candidate of the recommendation: {name} ({why}).")
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


def recommendation_table(comp: Comparison) -> Table | None:
    """The rule's numbers on the calibration part: each candidate's mean cross-fitted NLL
    and its paired difference from temperature scaling (lowest NLL first; None when
    nothing was cross-fitted)."""
    rec = comp.recommendation
    if rec is None or not rec.scores:
        return None
    rows = []
    for name, score in sorted(rec.scores.items(), key=lambda item: item[1]):
        d = rec.paired.get(name)
        diff = "" if d is None else f"{d[0]:+.4f} ± {d[1]:.4f}"
        beats = "" if d is None else ("yes" if d[0] + MARGIN_SE * d[1] < 0 else "no")
        mark = "chosen" if name == rec.method else ""
        label = f"{name} (unshrunk)" if enters_unshrunk(name) else name
        rows.append(
            [
                Cell(label),
                Cell(f"{score:.4f}", best=name == rec.method),
                Cell(diff),
                Cell(beats),
                Cell(mark),
            ]
        )
    header = [
        "Method",
        "Cross-fitted NLL",
        "Its NLL minus temperature's (± one standard error)",
        f"Beats temperature by > {MARGIN_SE:g} SE",
        "",
    ]
    title = "The rule on the calibration part (cross-fitted NLL)"
    return Table(title, header, rows)


def unshrunk_note(comp: Comparison) -> str:
    """Why a row of the rule's table marked ``(unshrunk)`` does not have the cross-fitted
    NLL its row of the other tables would suggest: the rule cross-fits those methods in
    their published form (:func:`calibkit.calibrators.logit.auto.candidate`), while the
    comparison fits them shrunk towards temperature scaling; empty when none is."""
    rec = comp.recommendation
    marked = [n for n in (rec.scores if rec is not None else {}) if enters_unshrunk(n)]
    if not marked:
        return ""
    return (
        f"Marked (unshrunk): {', '.join(marked)}. The rule cross-fits "
        f"{'this method' if len(marked) == 1 else 'these methods'} in the published form, not "
        "shrunk towards temperature scaling (its paired comparison with temperature scaling "
        "is the guard the shrinkage is elsewhere), so this table's NLL is not that of the map "
        "in the other tables, which are fitted shrunk by a cross-validated strength: vector "
        "and matrix scaling unshrunk have no penalty at all (on few samples per parameter "
        "matrix scaling overfits, hence an NLL far above its row's), MS-ODIR and Dirichlet "
        "calibration keep their penalty but towards the identity map. Where the other "
        "tables say two methods fit the same map, that is of their shrunk fits."
    )


def _folded_tables(comp: Comparison, tables: list[Table]) -> list[Section]:
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
        blocks: list[Block] = [table, *(Paragraph(n) for n in notes)]
        sections.append(Section(table.title, blocks, folded=True))
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
    comp: Comparison, title: str, figures: list[Figure], intro: Sequence[str] = ()
) -> Document:
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
    first: list[Block] = [f for f in figures if f.name == BEFORE_AFTER]
    more = [f for f in figures if f.name != BEFORE_AFTER]
    groups: list[Section] = []
    if by_group := group_tables(comp):
        paragraphs = [GROUPS_VERDICT_HOW_TO_READ, GROUPS_HOW_TO_READ.format(level=level)]
        noisy = comp.rows[0].groups.warnings if comp.rows[0].groups is not None else []
        paragraphs += [f"Uncalibrated model: {w}." for w in noisy]
        if helps := per_group_help(comp):
            paragraphs.insert(0, helps)
        blocks: list[Block] = [Paragraph(p) for p in paragraphs]
        summary = per_group_table(comp)
        blocks += [table_section(summary)] if summary is not None else []
        n_groups = len(comp.rows[0].groups.names) if comp.rows[0].groups is not None else 0
        if n_groups > MAX_FULL_TABLE_GROUPS:  # every method on every group: results.json
            by_group = by_group[1:]
        blocks += [table_section(t) for t in by_group]
        groups = [Section("Calibration per group", blocks, folded=True)]
    explained = recommendation_paragraphs(comp)
    tables = _folded_tables(comp, comparison_tables(comp))
    rule = recommendation_table(comp)
    decides: list[Block] = [Paragraph(p) for p in explained]
    if rule is not None:
        decides.append(table_section(rule))
        if note := unshrunk_note(comp):
            decides.append(Section("Rows marked (unshrunk)", [Paragraph(note)], folded=True))
    top = [Section("Recommendation", decides)] if decides else []
    if rule is None and tables:  # no rule: the first table of test errors, unfolded
        top.append(Section(tables[0].title, tables[0].blocks))
        tables = tables[1:]
    return Document(
        title,
        [
            *(Paragraph(p, meta=True) for p in meta),
            *top,
            *([Section("Reliability before and after calibration", first)] if first else []),
            Section("How to read this", [Paragraph(how)]),
            *groups,  # the verdict speaks of them: first of the folded sections
            *tables,
            *([Section("More figures", [Gallery(more)], folded=True)] if more else []),
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
