"""The report of a shift study (:func:`calibkit.workflows.shift_study.run_shift`, ``calibkit
shift``): its verdict, from which severity calibration breaks; the mean over the corruptions
per method and severity; the box plots by severity; ``results.csv`` (one line per method x
corruption x severity) and ``config.json`` (the resolved configuration).

:func:`shift_report` builds the :class:`~calibkit.reporting.writer.Report`;
:func:`~calibkit.reporting.writer.write_report` writes it (``report.md``, ``report.html``,
``results.json``, ``figures/``, and the two files).

The verdict's rule (:func:`breaking_point`): a calibrator *holds* at a severity when its mean
ECE over the corruptions stays within twice its clean level, the larger of its clean ECE and
its clean noise floor (the ECE a perfectly calibrated model with the same confidences shows
at this test size); calibration *breaks* at the first severity at which no calibrator
holds. A conformal method falls below its target at the first severity at which its mean
coverage is more than two binomial standard errors under ``1 - alpha``.

>>> from calibkit.workflows.shift import ShiftRow
>>> rows = [ShiftRow("none", "clean", 0, 4, {"ece": 0.25})]
>>> print(results_csv(rows), end="")
method,corruption,severity,n_samples,ece
none,clean,0,4,0.25
>>> rows += [ShiftRow("none", c, 1, 4, {"ece": e}) for c, e in (("a", 0.5), ("b", 0.7))]
>>> breaking_point(rows).severity
1
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from calibkit.core.progress import Phase
from calibkit.io.jsonfile import json_text
from calibkit.reporting.csv_text import csv_number, csv_text
from calibkit.reporting.document import (
    Block,
    Cell,
    Document,
    Figure,
    Paragraph,
    Section,
    Table,
    Verdict,
)
from calibkit.reporting.tables import column_info, format_value
from calibkit.reporting.text import table_text
from calibkit.reporting.writer import Report
from calibkit.workflows.shift import (
    CLASSIFIER_COLUMNS,
    SET_COLUMNS,
    ShiftRow,
    severity_summary,
)
from calibkit.workflows.shift_study import ShiftResult

__all__ = [
    "FIGURES",
    "Breaking",
    "breaking_point",
    "coverage_drops",
    "results_csv",
    "shift_report",
    "summary_tables",
    "write_shift_report",
]

log = logging.getLogger(__name__)

#: The figure files and the metrics each shows.
FIGURES = {
    "shift_calibration.png": ("accuracy", "nll", "ece"),
    "shift_selective.png": ("brier", "failure_auroc", "aurc"),
    "shift_conformal.png": ("coverage", "mean_set_size"),
}
#: A calibrator holds while its mean ECE stays within this many times its clean level.
FACTOR = 2.0
#: A conformal method falls short when its coverage is this many standard errors under target.
N_SE = 2.0


def _value(name: str, value: float) -> str:
    return "" if math.isnan(value) else format_value(name, value)


def _pct(value: float) -> str:
    """A fraction in percent with one decimal (none for a whole percent: ``90%``)."""
    text = f"{100 * value:.1f}"
    return f"{text.removesuffix('.0')}%"


def results_csv(rows: Sequence[ShiftRow]) -> str:
    """One line per row: method, corruption, severity, n_samples, then each metric."""
    metrics = list(rows[0].values) if rows else []
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


Means = dict[tuple[str, int], dict[str, float]]


def _means(rows: Sequence[ShiftRow]) -> tuple[Means, dict[tuple[str, int], int]]:
    summary = severity_summary(rows)
    return {(m, s): v for m, s, _, v in summary}, {(m, s): n for m, s, n, _ in summary}


def _has(means: Means, method: str, name: str) -> bool:
    return any(not math.isnan(v.get(name, math.nan)) for (m, _), v in means.items() if m == method)


def _methods(rows: Sequence[ShiftRow], name: str) -> list[str]:
    means, _ = _means(rows)
    return [m for m in dict.fromkeys(r.method for r in rows) if _has(means, m, name)]


@dataclass(frozen=True)
class Breaking:
    """Where calibration breaks (:func:`breaking_point`).

    ``severity``: the first severity at which no calibrator holds (None: they hold at every
    one); ``methods``: the calibrators judged (``none`` alone when no other was fitted);
    ``limits``: each one's limit, :data:`FACTOR` times the larger of its clean ECE and its
    clean noise floor; ``ece``: each one's mean ECE per severity (0: clean).
    """

    severity: int | None
    methods: list[str]
    limits: dict[str, float]
    ece: dict[str, dict[int, float]] = field(default_factory=dict)

    def held(self, method: str, severity: int) -> bool:
        """Whether ``method``'s mean ECE at ``severity`` is within its limit."""
        return self.ece[method][severity] <= self.limits[method]


