"""The report of ``calibkit conformal``: coverage against the target, set sizes, in words first.

:func:`conformal_report` turns the scores' sets measured on the test part
(:func:`~calibkit.workflows.conformal.conformal_sets`) into a
:class:`~calibkit.reporting.writer.Report`: the verdict (which score reaches the target
coverage with the smallest sets, and any that under-covers beyond its interval), a table
of the set metrics (labels, percent and ranking from the metric registry, intervals at the
requested level), each score's coverage by set size, how to read them, and the fitted
predictors as the report's own files (``conformal_<score>.json``, :data:`FITTED_FILE`),
which ``calibkit apply`` uses to make the sets of new predictions.

>>> from calibkit.core.outputs import as_outputs
>>> from calibkit.workflows.conformal import conformal_sets
>>> rng = np.random.default_rng(0)
>>> z = rng.normal(size=(800, 3)) * 3
>>> y = np.array([rng.choice(3, p=np.exp(r) / np.exp(r).sum()) for r in z])
>>> cal, test = as_outputs(y[:400], logits=z[:400]), as_outputs(y[400:], logits=z[400:])
>>> from calibkit import Resampling
>>> rows = conformal_sets(cal, test, ["lac", "aps"], alpha=0.2, resampling=Resampling(n_boot=200))
>>> report = conformal_report(rows, source="toy")
>>> print(report.document.verdict.headline)  # doctest: +ELLIPSIS
LAC gives the smallest sets that reach the 80% target: 0.95 classes on average (5.0% ...
>>> sorted(report.files)
['conformal_aps.json', 'conformal_lac.json']
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from calibkit.core.words import plural
from calibkit.metrics.conformal import SET_METRICS
from calibkit.metrics.info import METRICS
from calibkit.reporting.document import (
    Block,
    Cell,
    Document,
    Paragraph,
    Section,
    Table,
    Verdict,
)
from calibkit.reporting.text import table_text
from calibkit.reporting.writer import Report
from calibkit.workflows.conformal import SetsResult

#: Each score's fitted predictor in the report folder: a calibkit document, which
#: ``calibkit apply`` reads to make the sets of new predictions.
FITTED_FILE = "conformal_{score}.json"


def score_label(score: str) -> str:
    """A score as reports name it (``"raps"`` -> ``"RAPS"``)."""
    return score.upper()


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _number(name: str, x: float) -> str:
    """A set metric's value in its table unit: percent (no sign), or classes."""
    if METRICS.get(name).percent:
        return f"{100 * x:.1f}"
    return f"{x:.0f}" if name == "median_set_size" else f"{x:.2f}"


def _has_ci(r: SetsResult) -> bool:
    return not np.isnan(r.metrics.ci["coverage"][0])


def _target(r: SetsResult) -> float:
    return 1.0 - float(r.model.alpha)


def under_covers(r: SetsResult) -> bool:
    """Whether the score's coverage interval lies wholly below the target (never without
    an interval)."""
    return _has_ci(r) and r.metrics.ci["coverage"][1] < _target(r)


def _level(rows: Sequence[SetsResult]) -> str:
    return f"{100 * rows[0].metrics.resampling.level:g}%"


def _coverage_ci(r: SetsResult) -> str:
    low, high = r.metrics.ci["coverage"]
    return f"[{100 * low:.1f}%, {100 * high:.1f}%]"


def _empty(r: SetsResult) -> str:
    """`` (3.2% of its sets empty)`` when at least 1% of the score's sets are empty."""
    n = sum(rows for _, rows in r.metrics.size_coverage.values())
    empty = r.metrics.size_coverage.get(0, (0.0, 0))[1] / max(n, 1)
    return f" ({_pct(empty)} of its sets empty)" if empty >= 0.01 else ""


