"""The study report: results.csv/json, mean +- std tables, figures, Markdown and HTML.

The report opens with its verdict (:mod:`calibkit.study.report.verdict`): for each model
the calibrator its runs recommend and what it buys in mean test NLL and ECE over the seeds;
results.json holds it too.

Every file is written atomically (the ``figures/`` folder as a whole), so a report is
never half-written; running the study again rewrites it from the finished runs.

A paper's reproduction adds its own sections (its tables, a finding, figures) without the
report knowing the paper: a :data:`SectionBuilder` reads the config and the finished runs
and returns a :class:`ReportSection`, or None when the study is not one it describes.
Builders are passed to :func:`write_study_report` (and ``run_study``) as ``sections``, or,
for a driver that runs the ``calibkit study`` command line, made the default of every report
written within :func:`report_sections` (``experiments/wang2021/study.py`` does so). A builder
only reads what the runs stored.
"""

from __future__ import annotations

import contextlib
import math
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from calibkit.calibrators.logit.temperature_grid import ece_temperature_curve
from calibkit.core.words import plural
from calibkit.io.atomic import atomic_directory
from calibkit.io.jsonfile import json_text
from calibkit.metrics import ece, reliability_stats
from calibkit.reporting import document
from calibkit.reporting.csv_text import csv_number, csv_text
from calibkit.reporting.curves import ece_temperature_figure
from calibkit.reporting.figure_style import figure_png_bytes
from calibkit.reporting.figures import GridPanel, reliability_grid
from calibkit.reporting.render import to_html, to_markdown
from calibkit.reporting.tables import column_info
from calibkit.study.definition.config import StudyConfig
from calibkit.study.report.figures import confusion_counts, confusion_figure, training_curves_figure
from calibkit.study.report.paired import paired_table
from calibkit.study.report.verdict import recommended, seeds_text, study_verdict
from calibkit.study.store.folder import (
    FIGURES,
    REPORT_HTML,
    REPORT_MD,
    RESULTS_CSV,
    RESULTS_JSON,
    record_written,
    write_study_file,
)
from calibkit.study.store.record import COLUMNS, RunRecord
from calibkit.workflows.comparison import TEMPERATURE_GRID


@dataclass(frozen=True)
class ReportSection:
    """A section a reproduction adds to a study report: ``blocks`` (paragraphs, tables)
    under ``title`` before the mean ± std tables, and ``figures`` first in the gallery."""

    title: str
    blocks: list[document.Block]
    figures: list[document.Figure]


#: Reads a study's config and finished runs; returns its section, or None when the study is
#: not one the section describes.
SectionBuilder = Callable[[StudyConfig, Sequence[RunRecord]], ReportSection | None]

#: The builders :func:`report_sections` adds to every report while it is active.
_DEFAULT_SECTIONS: list[SectionBuilder] = []


@contextlib.contextmanager
def report_sections(*builders: SectionBuilder) -> Iterator[None]:
    """Every study report written within the block also gets ``builders``' sections (for a
    driver that runs the ``calibkit study`` command line, which passes none itself)."""
    before = list(_DEFAULT_SECTIONS)
    _DEFAULT_SECTIONS.extend(builders)
    try:
        yield
    finally:
        _DEFAULT_SECTIONS[:] = before