def _limits(rows: Sequence[ShiftRow], methods: Sequence[str]) -> dict[str, float]:
    """Each method's ECE limit: :data:`FACTOR` times the larger of its clean ECE and its
    clean noise floor (methods without a clean row are left out)."""
    means, _ = _means(rows)
    limits = {}
    for m in methods:
        if (m, 0) not in means:
            continue
        floor = means[m, 0].get("ece_floor", math.nan)
        clean = max(means[m, 0]["ece"], 0.0 if math.isnan(floor) else floor)
        limits[m] = FACTOR * clean
    return limits


def breaking_point(rows: Sequence[ShiftRow]) -> Breaking:
    """The severity from which calibration breaks (see the module docstring)."""
    means, _ = _means(rows)
    ece_methods = _methods(rows, "ece")
    methods = [m for m in ece_methods if m != "none"] or ece_methods
    severities = sorted({s for _, s in means if s > 0})
    ece = {m: {s: means[m, s]["ece"] for s in [0, *severities] if (m, s) in means} for m in methods}
    limits = _limits(rows, methods)
    methods = [m for m in methods if m in limits]
    found = Breaking(None, methods, limits, ece)
    for s in severities:
        if not any(found.held(m, s) for m in methods if s in ece[m]):
            return Breaking(s, methods, limits, ece)
    return found


def coverage_drops(rows: Sequence[ShiftRow], alpha: float) -> dict[str, int | None]:
    """Each conformal method's first severity (0: clean) at which its mean coverage is
    more than :data:`N_SE` binomial standard errors under ``1 - alpha`` (None: never)."""
    means, _ = _means(rows)
    sizes = {(r.method, r.severity): r.n_samples for r in rows}
    out: dict[str, int | None] = {}
    for m in _methods(rows, "coverage"):
        out[m] = None
        for s in sorted(s for k, s in means if k == m):
            se = math.sqrt(alpha * (1 - alpha) / max(sizes[m, s], 1))
            if means[m, s]["coverage"] < 1 - alpha - N_SE * se:
                out[m] = s
                break
    return out


def _code(method: str) -> str:
    return f"`{method}`"