def verdict(rows: Sequence[SetsResult]) -> Verdict:
    """Coverage against the target in plain words: the score with the smallest sets among
    those that reach the target, and each score that under-covers beyond its interval."""
    target, level = f"{100 * _target(rows[0]):g}%", _level(rows)
    size = {r.score: r.metrics.values["mean_set_size"] for r in rows}
    cov = {r.score: r.metrics.values["coverage"] for r in rows}
    under = [r for r in rows if under_covers(r)]
    covering = [r for r in rows if r not in under]
    sentences = []
    if covering:
        best = min(covering, key=lambda r: size[r.score])
        name = score_label(best.score)
        if len(rows) == 1:
            sentences.append(
                f"{name} covers {_pct(cov[best.score])} of test labels against the "
                f"{target} target, with sets of {size[best.score]:.2f} classes on average"
                f"{_empty(best)}."
            )
        else:
            if not under and _has_ci(best):
                lead = f"Every score covers the {target} target within its {level} interval; "
                what = "the smallest sets"
            elif under:
                lead, what = "", f"the smallest sets that reach the {target} target"
            else:
                lead, what = "", "the smallest sets"
            sentences.append(
                f"{lead}{name} gives {what}: {size[best.score]:.2f} classes on average"
                f"{_empty(best)}, covering {_pct(cov[best.score])} of test labels"
                + ("" if under or _has_ci(best) else f" against the {target} target")
                + "."
            )
    else:
        sentences.append(f"No score reaches the {target} target coverage.")
    for r in under:
        sentences.append(
            f"{score_label(r.score)} under-covers: {_pct(cov[r.score])} of test labels, its "
            f"{level} interval {_coverage_ci(r)} below the target."
        )
    return Verdict(" ".join(sentences), _detail(rows))


def _detail(rows: Sequence[SetsResult]) -> str:
    """The numbers behind the verdict, one clause per score."""
    ci = _has_ci(rows[0])
    parts = []
    for r in rows:
        v = r.metrics.values
        text = f"{score_label(r.score)} {_pct(v['coverage'])}"
        if ci:
            text += f" {_coverage_ci(r)}"
        parts.append(f"{text} with {v['mean_set_size']:.2f} classes per set")
    what = f"Coverage [{_level(rows)} interval]" if ci else "Coverage (no intervals: n_boot 0)"
    detail = f"{what} and mean set size: " + "; ".join(parts) + "."
    m = rows[0].model
    worst = max(rows, key=lambda r: r.metrics.values["class_coverage_gap"])
    gap = worst.metrics.values["class_coverage_gap"]
    if gap > 0.05 and not m.mondrian:
        detail += (
            f" The worst class is covered at {_pct(_target(worst) - gap)} with "
            f"{score_label(worst.score)} (`--mondrian` gives each class its own quantile)."
        )
    return detail


def _cell(r: SetsResult, name: str) -> str:
    value, (low, high) = r.metrics.values[name], r.metrics.ci[name]
    text = _number(name, value)
    return text if np.isnan(low) else f"{text} [{_number(name, low)}, {_number(name, high)}]"


def _header(name: str) -> str:
    info = METRICS.get(name)
    return f"{info.label} %" if info.percent else info.label


def metrics_table(rows: Sequence[SetsResult]) -> Table:
    """One row per score: each set metric with its interval; the best value of each ranked
    metric in bold, among the scores that reach the target (with two or more)."""
    ranked = [r for r in rows if not under_covers(r)]
    best: dict[str, float] = {}
    for name in SET_METRICS:
        better = METRICS.get(name).better
        if better is not None and len(ranked) > 1:
            values = [r.metrics.values[name] for r in ranked]
            best[name] = min(values) if better == "min" else max(values)
    body = [
        [
            Cell(score_label(r.score)),
            *(
                Cell(_cell(r, m), best=r in ranked and r.metrics.values[m] == best.get(m))
                for m in SET_METRICS
            ),
        ]
        for r in rows
    ]
    header = ["Score", *(_header(m) for m in SET_METRICS)]
    return Table("Coverage and set size", header, body)


def size_table(rows: Sequence[SetsResult]) -> Table:
    """Coverage among the test rows of each set size, per score (rows, coverage %)."""
    sizes = sorted({s for r in rows for s in r.metrics.size_coverage})
    header = ["Set size"]
    for r in rows:
        header += [f"{score_label(r.score)} rows", f"{score_label(r.score)} coverage %"]
    body = []
    for s in sizes:
        line = [Cell(str(s))]
        for r in rows:
            c, n = r.metrics.size_coverage.get(s, (float("nan"), 0))
            line += [Cell(f"{n:,}"), Cell("–" if n == 0 else f"{100 * c:.1f}")]
        body.append(line)
    return Table("Coverage by set size", header, body)


def _setup(rows: Sequence[SetsResult], source: str) -> str:
    m, metrics = rows[0].model, rows[0].metrics
    kind = "Mondrian (one quantile per class)" if m.mondrian else "split"
    intervals = (
        f"{_level(rows)} bootstrap intervals of the test part "
        f"({plural(metrics.resampling.n_boot, 'resample')})"
        if metrics.resampling.n_boot
        else "no intervals (n_boot 0)"
    )
    with_params = [r.model.conformity_score for r in rows if r.model.conformity_score.get_params()]
    params = "".join(f", {s.describe()}" for s in with_params)
    return (
        f"Data: {source}. alpha = {m.alpha:g} (target coverage {100 * _target(rows[0]):g}%), "
        f"calibrator under the scores: {m.calibrator or 'none (softmax)'}, {kind} conformal, "
        f"{m.n_calibration_:,} rows for the quantile{', randomised' if m.randomized else ''}"
        f"{params}; {intervals}."
    )


