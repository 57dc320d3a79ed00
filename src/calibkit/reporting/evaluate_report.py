"""The report of one evaluation (``calibkit evaluate``): a verdict first, then every metric.

:func:`evaluation_report` turns an :class:`~calibkit.workflows.evaluate.EvaluationRun` into a
:class:`~calibkit.reporting.writer.Report`. Its verdict says in plain words whether the model
is overconfident or underconfident (its mean top-label confidence against its accuracy), by
how much against the noise floor (the ECE a perfectly calibrated model with the same
confidences shows at this sample size), what the interval of its true ECE says (at least
its lower end, or not told apart from calibrated where that end is 0:
:mod:`calibkit.metrics.intervals`), and what to run next; the statistics behind it follow
on one line. Then come the metrics table (labels and formats from the metric registry),
the per-group table (with groups), the reliability diagram (and the smoothed one, when the
smooth ECE was asked) and the risk-coverage curves.

>>> import numpy as np
>>> from calibkit.core.outputs import as_outputs
>>> from calibkit.workflows.evaluate import evaluate_outputs
>>> rng = np.random.default_rng(0)
>>> z = rng.normal(size=(2000, 4)) * 3
>>> y = np.argmax(z / 3 + rng.gumbel(size=z.shape), axis=1)  # logits 3x too large
>>> from calibkit import Resampling
>>> run = evaluate_outputs(as_outputs(y, logits=z), resampling=Resampling(n_boot=50))
>>> v = evaluation_verdict(run, "preds.npz")
>>> print(v.headline)  # doctest: +NORMALIZE_WHITESPACE
The model is overconfident: 78.11% confident on average but right 53.85% of the time, an ECE
11.5 times its noise floor. Its true ECE is at least 15.15% (and at most 28.07%; 95%
confidence: wrong in at most 5% of such statements). Run `calibkit compare preds.npz` to
choose a calibrator.
>>> print(v.detail)  # doctest: +NORMALIZE_WHITESPACE
ECE 24.46% [15.15%, 28.07%] (95% CI of the true ECE); noise floor 2.12% (95% of calibrated
draws below 2.99%); NLL 1.5247; accuracy 53.85%; mean confidence 78.11%; 2,000 samples.
>>> report = evaluation_report(run, source="preds.npz", figures=False)
>>> print(report.text.splitlines()[0])
preds.npz: 2,000 samples, 4 classes, logits
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from calibkit.core.docs import OUTPUTS_EXAMPLE, fill_doc
from calibkit.reporting import document
from calibkit.reporting.tables import (
    column_info,
    format_gap,
    format_points,
    format_value,
    meaning,
    metric_names,
)
from calibkit.reporting.text import text_table, without_interval
from calibkit.reporting.writer import Report

if TYPE_CHECKING:
    from calibkit.metrics.evaluation import Evaluation
    from calibkit.metrics.groups import GroupEvaluation
    from calibkit.metrics.reliability_bands import IntervalMethod
    from calibkit.workflows.evaluate import EvaluationRun

#: The report's figures (under ``figures/``), and what ``--plot``, ``--smooth-plot`` and
#: ``--rc-plot`` save.
RELIABILITY, SMOOTH, RISK_COVERAGE = (
    "reliability.png",
    "smooth_reliability.png",
    "risk_coverage.png",
)
#: How the terminal names each figure written beside the report.
FIGURE_NAMES = {
    RELIABILITY: "reliability diagram",
    SMOOTH: "smoothed reliability diagram",
    RISK_COVERAGE: "risk-coverage curves",
}
#: Below this share of the ECE, the gap between mean confidence and accuracy does not name a
#: direction: the model errs both ways (over at some confidences, under at others).
MIXED_SHARE = 0.5
#: What a metric these outputs leave undefined shows in place of its value.
UNDEFINED = "undefined"

#: "How to read this" (about 100 words); each metric's one-line meaning is in its row of the
#: table (:func:`~calibkit.reporting.tables.meaning`), the rest in ``docs/reports.md``.
HOW_TO_READ = (
    "Calibration errors and accuracy are in percent, scores as fractions. Brackets hold a "
    "{level:.0%} interval: for ECE, adaptive ECE, RMSCE and debiased RMSCE, of the model's "
    "true binned error (an interval starting at 0: the model cannot be told apart from "
    "calibrated); for the others, of their population value; {none} have none. The noise "
    "floor is the error a perfectly calibrated model with the same confidences shows at "
    "this sample size: an error near it is as small as this data can measure. In the "
    "reliability diagram, bars below the diagonal are overconfident bins. What each interval "
    "covers, and the rest: `docs/reports.md` in calibkit's documentation."
)


def interval_text(name: str, ci: tuple[float, float] | None) -> str:
    """An interval as the tables show it (``''`` without one).

    >>> interval_text("ece", (0.01, 0.025)), interval_text("nll", None)
    ('[1.00%, 2.50%]', '')
    """
    return "" if ci is None else f"[{format_value(name, ci[0])}, {format_value(name, ci[1])}]"


def _command(source: str, *rest: str) -> str:
    return "`" + " ".join(["calibkit", "compare", shlex.quote(source), *rest]) + "`"


def _means(run: EvaluationRun) -> tuple[float, float]:
    """What the ECE compares: the mean top-label confidence and the accuracy, or with
    ``--mode positive_class`` the mean probability of class 1 and its frequency."""
    if run.mode == "positive_class":
        out = run.outputs
        return float(out.probs[:, 1].mean()), float((out.labels == 1).mean())
    return run.confidence, run.evaluation.values["accuracy"]


def direction(run: EvaluationRun) -> str:
    """``"overconfident"``, ``"underconfident"``, or ``"mixed"`` when the mean confidence
    and the accuracy differ by less than :data:`MIXED_SHARE` of the ECE (with
    ``--mode positive_class``: the mean probability of class 1 and its frequency)."""
    predicted, observed = _means(run)
    gap = predicted - observed
    if abs(gap) < MIXED_SHARE * run.evaluation.values["ece"]:
        return "mixed"
    return "overconfident" if gap > 0 else "underconfident"


def _positive_class_sentence(run: EvaluationRun, calibrated: bool) -> str:
    """The first sentence with ``--mode positive_class``: P(class 1) against how often it
    is the label, never the top-label confidence (issue #46, item 9)."""
    predicted, observed = (format_value("accuracy", x) for x in _means(run))
    means = (
        f"it gives class 1 a probability of {predicted} on average, and class 1 is "
        f"{observed} of the labels"
    )
    if calibrated:
        return (
            "The model's probability of class 1 is indistinguishable from calibrated at this "
            f"sample size: {means}"
        )
    which = direction(run)
    if which == "mixed":
        return (
            "The model's probability of class 1 is miscalibrated, too high at some values "
            f"and too low at others: {means}"
        )
    high = "too high" if which == "overconfident" else "too low"
    return f"The model's probability of class 1 is {high}: {means.replace(', and', ', but')}"


def _direction_sentence(run: EvaluationRun, calibrated: bool) -> str:
    if run.mode == "positive_class":
        return _positive_class_sentence(run, calibrated)
    conf = format_value("accuracy", run.confidence)
    acc = format_value("accuracy", run.evaluation.values["accuracy"])
    means = f"{conf} confident on average and right {acc} of the time"
    if calibrated:
        return f"The model is indistinguishable from calibrated at this sample size: {means}"
    which = direction(run)
    if which == "mixed":
        return (
            "The model is miscalibrated, overconfident at some confidences and underconfident "
            f"at others: {means}"
        )
    return f"The model is {which}: {means.replace(' and right', ' but right')}"


def _true_ece_sentence(ci: tuple[float, float], level: float) -> str:
    """What the interval of the true ECE says, with its error rate: at least its lower end,
    or not told apart from 0 (at most its upper end)."""
    low, high = (format_value("ece", x) for x in ci)
    if ci[0] > 0.0:
        return (
            f"Its true ECE is at least {low} (and at most {high}; {level:.0%} confidence: "
            f"wrong in at most {1 - level:.0%} of such statements)."
        )
    return f"Its true ECE could be 0, and is at most {high} ({level:.0%} confidence)."


def _group_sentence(ge: GroupEvaluation, key: str | None) -> str:
    """The gap between the groups' ECEs, a difference of percentages: in percentage points,
    its interval too (issue #46, item 9: the gap was in points, its interval in %)."""
    worst, best = ge.values[ge.worst_group]["ece"], ge.values[ge.best_group]["ece"]
    within = f" by {key}" if key else ""
    ci = ""
    if ge.gap_ci is not None:
        low, high = (f"{100 * x:.2f}" for x in ge.gap_ci)
        ci = f"(CI [{low}, {high}]) "
    said = (
        f"Across the groups{within}, the worst group ({ge.worst_group!r}, ECE "
        f"{format_value('ece', worst)}) is {format_points(ge.gap)} "
        f"{ci}above the best ({ge.best_group!r}, {format_value('ece', best)})."
    )
    if ge.gap_ci is None:
        return said
    low_points, high_points = (format_points(x) for x in ge.gap_ci)
    if ge.gap_ci[0] > 0.0:
        return f"{said} The true gap is at least {low_points} ({ge.level:.0%} confidence)."
    return (
        f"{said} The true gap could be 0 (at most {high_points}, {ge.level:.0%} confidence): "
        "this data cannot tell the groups' calibration apart."
    )


def evaluation_verdict(
    run: EvaluationRun,
    source: str,
    group_key: str | None = None,
    reading: Sequence[str] = (),
) -> document.Verdict:
    """The verdict of one evaluation of the file ``source`` (``group_key``: the groups' key;
    ``reading``: the options the file was read with, such as ``("--kind", "logits")``, which
    the command it suggests repeats so that it runs as printed).

    The headline: overconfident or underconfident (mean confidence against accuracy; with
    ``--mode positive_class``, class 1's mean probability against its frequency), the
    ECE against its noise floor (not above it, or not above the ECE a calibrated model
    stays below with probability ``level``: indistinguishable from calibrated at this
    sample size), the worst-group gap (with groups), and what to run next. The detail: the
    ECE with its interval, the floor, NLL, accuracy and the sample count.
    """
    ev = run.evaluation
    v = ev.values
    ece, floor, ci, limit = v["ece"], v.get("ece_floor"), ev.ci.get("ece"), run.noise_limit
    known = floor is not None and math.isfinite(floor) and math.isfinite(limit)
    calibrated = known and ece <= limit
    if ci is not None and math.isfinite(ci[0]):  # the interval of the true ECE decides
        calibrated = ci[0] <= 0.0
    first = _direction_sentence(run, calibrated)
    if floor is None or not known:
        first += f", with an ECE of {format_value('ece', ece)} (no noise floor was estimated)."
    elif ece <= floor:
        first += ", and its ECE is not above its noise floor."
    else:
        times = f"{ece / floor:.1f} times its noise floor" if floor > 0 else "above its floor"
        first += f", an ECE {times}{', within the noise' if calibrated else ''}."
    sentences = [first]
    if ci is not None and math.isfinite(ci[0]):
        sentences.append(_true_ece_sentence(ci, ev.level))
    extra = tuple(shlex.quote(word) for word in reading)
    extra += (f"--groups {shlex.quote(group_key)}",) if group_key else ()
    if run.groups is not None:
        sentences.append(_group_sentence(run.groups, group_key))
    if not calibrated:
        sentences.append(f"Run {_command(source, *extra)} to choose a calibrator.")
    elif run.groups is not None:
        sentences.append(f"Run {_command(source, *extra)} to see whether a group-aware one helps.")
    else:
        sentences.append("No calibrator is needed.")
    shown = format_value("ece", ece)
    detail = [f"ECE {shown}"]
    if ci is not None:
        detail[0] += f" {interval_text('ece', ci)} ({ev.level:.0%} CI of the true ECE)"
    if floor is not None:
        detail.append(
            f"noise floor {format_value('ece', floor)} ({ev.level:.0%} of calibrated draws "
            f"below {format_value('ece', limit)})"
        )
    detail += [
        f"NLL {format_value('nll', v['nll'])}",
        f"accuracy {format_value('accuracy', v['accuracy'])}",
    ]
    if run.mode == "positive_class":
        predicted, observed = (format_value("accuracy", x) for x in _means(run))
        detail += [f"mean P(class 1) {predicted}", f"class 1 in {observed} of the labels"]
    else:
        detail.append(f"mean confidence {format_value('accuracy', run.confidence)}")
    detail.append(f"{ev.n_samples:,} samples")
    return document.Verdict(" ".join(sentences), "; ".join(detail) + ".")


def metrics_table(
    ev: Evaluation, undefined: Mapping[str, str] | None = None, *, meanings: bool = False
) -> document.Table:
    """Every metric of ``ev`` (labels from the metric registry): value, interval, noise floor;
    a metric of ``undefined`` (name -> reason) shows ``undefined`` (:func:`undefined_notes`
    says why). ``meanings``: a last column with each metric's one-line meaning (its registry
    entry's, :func:`~calibkit.reporting.tables.meaning`; the report's table, not the
    terminal's)."""
    header = ["Metric", "Value", f"{ev.level:.0%} CI", "Noise floor"]
    rows = []
    for name in metric_names(ev):
        floor = ev.values.get(f"{name}_floor")
        value = UNDEFINED if name in (undefined or {}) else format_value(name, ev.values[name])
        row = [
            document.Cell(column_info(name).label),
            document.Cell(value),
            document.Cell(interval_text(name, ev.ci.get(name))),
            document.Cell("" if floor is None else format_value(name, floor)),
        ]
        rows.append([*row, document.Cell(meaning(name))] if meanings else row)
    if not meanings:
        return document.Table("Metrics", header, rows)
    # the meaning is text: left-aligned, so it is the last column moved to the left block
    rows = [[r[0], r[4], *r[1:4]] for r in rows]
    return document.Table("Metrics", ["Metric", "What it measures", *header[1:]], rows, n_left=2)


def undefined_notes(undefined: Mapping[str, str]) -> list[str]:
    """One sentence per reason: which metrics these outputs leave undefined, and why.

    >>> undefined_notes({"hosmer_lemeshow_statistic": "why", "hosmer_lemeshow_p": "why"})
    ['Hosmer-Lemeshow statistic and Hosmer-Lemeshow p-value: undefined (why).']
    """
    by_reason: dict[str, list[str]] = {}
    for name, why in undefined.items():
        by_reason.setdefault(why, []).append(column_info(name).label)
    return [f"{' and '.join(names)}: {UNDEFINED} ({why})." for why, names in by_reason.items()]


def group_table(ge: GroupEvaluation, key: str | None = None) -> document.Table:
    """Per group: size, accuracy, ECE (interval, noise floor), NLL (interval), confidence."""
    header = ["Group", "n", "Accuracy", "ECE", "ECE CI", "ECE floor", "NLL", "NLL CI", "Confidence"]
    rows = []
    for g, n in zip(ge.names, ge.sizes, strict=True):
        v, ci = ge.values[g], ge.ci.get(g, {})
        floor = v.get("ece_floor")
        cells = [
            g,
            f"{n:,}",
            format_value("accuracy", v["accuracy"]),
            format_value("ece", v["ece"]),
            interval_text("ece", ci.get("ece")),
            "" if floor is None else format_value("ece", floor),
            format_value("nll", v["nll"]),
            interval_text("nll", ci.get("nll")),
            format_value("accuracy", v["confidence"]),
        ]
        rows.append([document.Cell(c) for c in cells])
    return document.Table(f"Per group ({key})" if key else "Per group", header, rows)


def evaluation_figures(
    run: EvaluationRun, name: str, interval: IntervalMethod | None = "wilson"
) -> list[document.Figure]:
    """The reliability diagram, the smoothed one (when computed) and the risk-coverage
    curves of ``run`` (``name``: the file's name, in the titles)."""
    from calibkit.metrics.binned import reliability_stats
    from calibkit.metrics.selective import risk_coverage_curve
    from calibkit.reporting.curves import risk_coverage_figure
    from calibkit.reporting.figure_style import figure_png_bytes
    from calibkit.reporting.figures import reliability_figure, smooth_reliability_figure

    ev = run.evaluation
    stats = reliability_stats(run.outputs, n_bins=ev.n_bins, mode=run.mode)
    fig = reliability_figure(
        stats,
        title=name,
        ece=ev.values["ece"],
        floor=ev.values.get("ece_floor"),
        interval=interval,
        corp=run.corp,
    )
    caption = f"Reliability diagram ({ev.n_bins} equal-width bins) and confidence histogram."
    figures = [document.Figure(RELIABILITY, caption, figure_png_bytes(fig))]
    if run.smooth is not None:
        fig = smooth_reliability_figure(run.smooth, title=f"{name}: smoothed reliability")
        caption = "Kernel-smoothed reliability curve with its bootstrap band."
        figures.append(document.Figure(SMOOTH, caption, figure_png_bytes(fig)))
    rc = risk_coverage_curve(run.outputs)
    fig = risk_coverage_figure({name: rc}, title=f"{name}: risk-coverage")
    caption = "Risk against coverage when the least confident samples are rejected first."
    figures.append(document.Figure(RISK_COVERAGE, caption, figure_png_bytes(fig)))
    return figures


def _about(run: EvaluationRun, source: str) -> str:
    out = run.outputs
    return f"{source}: {out.n_samples:,} samples, {out.n_classes} classes, {out.kind}"


def evaluation_document(
    run: EvaluationRun,
    source: str,
    *,
    group_key: str | None = None,
    figures: list[document.Figure] | None = None,
    reading: Sequence[str] = (),
) -> document.Document:
    """The report's document: the verdict, the metrics (each with its one-line meaning), the
    reliability diagram, a short "How to read this"; then folded, the groups and the
    risk-coverage curves."""
    ev = run.evaluation
    mode = run.mode.replace("_", "-")
    about = f"{_about(run, source)}; {ev.n_bins} equal-width bins, {mode} calibration."
    body: list[document.Block] = [
        document.Paragraph(about, meta=True),
        document.Section(
            "Metrics",
            [
                metrics_table(ev, run.undefined, meanings=True),
                *(document.Paragraph(note) for note in undefined_notes(run.undefined)),
            ],
        ),
    ]
    by_name = {f.name: f for f in figures or []}
    diagrams = [by_name[n] for n in (RELIABILITY, SMOOTH) if n in by_name]
    if diagrams:
        block: document.Block = diagrams[0] if len(diagrams) == 1 else document.Gallery(diagrams)
        body.append(document.Section("Reliability", [block]))
    level, none = ev.level, without_interval()
    body.append(
        document.Section(
            "How to read this", [document.Paragraph(HOW_TO_READ.format(level=level, none=none))]
        )
    )
    if run.groups is not None:
        ge = run.groups
        table = group_table(ge, group_key)
        notes = [
            document.Paragraph(_group_sentence(ge, group_key)),
            *(document.Paragraph(w) for w in ge.warnings),
        ]
        body.append(document.Section(table.title, [table, *notes], folded=True))
    if RISK_COVERAGE in by_name:
        body.append(document.Section("Selective prediction", [by_name[RISK_COVERAGE]], folded=True))
    title = f"Evaluation of {Path(source).name}"
    return document.Document(title, body, evaluation_verdict(run, source, group_key, reading))


def evaluation_text(run: EvaluationRun, source: str, group_key: str | None = None) -> str:
    """The tables for the terminal (shown below the verdict)."""
    metrics = metrics_table(run.evaluation, run.undefined)
    lines = [_about(run, source), _text(metrics), *undefined_notes(run.undefined)]
    if run.groups is not None:
        ge = run.groups
        where = f" ({group_key})" if group_key else ""
        lines += [f"\nper group{where}:", _text(group_table(ge, group_key)), format_gap(ge)]
        lines += ge.warnings
    return "\n".join(lines)


def _text(table: document.Table) -> str:
    return text_table(table.header, [[c.text for c in r] for r in table.rows], table.n_left)


def evaluation_results(run: EvaluationRun) -> dict[str, Any]:
    """``results.json``'s numbers: the evaluation's (fractions, intervals, sizes), the mean
    confidence, ``ece_noise_limit`` (the ECE a calibrated model stays below with probability
    ``level``), with groups ``"groups"``, and under ``"undefined"`` the reason of each
    metric these outputs leave undefined (its value null)."""
    results: dict[str, Any] = run.evaluation.to_dict()
    results |= {"confidence": run.confidence, "ece_noise_limit": run.noise_limit}
    results["mode"] = run.mode
    if run.undefined:
        results["undefined"] = dict(run.undefined)
    if run.groups is not None:
        results["groups"] = run.groups.to_dict()
    return results


@fill_doc(outputs_example=OUTPUTS_EXAMPLE)
def evaluation_report(
    run: EvaluationRun,
    *,
    source: str,
    group_key: str | None = None,
    figures: bool = True,
    interval: str | None = "wilson",
    inputs: Mapping[str, str] | None = None,
    options: Mapping[str, Any] | None = None,
    reading: Sequence[str] = (),
) -> Report:
    """The report of ``run`` on the file ``source``: document, numbers, terminal text.

    ``figures``: draw the figures (matplotlib; not needed to print); ``interval``: the
    per-bin interval of the reliability diagram (``"wilson"``, ``"clopper-pearson"``, or
    ``"none"`` / None: none); ``reading``: the options the file was read with (``--kind``,
    ``--scores-key``, ...), repeated in the ``calibkit compare`` command the verdict suggests.

    Examples
    --------
    {outputs_example}

    >>> from calibkit import Resampling, evaluate_outputs
    >>> none = Resampling(n_boot=0)
    >>> report = evaluation_report(evaluate_outputs(test, resampling=none), source="test.npz",
    ...                            figures=False)
    >>> report.command, bool(report.document.verdict.headline), "ece" in report.results
    ('evaluate', True, True)
    """
    method = None if interval in (None, "none") else cast("IntervalMethod", interval)
    drawn = evaluation_figures(run, Path(source).name, method) if figures else None
    return Report(
        "evaluate",
        evaluation_document(run, source, group_key=group_key, figures=drawn, reading=reading),
        evaluation_results(run),
        text=evaluation_text(run, source, group_key),
        inputs=inputs or {},
        options=options or {},
    )


def write_figures(report: Report, paths: Mapping[str, Path]) -> Report:
    """Save the report's figures named in ``paths`` (figure name -> file, e.g.
    ``{RELIABILITY: Path("r.png")}``); the report, its text saying where each went."""
    if not paths:
        return report
    from calibkit.io.atomic import atomic_write_bytes

    figures = {f.name: f for f in report.document.figures()}
    lines = []
    for name, path in paths.items():
        atomic_write_bytes(Path(path), figures[name].png)
        lines.append(f"{FIGURE_NAMES.get(name, name)}: {path}")
    return replace(report, text="\n".join([report.text, *lines]))


__all__ = [
    "FIGURE_NAMES",
    "RELIABILITY",
    "RISK_COVERAGE",
    "SMOOTH",
    "direction",
    "evaluation_document",
    "evaluation_figures",
    "evaluation_report",
    "evaluation_results",
    "evaluation_text",
    "evaluation_verdict",
    "group_table",
    "interval_text",
    "metrics_table",
    "undefined_notes",
    "write_figures",
]