def _calibration_headline(b: Breaking, means: Means) -> str:
    severities = sorted({s for _, s in means if s > 0})
    if not severities or not b.methods:
        return "No corrupted set was evaluated."
    alone = b.methods == ["none"]
    who = "the uncalibrated model's mean ECE" if alone else "every calibrator's mean ECE"
    has_none = ("none", 0) in means and not alone

    def raw(s: int) -> str:
        return (
            f"; uncalibrated, {_pct(means['none', s]['ece'])} at severity {s}" if has_none else ""
        )

    if b.severity is None:
        last = severities[-1]
        best = min(b.methods, key=lambda m: max(b.ece[m][s] for s in severities))
        worst = max(b.ece[best][s] for s in severities)
        subject = "The uncalibrated model" if alone else _code(best)
        return (
            f"Calibration holds at every severity evaluated (up to {last}): {subject} keeps its "
            f"mean ECE at {_pct(worst)} or less, within twice its clean level{raw(last)}."
        )
    after = [s for s in severities if s >= b.severity]
    low = min(b.ece[m][s] for m in b.methods for s in after if s in b.ece[m])
    before = [s for s in severities if s < b.severity]
    if not before:
        clean = min(b.ece[m][0] for m in b.methods)
        best = "" if alone else " at best"
        return (
            f"Calibration breaks from the mildest severity evaluated ({b.severity}): {who} is "
            f"{_pct(low)} or more from there on, against {_pct(clean)}{best} on clean "
            f"images{raw(b.severity)}."
        )
    held_all = [m for m in b.methods if all(b.held(m, s) for s in before)] or b.methods
    best = min(held_all, key=lambda m: max(b.ece[m][s] for s in before))
    worst = max(b.ece[best][s] for s in before)
    subject = "the uncalibrated model" if alone else _code(best)
    return (
        f"Calibration holds up to severity {before[-1]} ({subject} keeps its mean ECE at "
        f"{_pct(worst)} or less) and breaks from severity {b.severity}: from there on {who} is "
        f"{_pct(low)} or more{raw(b.severity)}."
    )


def _coverage_headline(drops: Mapping[str, int | None], means: Means, alpha: float) -> str:
    if not drops:
        return ""
    target = _pct(1 - alpha)
    fallen = {m: s for m, s in drops.items() if s is not None}
    if not fallen:
        last = max(s for _, s in means)
        return f"The conformal sets keep their {target} coverage at every severity (up to {last})."
    first = min(fallen.values())
    who = [m for m, s in fallen.items() if s == first]
    values = ", ".join(f"{_code(m)} {_pct(means[m, first]['coverage'])}" for m in who)
    where = "on the clean test part" if first == 0 else f"from severity {first}"
    return f"Conformal coverage falls below its {target} target {where} ({values})."


def _series(means: Means, method: str, name: str) -> str:
    severities = sorted(s for m, s in means if m == method)
    values = [means[method, s][name] for s in severities]
    return " / ".join(f"{100 * v:.1f}" for v in values) + "%"


def shift_verdict(rows: Sequence[ShiftRow], alpha: float | None) -> Verdict:
    """The verdict: from which severity calibration breaks, and conformal coverage."""
    means, counts = _means(rows)
    b = breaking_point(rows)
    drops = coverage_drops(rows, alpha) if alpha is not None else {}
    headline = " ".join(
        t
        for t in (_calibration_headline(b, means), _coverage_headline(drops, means, alpha or 0))
        if t
    )
    severities = sorted({s for _, s in means if s > 0})
    n = max((c for (_, s), c in counts.items() if s > 0), default=0)
    order = " / ".join(["clean", *map(str, severities)])
    ece_methods = _methods(rows, "ece")
    detail = f"Mean ECE over {n} corruptions ({order}): " + "; ".join(
        f"{m} {_series(means, m, 'ece')}" for m in ece_methods
    )
    if drops:
        detail += f". Coverage (target {_pct(1 - (alpha or 0))}): " + "; ".join(
            f"{m} {_series(means, m, 'coverage')}" for m in drops
        )
    return Verdict(headline, detail + ".")


def _pivot(
    rows: Sequence[ShiftRow], name: str, title: str, limits: Mapping[str, float] | None = None
) -> Table:
    """``name``'s mean over the corruptions: a row per method, a column per severity; the
    best value of each column in bold (where the metric has a direction); ``limits``: a
    last column of each method's limit (where given)."""
    means, _ = _means(rows)
    methods = _methods(rows, name)
    severities = sorted({s for m, s in means if m in methods})
    better = column_info(name).better
    cells = []
    for m in methods:
        cells.append([Cell(m)] + [Cell(_value(name, means[m, s][name])) for s in severities])
    if better is not None and len(methods) > 1:
        for j, s in enumerate(severities, 1):
            vals = [means[m, s][name] for m in methods]
            pick = min(vals) if better == "min" else max(vals)
            cells = [
                [*r[:j], Cell(r[j].text, best=v == pick), *r[j + 1 :]]
                for r, v in zip(cells, vals, strict=True)
            ]
    header = ["Method", *(f"Severity {s}" if s else "Clean" for s in severities)]
    if limits:
        cells = [
            [*r, Cell(_value(name, limits.get(m, math.nan)))]
            for r, m in zip(cells, methods, strict=True)
        ]
        header.append("Holds while ECE ≤ (2 × clean)")
    return Table(title, header, cells)