#: Default metrics of the mean +- std tables (a study's ``report_metrics`` replaces them).
SHOWN = ("accuracy", "nll", "ece", "ece_floor", "aece", "mce", "brier", "temperature")
HOW_TO_READ = (
    "Every model was trained once per seed; each calibrator was fitted on that run's "
    "calibration part and judged on the test part. Cells are mean ± standard deviation over "
    "the seeds (the seeds change the initialisation, batch order and augmentation; the data "
    "split is fixed). 'none' is the network as trained. Calibration errors and accuracy are "
    "in percent. The ECE floor is the ECE a perfectly calibrated model with the same "
    "confidences would show on this test part: an ECE near its floor is as small as this "
    "test part can measure, and differences below the floor or within a standard deviation "
    "are noise. A mean ± std is the spread of the measured values over the seeds, not an "
    "interval: the measured ECE is biased upwards by about its floor, so near calibration "
    "its mean lies above the true one (in the conformance study a t interval of the seeds' "
    "measured ECEs held a nearly calibrated model's mean true ECE in none of the simulated "
    "studies). The summary's 'True ECE' columns are intervals of the seeds' mean true ECE "
    "(from each run's 95% interval of its true ECE: the lowest lower end, the mean upper "
    "end). "
    "T is the fitted temperature of the temperature-scaling methods. Bold marks "
    "the best mean of each column, italics the second best. The paired tables subtract "
    "temperature scaling's ECE and NLL on the same run from each calibrator's and test the "
    "seed-paired differences (two-sided paired t-test, 'better'/'worse' at p < 0.05): a "
    "test of the measured differences, whose floors cancel only in part between methods of "
    "unlike sharpness."
)


