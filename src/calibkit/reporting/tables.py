"""Metric tables as people read them: labels, formatting, ranking; plain text and tables.

Calibration errors and accuracy are shown in percent with two decimals, scores with four;
JSON and CSV (see :mod:`calibkit.reporting.compare_report`) keep fractions. The comparison
tables are document tables, rendered by :mod:`calibkit.reporting.render`.

>>> from calibkit.metrics import Evaluation
>>> ev = Evaluation({"accuracy": 0.9, "ece": 0.05, "ece_floor": 0.01}, {"ece": (0.04, 0.06)})
>>> print(format_evaluation_table(ev))
Metric     Value          95% CI  Noise floor
Accuracy  90.00%
ECE        5.00%  [4.00%, 6.00%]        1.00%
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING

from calibkit.metrics import METRICS, Evaluation, suite_names
from calibkit.metrics.info import TEST_METRICS
from calibkit.metrics.kernels import BinNorm, RankStatistic
from calibkit.reporting.document import Cell, Table

if TYPE_CHECKING:  # evaluate's table needs neither the calibrators nor their imports
    from calibkit.metrics.groups import GroupEvaluation
    from calibkit.workflows.comparison import Comparison, MethodResult


@dataclass(frozen=True)
class ColumnInfo:
    """How a row key is shown: its label, whether in percent, and which way is better."""

    label: str
    percent: bool
    better: str | None  # "min", "max" or None (no ranking)


#: Row quantities that are not metrics (never ranked); metrics are described by
#: :data:`calibkit.metrics.METRICS`.
ROW_QUANTITIES: dict[str, ColumnInfo] = {
    "temperature": ColumnInfo("T", False, None),
    "fit_seconds": ColumnInfo("Fit time (s)", False, None),
}


def column_info(key: str) -> ColumnInfo:
    """How the metric, ``<metric>_floor`` or row quantity ``key`` is shown."""
    if key in METRICS:
        m = METRICS.get(key)
        return ColumnInfo(m.label, m.percent, m.better)
    if key.endswith("_floor"):
        base = column_info(key.removesuffix("_floor"))
        return ColumnInfo(f"{base.label} floor", base.percent, None)
    return ROW_QUANTITIES.get(key, ColumnInfo(key, False, None))


#: Which way is better, in words, after a metric's one-line meaning (:func:`meaning`).
_BETTER = {"min": "lower is better", "max": "higher is better"}


def meaning(key: str) -> str:
    """What the metric (or ``<metric>_floor``) ``key`` measures, in one line: its registry
    entry's ``summary`` (:class:`~calibkit.metrics.info.MetricInfo`), then which way is
    better; ``''`` for a key without a summary.

    >>> meaning("ece")
    'gap between confidence and accuracy, averaged over equal-width confidence bins; lower is better'
    >>> meaning("ece_floor")
    'the ECE a perfectly calibrated model with the same confidences shows at this sample size'
    """  # noqa: E501
    if key.endswith("_floor") and key not in METRICS:
        label = column_info(key.removesuffix("_floor")).label
        same = "with the same confidences shows at this sample size"
        return f"the {label} a perfectly calibrated model {same}"
    if key not in METRICS or not METRICS.get(key).summary:
        return ""
    info = METRICS.get(key)
    better = _BETTER.get(info.better or "")
    return f"{info.summary}; {better}" if better else info.summary


def meanings(keys: list[str]) -> list[str]:
    """One line per metric of ``keys`` that has a meaning: its label in bold, then what it
    measures (:func:`meaning`); floors are left out (the reading guide says what a floor is).

    >>> meanings(["nll", "ece_floor", "no_such_metric"])
    ['**NLL**: mean of -log p(label): punishes confident mistakes most; lower is better.']
    """
    return [
        f"**{column_info(k).label}**: {meaning(k)}."
        for k in keys
        if not k.endswith("_floor") and meaning(k)
    ]


def metric_keys(table: Table) -> list[str]:
    """The metrics whose labels head ``table``'s columns (by the registry's labels), in
    column order.

    >>> metric_keys(Table("t", ["Method", "ECE", "ECE floor", "NLL", "Fit time (s)"], []))
    ['ece', 'nll']
    """
    by_label = {METRICS.get(n).label: n for n in METRICS}
    return [by_label[h] for h in table.header if h in by_label]


def format_value(name: str, value: float | None) -> str:
    """A metric value as shown to people: percent with 2 decimals, or 4 decimals.

    >>> format_value("ece", 0.05612), format_value("nll", 0.36909), format_value("ks", None)
    ('5.61%', '0.3691', 'n/a')
    """
    if value is not None and math.isinf(value):
        return format_number(value)
    if value is None or not math.isfinite(value):
        return "n/a"
    if name in TEST_METRICS and name.endswith("_p"):
        return format_p_value(value)
    return f"{100 * value:.2f}%" if column_info(name).percent else f"{value:.4f}"


def format_number(x: float) -> str:
    """A statistic in three significant digits; an infinite one as ``∞`` (one spelling on
    the terminal and in every report), a missing one as ``n/a``.

    >>> format_number(12.345), format_number(math.inf), format_number(math.nan)
    ('12.3', '∞', 'n/a')
    """
    if math.isinf(x):
        return "∞" if x > 0 else "-∞"
    return "n/a" if math.isnan(x) else f"{x:.3g}"


def format_p_value(p: float) -> str:
    """A p-value: three significant digits, or a bound below 1e-4.

    >>> format_p_value(0.04567), format_p_value(3e-9), format_p_value(math.nan)
    ('0.0457', '< 0.0001', 'n/a')
    """
    if not math.isfinite(p):
        return "n/a"
    return "< 0.0001" if p < 1e-4 else f"{p:.3g}"


def _interval(name: str, ci: tuple[float, float] | None) -> str:
    if ci is None:
        return ""
    return f"[{format_value(name, ci[0])}, {format_value(name, ci[1])}]"


def metric_names(evaluation: Evaluation) -> list[str]:
    """The metrics of ``evaluation``: the suite's in report order, then any others."""
    suite = suite_names()
    extra = [k for k in evaluation.values if k not in suite and not k.endswith("_floor")]
    return [k for k in suite if k in evaluation.values] + extra