def _long(rows: Sequence[ShiftRow], names: Sequence[str], title: str) -> Table:
    means, counts = _means(rows)
    methods = [m for m in dict.fromkeys(r.method for r in rows) if _has(means, m, names[0])]
    cells = [
        [Cell(m), Cell("clean" if s == 0 else str(s)), Cell(str(counts[m, s]))]
        + [Cell(_value(k, means[m, s].get(k, math.nan))) for k in names]
        for (m, s) in means
        if m in methods
    ]
    header = ["Method", "Severity", "Corruptions", *(column_info(k).label for k in names)]
    return Table(title, header, cells, n_left=2)


def summary_tables(rows: Sequence[ShiftRow], alpha: float | None = None) -> list[Table]:
    """The tables of the report, each the mean over the corruptions: ECE per method and
    severity, then every metric of the calibrators and of the conformal sets."""
    names = list(rows[0].values) if rows else []
    tables = []
    if "ece" in names and _methods(rows, "ece"):
        limits = _limits(rows, _methods(rows, "ece"))
        tables.append(_pivot(rows, "ece", "Mean ECE over the corruptions", limits))
    if "coverage" in names and _methods(rows, "coverage"):
        target = "" if alpha is None else f" (target {_pct(1 - alpha)})"
        tables.append(_pivot(rows, "coverage", f"Mean coverage of the conformal sets{target}"))
    calib = [k for k in CLASSIFIER_COLUMNS if k in names]
    if calib and _methods(rows, calib[0]):
        tables.append(_long(rows, calib, "Every metric of the calibrators"))
    sets = [k for k in SET_COLUMNS if k in names]
    if sets and _methods(rows, sets[0]):
        tables.append(_long(rows, sets, "Every metric of the conformal sets"))
    return tables


def _figures(
    rows: Sequence[ShiftRow], title: str, alpha: float | None, n_bins: int
) -> list[Figure]:
    from calibkit.reporting.figure_style import figure_png_bytes
    from calibkit.reporting.shift_figures import shift_boxplots

    labels = {}
    for name in (*CLASSIFIER_COLUMNS, *SET_COLUMNS):
        i = column_info(name)
        label = f"{i.label}, {n_bins} bins" if name == "ece" else i.label
        labels[name] = (f"{label} (%)" if i.percent else label, i.percent)
    captions = {
        "shift_calibration.png": "Accuracy, NLL and ECE of each calibrator",
        "shift_selective.png": "Brier score, failure AUROC and AURC of each calibrator",
        "shift_conformal.png": "Coverage (dashed: the target) and mean set size of the "
        "conformal sets",
    }
    todo = []
    for name, metrics in FIGURES.items():
        keep = [r for r in rows if any(not math.isnan(r.values.get(m, math.nan)) for m in metrics)]
        if keep and all(m in keep[0].values for m in metrics):
            todo.append((name, metrics, keep))
    out = []
    phase = Phase(log, f"drawing {len(todo)} figures", len(todo))
    for name, metrics, keep in todo:
        target = None if alpha is None else 1 - alpha
        fig = shift_boxplots(keep, metrics, title=title, target=target, labels=labels)
        caption = f"{captions[name]} by severity: one box per method over the corruptions."
        out.append(Figure(name, caption, figure_png_bytes(fig)))
        phase.step(name)
    return out