def _stats(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation of the finite ``values`` (the deviation is NaN
    over one value: one run has no spread to show, not a spread of 0)."""
    v = np.array([x for x in values if x is not None and math.isfinite(x)], dtype=np.float64)
    if v.size == 0:
        return math.nan, math.nan
    return float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else math.nan


def _spread(std: float, scale: float, digits: int) -> str:
    """`` ± 0.12``, or `` ± –`` where there is no deviation (one run)."""
    return f" ± {scale * std:.{digits}f}" if math.isfinite(std) else " ± –"


def _fmt(mean: float, std: float, percent: bool) -> str:
    if not math.isfinite(mean):
        return "–"
    if percent:
        return f"{100 * mean:.2f}{_spread(std, 100, 2)}"
    return f"{mean:.4f}{_spread(std, 1, 4)}"


def _seconds(mean: float, std: float) -> str:
    """A fit time: '–' for rows without a fit of their own (none, ablation views)."""
    if not math.isfinite(mean) or mean == 0:
        return "–"
    digits = 0 if mean >= 10 else 2 if mean >= 0.1 else 4
    return f"{mean:.{digits}f}{_spread(std, 1, digits)}"


def _pct(pair: tuple[float, float]) -> str:
    return _fmt(pair[0], pair[1], True)


def aggregate(
    records: Sequence[RunRecord], metrics: Sequence[str] = SHOWN
) -> dict[str, dict[str, dict[str, tuple[float, float]]]]:
    """``{model: {calibrator: {metric: (mean, std)}}}`` over seeds, in first-seen order."""
    grouped: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for rec in records:
        for row in rec.rows:
            grouped.setdefault(rec.model, {}).setdefault(row["calibrator"], []).append(row)
    return {
        model: {
            cal: {key: _stats([r.get(key, math.nan) for r in rows]) for key in metrics}
            for cal, rows in by_cal.items()
        }
        for model, by_cal in grouped.items()
    }


def _ranks(means: list[float], better: str | None) -> tuple[float, float]:
    """The best and second-best distinct finite means (nan when there are none)."""
    values = sorted({m for m in means if math.isfinite(m)}, reverse=better == "max")
    if better is None or not values:
        return math.nan, math.nan
    return values[0], values[1] if len(values) > 1 else math.nan


def model_table(
    model: str,
    stats: dict[str, dict[str, tuple[float, float]]],
    n_seeds: int,
    metrics: Sequence[str] = SHOWN,
) -> document.Table:
    """Calibrators x metrics, mean ± std; best mean in bold, second best marked."""
    ranks = {}
    for key in metrics:
        ranks[key] = _ranks([s[key][0] for s in stats.values()], column_info(key).better)
    rows = []
    for cal, s in stats.items():
        cells = [document.Cell(cal)]
        for key in metrics:
            mean, std = s[key]
            first, second = ranks[key]
            percent = column_info(key).percent
            text = _seconds(mean, std) if key == "fit_seconds" else _fmt(mean, std, percent)
            cells.append(document.Cell(text, best=mean == first, second=mean == second))
        rows.append(cells)
    title = f"{model}: mean ± std over {n_seeds} seed{'s' if n_seeds > 1 else ''}"
    return document.Table(title, ["Calibrator", *[column_info(k).label for k in metrics]], rows)


def _ece_by_floor(by_cal: dict[str, Any], method: str) -> str:
    """``method``'s mean ECE, marked when it is below its own noise floor (then it is
    indistinguishable from a calibrated model at this size, and not better than others)."""
    if method not in by_cal:
        return "–"
    text = _pct(by_cal[method]["ece"])
    floor = by_cal[method].get("ece_floor", (math.nan, math.nan))[0]
    return f"{text} (below its floor)" if by_cal[method]["ece"][0] < floor else text


def _true_ece(runs: Sequence[RunRecord], method: str) -> str:
    """``[0.00, 6.00]``: an interval of the seeds' mean true ECE of ``method`` from each
    run's interval of its true ECE: the lowest of their lower ends (were it above the mean,
    it would be above the smallest seed's true ECE too: the one error a single interval
    makes) and the mean of their upper ends (the conformance study, docs/conformance,
    measured both to cover; a t interval of the measured ECEs does not, near calibration);
    ``–`` without them (rows of an older calibkit)."""
    rows = [row for r in runs for row in r.rows if row["calibrator"] == method]
    lows = [row.get("ece_low", math.nan) for row in rows]
    highs = [row.get("ece_high", math.nan) for row in rows]
    if not rows or not all(math.isfinite(x) for x in [*lows, *highs]):
        return "–"
    return f"[{100 * min(lows):.2f}, {100 * float(np.mean(highs)):.2f}]"


def summary_table(records: Sequence[RunRecord], stats: dict[str, Any]) -> document.Table:
    rows = []
    for model, by_cal in stats.items():
        runs = [r for r in records if r.model == model]
        best, seeds = recommended(runs, by_cal)
        ts = by_cal.get("temperature", {}).get("ece", (math.nan, math.nan))
        rows.append(
            [
                document.Cell(model),
                document.Cell(f"{runs[0].n_parameters:,}"),
                document.Cell(f"{len(runs[0].history)}"),
                document.Cell(f"{np.median([r.train_seconds for r in runs]):.0f}"),
                document.Cell(_pct(by_cal["none"]["accuracy"])),
                document.Cell(_pct(by_cal["none"]["ece"])),
                document.Cell(_true_ece(runs, "none")),
                document.Cell(_pct(ts)),
                document.Cell(_true_ece(runs, "temperature")),
                document.Cell(f"{best} ({seeds_text(seeds)})" if seeds else best),
                document.Cell(_ece_by_floor(by_cal, best)),
                document.Cell(_pct(by_cal["none"]["ece_floor"])),
            ]
        )
    header = [
        "Model",
        "Parameters",
        "Epochs",
        "Train time per run (s, median)",
        "Accuracy (%)",
        "ECE none (%)",
        "True ECE none (%, 95%)",
        "ECE after TS (%)",
        "True ECE after TS (%, 95%)",
        "Recommended (cross-fitted NLL vs TS)",
        "Its ECE (%)",
        "ECE floor (%)",
    ]
    return document.Table("Summary", header, rows, n_left=1)


def study_figures(
    cfg: StudyConfig, records: Sequence[RunRecord], classes: Sequence[str]
) -> list[document.Figure]:
    """Per model: training curves, confusion, reliability before/after TS, ECE(T)."""
    figures: list[document.Figure] = []
    for model in dict.fromkeys(r.model for r in records):
        runs = [r for r in records if r.model == model]
        if all(r.history for r in runs):
            fig = training_curves_figure([r.history for r in runs], title=model)
            caption = f"{model}: training curves (test part)"
            figures.append(document.Figure(f"training_{model}.png", caption, figure_png_bytes(fig)))
        counts = sum(
            (
                confusion_counts(z["test_labels"], z["test_logits"].argmax(1), len(classes))
                for z in (r.folder.logits() for r in runs)
            ),
            start=np.zeros((len(classes), len(classes)), dtype=np.int64),
        )
        fig = confusion_figure(
            counts, classes, title=f"{model}: test confusion, {plural(len(runs), 'seed')} summed"
        )
        caption = f"{model}: confusion matrix"
        figures.append(document.Figure(f"confusion_{model}.png", caption, figure_png_bytes(fig)))
        figures += temperature_figures(cfg, runs[0])
    return figures


def temperature_figures(cfg: StudyConfig, run: RunRecord) -> list[document.Figure]:
    """Reliability before and after the run's saved temperature scaling, and its test ECE
    against the temperature."""
    z = run.folder.logits()
    ts = run.folder.temperature()
    probs = ts.predict_proba(z["test_logits"])
    y, logits, n_bins = z["test_labels"], z["test_logits"], cfg.n_bins
    floors = {r["calibrator"]: r.get("ece_floor") for r in run.rows}
    panels: list[GridPanel] = [
        (
            "none",
            reliability_stats(y, logits=logits, n_bins=n_bins),
            ece(y, logits=logits, n_bins=n_bins),
            floors.get("none"),
        ),
        (
            f"temperature (T={ts.temperature_:.2f})",
            reliability_stats(y, probs, n_bins=n_bins),
            ece(y, probs, n_bins=n_bins),
            floors.get("temperature"),
        ),
    ]
    title = f"{run.model}, seed {run.seed}"
    grid = reliability_grid(panels, ncols=2, title=f"{title}: before and after TS")
    curve = ece_temperature_figure(
        TEMPERATURE_GRID,
        ece_temperature_curve(logits, y, TEMPERATURE_GRID, n_bins),
        fitted={"temperature (NLL)": ts.temperature_},
        title=f"{title}: test ECE against the temperature",
        floor=floors.get("temperature"),
    )
    return [
        document.Figure(
            f"reliability_{run.model}.png",
            f"{run.model}: reliability before/after TS",
            figure_png_bytes(grid),
        ),
        document.Figure(
            f"ece_temperature_{run.model}.png",
            f"{run.model}: ECE against T",
            figure_png_bytes(curve),
        ),
    ]


def results_csv(records: Sequence[RunRecord]) -> str:
    """One line per (run, calibrator): the :data:`COLUMNS` (metric values as fractions)."""
    rows = [
        [row[c] if c in ("model", "seed", "calibrator") else csv_number(row[c]) for c in COLUMNS]
        for rec in records
        for row in rec.rows
    ]
    return csv_text(COLUMNS, rows)


def _header(
    cfg: StudyConfig, records: Sequence[RunRecord], sizes: dict[str, dict[str, int]]
) -> str:
    splits: dict[str, list[str]] = {}
    for model, s in sizes.items():
        splits.setdefault(", ".join(f"{k} {v:,}" for k, v in s.items()), []).append(model)
    if len(splits) == 1:
        n = next(iter(splits))
    else:
        n = "; ".join(f"{', '.join(models)}: {text}" for text, models in splits.items())
    return (
        f"Dataset {cfg.data.dataset} ({n}); {plural(len(records), 'run')}: "
        f"{plural(len({r.model for r in records}), 'model')} x "
        f"{plural(len({r.seed for r in records}), 'seed')}; "
        f"{cfg.n_bins} equal-width bins."
    )


def study_tables(
    cfg: StudyConfig, records: Sequence[RunRecord]
) -> tuple[list[document.Table], dict[str, Any]]:
    """The summary, then per model its mean ± std table and (with seeds) its paired table;
    and the statistics ``{model: {calibrator: {metric: (mean, std)}}}``."""
    metrics = cfg.report_metrics or SHOWN
    stats = aggregate(records, tuple(dict.fromkeys((*SHOWN, *metrics))))
    n_runs = {m: sum(r.model == m for r in records) for m in stats}
    all_rows = [row for rec in records for row in rec.rows]
    tables = [summary_table(records, stats)]
    for m, s in stats.items():
        counts = Counter(row["calibrator"] for r in records if r.model == m for row in r.rows)
        shown = {
            (c if counts[c] == n_runs[m] else f"{c} (n = {counts[c]})"): v for c, v in s.items()
        }
        tables.append(model_table(m, shown, n_runs[m], metrics))
        paired = paired_table(all_rows, m) if n_runs[m] > 1 else None
        tables += [paired] if paired is not None else []
    return tables, stats


def study_document(
    cfg: StudyConfig,
    records: Sequence[RunRecord],
    tables: list[document.Table],
    classes: Sequence[str],
    sizes: dict[str, dict[str, int]],
    sections: Sequence[SectionBuilder] = (),
    verdict: document.Verdict | None = None,
) -> document.Document:
    """The report as a document: the ``verdict`` (:func:`study_verdict`), header, how to
    read it, the extra ``sections`` (those that describe this study), the tables, the
    figures (the sections' first)."""
    how = HOW_TO_READ
    if any(cfg.model_data(m).split_by_seed for m in cfg.models):
        how = how.replace("the data split is fixed", "each seed also draws another data split")
    body: list[document.Block] = [
        document.Paragraph(_header(cfg, records, sizes), meta=True),
        *([document.Paragraph(cfg.smoke_summary(), meta=True)] if cfg.data.smoke else []),
        document.Section("How to read this", [document.Paragraph(how)]),
    ]
    figures = study_figures(cfg, records, classes)
    extra: list[document.Figure] = []
    for build in sections:
        section = build(cfg, records)
        if section is not None:
            body.append(document.Section(section.title, section.blocks))
            extra += section.figures
    body += [document.table_section(t) for t in tables]
    body.append(document.Section("Figures", [document.Gallery(extra + figures)]))
    return document.Document(cfg.name, body, verdict=verdict)


def results_json(
    cfg: StudyConfig,
    records: Sequence[RunRecord],
    summary: Any,
    verdict: document.Verdict | None = None,
) -> dict[str, Any]:
    """The verdict, every row, the summary and each run's history: the content of
    ``results.json``."""
    runs = [
        {"model": r.model, "seed": r.seed, "train_seconds": r.train_seconds, "history": r.history}
        for r in records
    ]
    rows = [row for rec in records for row in rec.rows]
    said = None if verdict is None else {"headline": verdict.headline, "detail": verdict.detail}
    return {"name": cfg.name, "verdict": said, "rows": rows, "summary": summary, "runs": runs}


def write_study_report(
    cfg: StudyConfig,
    records: Sequence[RunRecord],
    out: Path,
    classes: Sequence[str],
    sizes: dict[str, dict[str, int]],
    sections: Sequence[SectionBuilder] = (),
) -> dict[str, Any]:
    """Write results.csv/json, report.md/html and figures/ into ``out``; return the stats.

    ``sections``: builders of extra sections (see :data:`SectionBuilder`), after those of an
    active :func:`report_sections`."""
    tables, stats = study_tables(cfg, records)
    builders = [*_DEFAULT_SECTIONS, *sections]
    verdict = study_verdict(records, stats, cfg.smoke_summary())
    doc = study_document(cfg, records, tables, classes, sizes, builders, verdict)
    summary = {
        model: {cal: {k: {"mean": m, "std": s} for k, (m, s) in d.items()} for cal, d in by.items()}
        for model, by in stats.items()
    }
    record_written(out, FIGURES, RESULTS_JSON, RESULTS_CSV, REPORT_MD, REPORT_HTML)
    with atomic_directory(out / FIGURES) as tmp:
        for fig in doc.figures():
            (tmp / fig.name).write_bytes(fig.png)
    results = json_text(results_json(cfg, records, summary, verdict)) + "\n"
    write_study_file(out, RESULTS_JSON, results.encode("utf-8"))
    write_study_file(out, RESULTS_CSV, results_csv(records).encode("utf-8"))
    write_study_file(out, REPORT_MD, to_markdown(doc).encode("utf-8"))
    write_study_file(out, REPORT_HTML, to_html(doc).encode("utf-8"))
    return summary