HOW_TO_READ = (
    "Coverage is the share of test rows whose set holds the true label. Split conformal "
    "guarantees at least the target (1 - alpha) on average over calibration draws, so a "
    "coverage whose interval holds the target is on target; one whose interval lies below it "
    "under-covers (the test part differs from the calibration part, or the calibration part is "
    "too small). At the same coverage, smaller sets say more: the mean and median set size "
    "count the classes per set. The class coverage gap is the target minus the worst class's "
    "coverage (positive: some class is under-covered; `--mondrian` calibrates one quantile "
    "per class). Coverage by set size shows where the sets hold the label: large sets are the "
    "model's uncertain rows; an empty set (size 0) says no class is likely enough, never "
    "covers, and spends part of alpha (which is why a mean set size can be below 1)."
)


def _results(rows: Sequence[SetsResult], source: str) -> dict[str, Any]:
    """Every number, as fractions (NaN intervals as None, infinite thresholds as "inf")."""

    def num(x: float) -> float | None:
        return None if np.isnan(x) else float(x)

    m = rows[0].model
    return {
        "source": source,
        "alpha": m.alpha,
        "target_coverage": _target(rows[0]),
        "level": rows[0].metrics.resampling.level,
        "n_boot": rows[0].metrics.resampling.n_boot,
        "results": [
            {
                "score": r.score,
                "under_covers": under_covers(r),
                "params": r.model.to_json()["params"],  # the score as {"name": ..., ...}
                "thresholds": [num(t) if np.isfinite(t) else "inf" for t in r.model.thresholds_],
                "n_calibration": r.model.n_calibration_,
                "values": r.metrics.values,
                "ci": {k: [num(a), num(b)] for k, (a, b) in r.metrics.ci.items()},
                "size_coverage": {
                    str(s): {"coverage": c, "rows": n}
                    for s, (c, n) in r.metrics.size_coverage.items()
                },
                "class_coverage": [num(float(c)) for c in r.metrics.class_coverage],
            }
            for r in rows
        ],
    }


def conformal_report(
    rows: Sequence[SetsResult],
    *,
    source: str,
    title: str = "Conformal prediction sets",
    inputs: Mapping[str, str] | None = None,
    options: Mapping[str, Any] | None = None,
    folder: Path | None = None,
) -> Report:
    """The report of the scores' sets: verdict, tables, how to read them, and each fitted
    predictor as ``conformal_<score>.json`` (``folder``: where it will be written, named
    on the terminal)."""
    files = {
        FITTED_FILE.format(score=r.score): json.dumps(r.model.to_json(), indent=1, allow_nan=False)
        for r in rows
    }
    table, sizes = metrics_table(rows), size_table(rows)
    apply = f"calibkit apply {next(iter(files))} NEW.npz -o sets.npz"
    body: list[Block] = [
        Paragraph(_setup(rows, source), meta=True),
        Section(
            table.title,
            [
                table,
                Paragraph(
                    f"In brackets: {_level(rows)} intervals. Bold: the smallest value among the "
                    "scores that reach the target."
                    if _has_ci(rows[0])
                    else "Bold: the smallest value among the scores.",
                    meta=True,
                ),
            ],
        ),
        Section(sizes.title, [sizes]),
        Section("How to read this report", [Paragraph(HOW_TO_READ)]),
        Section(
            "Fitted predictors",
            [
                Paragraph(
                    "Each score's predictor, fitted on the calibration part, is saved beside "
                    f"this report ({', '.join(f'`{f}`' for f in files)}); `{apply}` makes the "
                    "sets of new predictions with it."
                )
            ],
        ),
    ]
    doc = Document(title, body, verdict(rows))
    text = "\n\n".join([_setup(rows, source), table_text(table), table_text(sizes)])
    if folder is not None:
        saved = ", ".join(str(folder / f) for f in files)
        text += f"\n\nconformal predictors: {saved} (calibkit apply makes sets with them)"
    return Report(
        "conformal",
        doc,
        _results(rows, source),
        text=text,
        inputs=dict(inputs or {}),
        options=dict(options or {}),
        files=files,
    )


__all__ = [
    "FITTED_FILE",
    "HOW_TO_READ",
    "conformal_report",
    "metrics_table",
    "score_label",
    "size_table",
    "under_covers",
    "verdict",
]