def _about(result: ShiftResult) -> str:
    c = result.config
    corruptions = c.get("corruptions") or []
    severities = ", ".join(str(s) for s in c.get("severities", []))
    smoke = "Smoke run (--smoke): a toy size, to check the set-up, not for conclusions. "
    return (smoke if c.get("smoke") else "") + (
        f"{c.get('model')} ({Path(str(c.get('weights', ''))).name}) on "
        f"{c.get('data')}:{c.get('split')}: {result.n_cal:,} clean calibration images, "
        f"{result.n_test:,} test images; {len(corruptions)} corruptions "
        f"({', '.join(corruptions)}) at severities {severities}; on {result.device}, "
        f"{result.wall_seconds:.0f} s."
    )


def _how_to_read(alpha: float | None) -> str:
    text = (
        "Each method is fitted once on the clean calibration part and judged on the clean "
        "test part and on every corrupted copy of it; the tables show the mean over the "
        "corruptions at each severity (each set's numbers are in results.csv). A calibrator "
        "holds at a severity when its mean ECE stays within twice its clean level: the "
        "larger of its clean ECE and its clean noise floor (the ECE a perfectly calibrated "
        "model with the same confidences would show at this test size), the last column of "
        "the ECE table. Calibration breaks at the first severity at which no calibrator "
        "holds (the uncalibrated model, none, is shown for comparison)."
    )
    if alpha is not None:
        text += (
            f" A conformal method (split conformal on temperature scaling) falls below its "
            f"{_pct(1 - alpha)} target at the first severity at which its mean coverage is "
            f"more than two binomial standard errors, 2·sqrt(alpha·(1 − alpha)/n) for n test "
            f"images, under it."
        )
    return text


def shift_report(
    result: ShiftResult,
    *,
    inputs: Mapping[str, str] | None = None,
    options: Mapping[str, Any] | None = None,
) -> Report:
    """The report of ``result``: the verdict, the tables, the figures, ``results.csv`` and
    ``config.json`` (``inputs`` and ``options``: what ``results.json`` records of the call;
    by default the checkpoint and the resolved configuration)."""
    rows = result.rows
    s = result.settings
    alpha = s.alpha if s.scores else None
    title = f"Calibration under shift: {s.model} on {s.data}" + (" (smoke)" if s.smoke else "")
    tables = summary_tables(rows, alpha)
    body: list[Block] = [
        Paragraph(_about(result), meta=True),
        Section("How to read this report", [Paragraph(_how_to_read(alpha))]),
        *(Section(t.title, [t]) for t in tables),
    ]
    figures = _figures(rows, f"{s.model} on {s.data}", alpha, s.n_bins)
    if figures:
        body.append(Section("By severity, over the corruptions", list(figures)))
    body.append(
        Paragraph(
            "Files: results.csv (one line per method, corruption and severity), results.json "
            "(the same numbers with the verdict), config.json (the resolved configuration).",
            meta=True,
        )
    )
    document = Document(title, body, shift_verdict(rows, alpha))
    b = breaking_point(rows)
    results = {
        "breaks_at_severity": b.severity,
        "ece_limits": b.limits,
        "coverage_below_target_from": coverage_drops(rows, alpha) if alpha is not None else {},
        "n_calibration": result.n_cal,
        "n_test": result.n_test,
        "summary": [
            {"method": m, "severity": sev, "corruptions": n, **v}
            for m, sev, n, v in severity_summary(rows)
        ],
        "rows": [r.as_dict() for r in rows],
    }
    text = "\n\n".join(table_text(t) for t in tables)
    return Report(
        "shift",
        document,
        results,
        text=text,
        inputs=dict(inputs) if inputs is not None else {"weights": str(s.weights)},
        options=dict(options) if options is not None else result.config,
        files={"results.csv": results_csv(rows), "config.json": json_text(result.config) + "\n"},
    )


def write_shift_report(result: ShiftResult, folder: str | Path) -> list[str]:
    """Write the report of ``result`` into ``folder`` (atomically; see
    :func:`~calibkit.reporting.writer.write_report`); returns the files written."""
    from calibkit.reporting.writer import write_report

    return write_report(shift_report(result), Path(folder))
