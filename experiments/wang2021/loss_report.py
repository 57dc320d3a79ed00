"""The training-objective section of a study report (Wang, Feng & Zhang 2021).

A study whose models differ by training loss (each with at most one coefficient, and a
cross-entropy model as the reference) gets, beside the usual tables: Table 1 (raw ECE at
the best coefficient of each method), Table 2 (ECE before and after TS and histogram
binning, Welch t-tests against CE), a finding stated from the numbers, and four figures:
ECE against the coefficient, the optimal ECE per epoch, the maximum training logit by the
epoch each sample was learned, and the ECE after calibration against the calibration-set
size.

:func:`loss_section` is a section builder of the study report
(:data:`calibkit.study.report.SectionBuilder`): ``study.py`` beside this module runs
``calibkit study`` with it. Its tables and figures read what the runs stored, except the
calibration-size curve, which refits the post-hoc calibrators on parts of each run's
calibration logits (:func:`experiments.wang2021.analysis.calibration_size_curve`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from calibkit.metrics import score_decomposition
from calibkit.reporting.document import Block, Figure, Paragraph, table_section
from calibkit.reporting.figure_style import figure_png_bytes
from calibkit.study.definition.config import StudyConfig
from calibkit.study.report import ReportSection
from calibkit.study.store.record import RunRecord
from experiments.wang2021.analysis import (
    CE,
    Methods,
    calibration_size_curve,
    decomposition_table,
    finding,
    model_name,
    table1,
    table2,
)
from experiments.wang2021.loss_figures import (
    calibration_size_figure,
    ece_vs_coefficient_figure,
    max_logit_by_learned_epoch_figure,
    optimal_ece_per_epoch_figure,
)

#: Post-hoc methods of the paper, in the order of its Table 2 (TS with T searched for the
#: lowest calibration ECE, histogram binning), then TS fitted by NLL (the usual TS, whose
#: single parameter a small calibration set estimates with less variance), when present.
POST_HOC = ("temperature_ece", "histogram", "temperature")


def loss_methods(cfg: StudyConfig) -> Methods | None:
    """``label -> (loss, coefficient)`` when the models differ by training loss, else None."""
    methods: dict[str, tuple[str, float]] = {}
    for spec in cfg.models:
        train = cfg.model_training(spec)
        values = [v for v in train.loss_params.values() if isinstance(v, int | float)]
        if len(train.loss_params) > 1 or len(values) != len(train.loss_params):
            return None
        methods[spec.label] = (train.loss, float(values[0]) if values else 0.0)
    losses = {m for m, _ in methods.values()}
    if CE not in losses or len(losses) < 2:
        return None
    return methods


def _lowest(records: Sequence[RunRecord], labels: list[str], calibrator: str) -> str:
    means = {
        lb: np.mean(
            [
                r["ece"]
                for rec in records
                if rec.model == lb
                for r in rec.rows
                if r["calibrator"] == calibrator
            ]
        )
        for lb in labels
    }
    return min(means, key=lambda lb: float(means[lb]))


def loss_section(cfg: StudyConfig, records: Sequence[RunRecord]) -> ReportSection | None:
    """The section for ``cfg``'s records, or None when the study does not compare losses
    (a :data:`calibkit.study.report.SectionBuilder`)."""
    methods = loss_methods(cfg)
    if methods is None:
        return None
    rows = [row for rec in records for row in rec.rows]
    done = {rec.model for rec in records}
    methods = {lb: m for lb, m in methods.items() if lb in done}
    ce = next(lb for lb, (m, _) in methods.items() if m == CE)
    present = sorted({r["calibrator"] for r in rows})
    post_hoc = tuple(c for c in POST_HOC if c in present)
    tables = [table1(rows, methods), table2(rows, methods, post_hoc)]
    tables.append(decomposition_table(_decompositions(records, methods), methods))
    text = finding(rows, methods, post_hoc)
    fig = ece_vs_coefficient_figure(rows, methods, post_hoc)
    caption = "ECE against the coefficient"
    figures = [Figure("loss_ece_vs_coefficient.png", caption, figure_png_bytes(fig))]
    by_method: dict[str, list[str]] = {}
    for lb, (m, _) in methods.items():
        by_method.setdefault(m, []).append(lb)
    best = [ce] + [_lowest(records, lbs, "none") for m, lbs in by_method.items() if m != CE]
    histories = {lb: [rec.history for rec in records if rec.model == lb] for lb in best}
    names = {lb: model_name(*methods[lb]) for lb in best}
    fig = optimal_ece_per_epoch_figure(histories, best, names=names, title="Test ECE per epoch")
    caption = "Optimal ECE (T searched on the test part) per epoch, CE and each method's best"
    figures.append(Figure("loss_optimal_ece_per_epoch.png", caption, figure_png_bytes(fig)))
    for lb in best:
        rec = next(r for r in records if r.model == lb)
        z = rec.folder.logits()
        if "train_learned_epoch" in z:
            fig = max_logit_by_learned_epoch_figure(
                z["train_logits"].max(axis=1),
                z["train_learned_epoch"],
                len(rec.history),
                title=f"{names[lb]}, seed {rec.seed}: max logit of training samples",
            )
            caption = f"{names[lb]}: max training logit by the epoch learned"
            figures.append(Figure(f"loss_max_logit_{lb}.png", caption, figure_png_bytes(fig)))
    sizes, curves = _size_curves(cfg, records, best, names, post_hoc)
    fig = calibration_size_figure(
        sizes, curves, title="ECE after calibration against the calibration-set size"
    )
    caption = (
        "ECE after calibration against the calibration-set size: CE and each method's best "
        "(first seed; mean ± std over 5 draws per size)"
    )
    figures.append(Figure("loss_calibration_size.png", caption, figure_png_bytes(fig)))
    blocks: list[Block] = [Paragraph(text), *(table_section(t) for t in tables)]
    return ReportSection("Training objectives", blocks, figures)


def _decompositions(
    records: Sequence[RunRecord], methods: Methods
) -> dict[str, dict[str, list[float]]]:
    """Per model label, the NLL and Brier parts of each seed's test outputs (by seed)."""
    parts: dict[str, dict[str, list[float]]] = {}
    for rec in sorted(records, key=lambda r: r.seed):
        if rec.model not in methods:
            continue
        z = rec.folder.logits()
        into = parts.setdefault(rec.model, {})
        for score in ("nll", "brier"):
            d = score_decomposition(z["test_labels"], logits=z["test_logits"], score=score)
            into.setdefault(score, []).append(d.value)
            into.setdefault(f"{score}_calibration", []).append(d.calibration)
            into.setdefault(f"{score}_refinement", []).append(d.refinement)
    return parts


def _size_curves(
    cfg: StudyConfig,
    records: Sequence[RunRecord],
    labels: Sequence[str],
    names: dict[str, str],
    post_hoc: tuple[str, ...],
) -> tuple[list[int], dict[str, dict[str, np.ndarray]]]:
    """Calibration-size curves of ``labels`` (each on its first seed's run)."""
    curves: dict[str, dict[str, np.ndarray]] = {}
    sizes: list[int] = []
    params = {c: dict(cfg.calibrator_params.get(c, {})) for c in post_hoc}
    for lb in labels:
        rec = min((r for r in records if r.model == lb), key=lambda r: r.seed)
        z = rec.folder.logits()
        n_cal = len(z["cal_labels"])
        sizes = [n for n in (50, 100, 200, 500, 1000, 2000, 5000) if n < n_cal] + [n_cal]
        curves[names[lb]] = calibration_size_curve(
            z["cal_logits"],
            z["cal_labels"],
            z["test_logits"],
            z["test_labels"],
            sizes,
            params,
            seed=rec.seed,
            n_bins=cfg.n_bins,
        )
    return sizes, curves