def format_evaluation_table(evaluation: Evaluation) -> str:
    """A plain-text table: metric, value, bootstrap interval and noise floor (if any)."""
    level = f"{evaluation.level:.0%} CI"
    rows = [("Metric", "Value", level, "Noise floor")]
    for name in metric_names(evaluation):
        floor = evaluation.values.get(f"{name}_floor")
        rows.append(
            (
                column_info(name).label,
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


def format_gap(ge: GroupEvaluation) -> str:
    """The worst-group ECE gap in words, with its interval.

    >>> from calibkit.metrics.groups import GroupEvaluation
    >>> print(format_gap(GroupEvaluation(["a", "b"], [5, 5], {}, {}, 0.1, "b", "a", (0.05, 0.2))))
    worst-group ECE gap 10.00 percentage points [5.00, 20.00]: group 'b' against group 'a'
    """
    ci = "" if ge.gap_ci is None else " [{:.2f}, {:.2f}]".format(*(100 * x for x in ge.gap_ci))
    return (
        f"worst-group ECE gap {format_points(ge.gap)}{ci}: "
        f"group {ge.worst_group!r} against group {ge.best_group!r}"
    )


def format_group_table(ge: GroupEvaluation) -> str:
    """A plain-text table of :func:`~calibkit.metrics.groups.evaluate_groups`' result: per
    group its size, accuracy, ECE (interval, noise floor), NLL (interval) and mean
    confidence; then the worst-group gap and the noise-floor warnings.

    >>> from calibkit import Binning, Resampling, evaluate_groups
    >>> ge = evaluate_groups([1, 0, 1, 1], probs=[[0.2, 0.8], [0.4, 0.6], [0.1, 0.9], [0.3, 0.7]],
    ...     groups=["x", "x", "y", "y"], binning=Binning(n_bins=10),
    ...     resampling=Resampling(n_boot=0), n_floor_draws=0)
    >>> print(format_group_table(ge))
    Group  n  Accuracy     ECE  ECE CI  ECE floor     NLL  NLL CI  Confidence
    x      2    50.00%  40.00%                     0.5697              70.00%
    y      2   100.00%  20.00%                     0.2310              80.00%
    worst-group ECE gap 20.00 percentage points: group 'x' against group 'y'
    """
    from calibkit.metrics.groups import GROUP_METRICS
    from calibkit.reporting.text import text_table

    # accuracy first, then each metric (an interval beside a ranked one, the floor beside
    # one that has it), in the order of GROUP_METRICS; labels from the metric registry
    names = sorted(GROUP_METRICS, key=lambda m: m != "accuracy")
    header = ["Group", "n"]
    for m in names:
        label = column_info(m).label
        header += [label, *([f"{label} CI"] if _ranked(m) and m != "accuracy" else [])]
        header += [f"{label} floor"] if METRICS.get(m).has_floor else []
    rows = []
    for g, n in zip(ge.names, ge.sizes, strict=True):
        v, ci = ge.values[g], ge.ci.get(g, {})
        row = [g, str(n)]
        for m in names:
            row.append(format_value(m, v[m]))
            row += [_interval(m, ci.get(m))] if _ranked(m) and m != "accuracy" else []
            if METRICS.get(m).has_floor:
                row.append("" if f"{m}_floor" not in v else format_value(m, v[f"{m}_floor"]))
        rows.append(row)
    return "\n".join([text_table(header, rows), format_gap(ge), *ge.warnings])


def _ranked(name: str) -> bool:
    """Whether the registry ranks metric ``name`` (its intervals are then shown)."""
    return column_info(name).better is not None


# ----- the comparison tables (rendered by calibkit.reporting.render) --------------------------
def _column(name: str, results: list[MethodResult], ranked: bool = True) -> tuple[str, list[Cell]]:
    info = column_info(name)
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


#: The width the terminal summary wraps its notes at.
NOTE_WIDTH = 100
#: The mark after a method whose test accuracy differs from the uncalibrated model's.
ACCURACY_MARK = "†"


def binned_errors(names: list[str]) -> list[str]:
    """The binned expected errors among ``names``, shown together: the top-label L1 norms
    (ECE, equal-width bins first), then the L2 norm (RMSCE) and beside it its debiased
    estimate (the debiased RMSCE: Kumar et al. 2019's debiased L2 error, an L2 quantity
    read against the RMSCE, not the ECE; :class:`~calibkit.metrics.kernels.BinNorm`).

    >>> binned_errors(["accuracy", "ece", "aece", "mce", "ece_debiased", "rmsce", "ks"])
    ['ece', 'aece', 'rmsce', 'ece_debiased']
    """
    norms = {"l1": 0, "l2": 1, "debiased": 2}
    found = [(n, METRICS.get(n).kernel) for n in names if n in METRICS]
    expected = [
        (n, k)
        for n, k in found
        if isinstance(k, BinNorm) and k.scheme != "classwise" and k.norm in norms
    ]
    order = sorted(expected, key=lambda nk: (norms[nk[1].norm], nk[1].scheme != "width"))
    return [n for n, _ in order]


def method_label(comp: Comparison, method: str) -> str:
    """``method`` with its marks: ``(= other)`` when its map equals an earlier row's
    (:func:`same_map_lines` says why), :data:`ACCURACY_MARK` when it changes the test
    accuracy."""
    twin = comp.same_maps.get(method)
    marks = [f"(= {twin})"] if twin else []
    if method in comp.accuracy_changed:
        marks.append(ACCURACY_MARK)
    return " ".join([method, *marks])


def same_map_lines(comp: Comparison) -> list[str]:
    """One sentence per pair of rows that are the same map, saying why
    (:attr:`~calibkit.workflows.comparison.Comparison.same_map_reasons`)."""
    reasons = comp.same_map_reasons
    return [
        f"{twin} and {method} fit the same map here: {reasons[method]}."
        for method, twin in comp.same_maps.items()
    ]


def marks_note(comp: Comparison) -> str:
    """What the marks of the method column mean in this comparison ('' when there are none)."""
    notes = []
    if comp.same_maps:
        notes.append(
            "'(= X)' marks a method whose map equals method X's (the note under the first "
            "table says why); differences between such rows are the optimiser's tolerance."
        )
    if comp.accuracy_changed:
        notes.append(
            f"{ACCURACY_MARK} marks a method whose test accuracy differs from 'none': its map "
            "is not monotone within a sample, so it changes some predicted classes."
        )
    return " ".join(notes)


def _metric_table(title: str, names: list[str], comp: Comparison) -> Table:
    header = ["Method"]
    columns: list[list[Cell]] = [[Cell(method_label(comp, r.method)) for r in comp.rows]]
    for name in names:
        label, cells = _column(name, comp.rows)
        header.append(label)
        columns.append(cells)
        if any(f"{name}_floor" in r.evaluation.values for r in comp.rows):
            floor_label, floors = _column(f"{name}_floor", comp.rows, ranked=False)
            header.append(floor_label)
            columns.append(floors)
    return Table(title, header, [list(row) for row in zip(*columns, strict=True)])


def ranking_metrics(names: list[str]) -> list[str]:
    """The selective-prediction metrics among ``names`` (those of the confidence ranking:
    :class:`~calibkit.metrics.kernels.RankStatistic`), shown in a table of their own.

    >>> ranking_metrics(["accuracy", "failure_auroc", "ece", "aurc"])
    ['failure_auroc', 'aurc']
    """
    return [n for n in names if n in METRICS and isinstance(METRICS.get(n).kernel, RankStatistic)]


#: How a difference of two percentages is written in sentences (tables abbreviate it "pp",
#: :func:`format_delta`); a percentage itself is written with "%" (:func:`format_value`).
POINTS = "percentage points"


def format_points(delta: float, digits: int = 2) -> str:
    """A difference of two fractions shown as percentages, in :data:`POINTS`.

    >>> format_points(0.0328), format_points(0.216, 1)
    ('3.28 percentage points', '21.6 percentage points')
    """
    return f"{100 * delta:.{digits}f} {POINTS}"


def format_delta(name: str, delta: float) -> str:
    """A change of metric ``name``: percentage points for a percent metric, else 4 decimals.

    >>> format_delta("aurc", -0.00123), format_delta("nll", 0.01), format_delta("aurc", 0.0)
    ('-0.12 pp', '+0.0100', '0.00 pp')
    """
    if not math.isfinite(delta):
        return "n/a"
    if column_info(name).percent:
        text = f"{100 * delta:+.2f}"
        return ("0.00" if text in ("+0.00", "-0.00") else text) + " pp"
    return f"{delta:+.4f}"


def ranking_table(comp: Comparison, names: list[str]) -> Table:
    """Which methods change the test samples' ranking by confidence against ``"none"``
    (all that the selective metrics ``names`` see), Kendall's tau-b between the two
    rankings, and how far each metric moves."""
    base = comp.rows[0].evaluation.values
    header = ["Method", "Ranking", "Kendall τ", *(f"Δ {column_info(n).label}" for n in names)]
    rows = []
    for r in comp.rows[1:]:
        rk, values = r.ranking, r.evaluation.values
        same = "n/a" if rk is None else ("same" if rk.same else "changed")
        tau = "n/a" if rk is None or not math.isfinite(rk.tau) else f"{rk.tau:.4f}"
        deltas = [
            Cell(format_delta(n, values.get(n, math.nan) - base.get(n, math.nan))) for n in names
        ]
        rows.append([Cell(method_label(comp, r.method)), Cell(same), Cell(tau), *deltas])
    title = "Confidence ranking against the uncalibrated model (test part)"
    return Table(title, header, rows, n_left=2)


def format_params(params: dict[str, float], chosen: str | None = None) -> str:
    """Fitted parameters as ``name=value`` pairs (4 significant digits), after the method
    ``"auto"`` chose, or a dash."""
    pairs = [f"chosen={chosen}"] if chosen else []
    return ", ".join(pairs + [f"{k}={v:.4g}" for k, v in params.items()]) or "–"


def comparison_tables(comp: Comparison) -> list[Table]:
    """The tables of a comparison report: binned calibration errors (the ECEs, then the
    RMSCE beside its debiased estimate), the other calibration errors, scores, selective
    prediction and which methods change the confidence ranking, fitted parameters."""
    names = metric_names(comp.rows[0].evaluation)
    errors = [n for n in names if n not in METRICS or METRICS.get(n).kind == "error"]
    binned = binned_errors(errors)
    ranked = ranking_metrics(names)
    scores = [n for n in names if n in METRICS and METRICS.get(n).kind == "score"]
    scores = [n for n in scores if n not in ranked]
    fitted = Table(
        "Fitted calibrators",
        ["Method", "Fitted parameters", "Fit time (s)"],
        [
            [
                Cell(r.method),
                Cell(format_params(r.params, r.chosen)),
                Cell(f"{r.fit_seconds:.3f}"),
            ]
            for r in comp.rows
        ],
        n_left=2,
    )
    tables = [
        _metric_table("Binned calibration errors on the test part", binned, comp),
        _metric_table(
            "Other calibration errors on the test part",
            [n for n in errors if n not in binned],
            comp,
        ),
        _metric_table("Accuracy and proper scores on the test part", scores, comp),
        *(  # four metrics with intervals per table: the page's width
            _metric_table(
                "Selective prediction on the test part" + (", continued" if i else ""),
                ranked[i : i + 4],
                comp,
            )
            for i in range(0, len(ranked), 4)
        ),
        *([ranking_table(comp, ranked)] if ranked and len(comp.rows) > 1 else []),
        fitted,
    ]
    tables = [t for t in tables if len(t.header) > 1 or t is fitted]
    if not comp.rows[0].tests:
        return tables
    undefined = undefined_tests_table(comp)
    return [*tables, calibration_tests_table(comp), *([undefined] if undefined.rows else [])]


#: What a test these outputs leave undefined shows in place of its statistic and p-value.
UNDEFINED_TEST = "undefined"


def calibration_tests_table(comp: Comparison) -> Table:
    """Each method's calibration tests on the test part: statistic and p-value (a small
    p-value: miscalibration beyond what the test part's size explains); a test these
    outputs leave undefined shows ``undefined`` (:func:`undefined_tests_table` says why)."""
    names = list(comp.rows[0].tests)
    header = ["Method", *(f"{comp.rows[0].tests[n].label} (p)" for n in names)]
    rows = [
        [Cell(r.method)]
        + [
            Cell(
                UNDEFINED_TEST
                if t.reason is not None
                else f"{format_number(t.statistic)} ({format_p_value(t.p_value)})"
            )
            for t in (r.tests[n] for n in names)
        ]
        for r in comp.rows
    ]
    return Table("Calibration tests on the test part (statistic, p-value)", header, rows)


def undefined_tests_table(comp: Comparison) -> Table:
    """Why a calibration test of :func:`calibration_tests_table` is undefined: a row per
    test and reason, with the methods whose test part it holds for (no rows: none is)."""
    methods: dict[tuple[str, str], list[str]] = {}
    for r in comp.rows:
        for t in r.tests.values():
            if t.reason is not None:
                methods.setdefault((t.label, t.reason), []).append(r.method)
    rows = [
        [Cell(label), Cell(", ".join(names)), Cell(why)] for (label, why), names in methods.items()
    ]
    return Table("Calibration tests left undefined, and why", ["Test", "Methods", "Why"], rows, 3)


def group_tables(comp: Comparison) -> list[Table]:
    """The per-group tables of a comparison with groups (none without): each method's
    ECE, NLL and accuracy per group with intervals (a row per method and group), and each
    method's worst-group ECE gap and its worst group's ECE (the smallest in bold)."""
    rows = [r for r in comp.rows if r.groups is not None]
    if not rows:
        return []
    from calibkit.metrics.groups import GROUP_METRICS

    per_group = []
    for r in rows:
        ge = r.groups
        assert ge is not None
        for i, (g, n) in enumerate(zip(ge.names, ge.sizes, strict=True)):
            v, ci = ge.values[g], ge.ci.get(g, {})
            cells = [Cell(method_label(comp, r.method) if i == 0 else ""), Cell(g), Cell(f"{n:,}")]
            for name in GROUP_METRICS:  # a ranked metric with its interval, then its floor
                shown = _interval(name, ci.get(name)) if _ranked(name) else ""
                cells.append(Cell(f"{format_value(name, v[name])} {shown}".strip()))
                if METRICS.get(name).has_floor:
                    cells.append(Cell(format_value(name, v.get(f"{name}_floor"))))
            per_group.append(cells)
    header = ["Method", "Group", "n"]
    for name in GROUP_METRICS:
        label = column_info(name).label
        header += [label, *([f"{label} floor"] if METRICS.get(name).has_floor else [])]
    worst = [r.groups.values[r.groups.worst_group]["ece"] for r in rows if r.groups is not None]
    best = format_value("ece", min(worst))
    gap_rows = []
    for r in rows:
        ge = r.groups
        assert ge is not None
        bounds = (
            "" if ge.gap_ci is None else " [{:.2f}, {:.2f}]".format(*(100 * x for x in ge.gap_ci))
        )
        text = f"{100 * ge.gap:.2f} pp{bounds}"  # a difference of percentages
        shown = format_value("ece", ge.values[ge.worst_group]["ece"])
        gap_rows.append(
            [
                Cell(method_label(comp, r.method)),
                Cell(ge.worst_group),
                Cell(ge.best_group),
                Cell(text),
                Cell(shown, shown == best),
            ]
        )
    return [
        Table("ECE, NLL and accuracy per group on the test part", header, per_group, n_left=2),
        Table(
            "Worst-group ECE gap on the test part (largest minus smallest group ECE)",
            ["Method", "Worst group", "Best group", "Gap", "Worst group's ECE"],
            gap_rows,
            n_left=3,
        ),
    ]


def format_group_summary(comp: Comparison) -> str:
    """A plain-text line per method: its worst-group ECE gap with its interval, and which
    groups ('' without groups)."""
    rows = [r for r in comp.rows if r.groups is not None]
    if not rows:
        return ""
    width = max(len(r.method) for r in rows)
    lines = ["per group (test part):"]
    for r in rows:
        assert r.groups is not None
        lines.append(f"{r.method:<{width}}  {format_gap(r.groups)}")
    return "\n".join(lines)


def format_comparison_summary(comp: Comparison) -> str:
    """A short plain-text summary of a comparison: ECE with its interval, NLL, accuracy,
    then why rows that are the same map are (:func:`same_map_lines`; the recommendation is
    the report's verdict, printed above it)."""
    width = max(len(r.method) for r in comp.rows)
    level = f"{comp.rows[0].evaluation.level:.0%} CI"
    lines = [
        f"{comp.n_cal:,} calibration / {comp.n_test:,} test samples, {comp.n_classes} classes",
        f"{'Method':<{width}}  {'ECE':>7}  {level:>18}  {'NLL':>7}  {'Accuracy':>8}  Parameters",
    ]
    for r in comp.rows:
        v = r.evaluation.values
        line = (
            f"{r.method:<{width}}  {format_value('ece', v['ece']):>7}  "
            f"{_interval('ece', r.evaluation.ci.get('ece')):>18}  "
            f"{format_value('nll', v['nll']):>7}  {format_value('accuracy', v['accuracy']):>8}  "
            f"{format_params(r.params, r.chosen)}"
        )
        lines.append(line.rstrip())
    notes = [textwrap.fill(line, NOTE_WIDTH) for line in same_map_lines(comp)]
    return "\n".join([*lines, *notes])
