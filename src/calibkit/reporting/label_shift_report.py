"""The report of ``calibkit labelshift``: a :class:`~calibkit.reporting.writer.Report` of a
:class:`~calibkit.workflows.label_shift.LabelShiftResult`.

It opens with the verdict in plain words: with target labels, how much adapting to the
priors helped (NLL and accuracy before and after, the oracle's NLL beside them); without,
how far the estimated priors are from the source's (the gain cannot be measured). Then the
class priors (source, estimated, true) and, with labels, the metrics of
:data:`~calibkit.workflows.label_shift.SCORED` of the unadapted, adapted and oracle
posteriors with their bootstrap intervals; labels, units and which way is better come from
the metric registry (:data:`calibkit.metrics.info.METRICS`). The folder also holds
``adapter.json`` (:data:`ADAPTER_FILE`), the fitted adapter: ``calibkit apply`` adapts new
predictions with it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from calibkit.core.words import plural
from calibkit.metrics.info import METRICS, MetricInfo
from calibkit.reporting.document import Block, Cell, Document, Paragraph, Section, Table, Verdict
from calibkit.reporting.tables import format_points
from calibkit.reporting.text import table_text
from calibkit.reporting.writer import Report
from calibkit.workflows.label_shift import SCORED, VARIANTS, Interval, LabelShiftResult

#: The fitted adapter in the report folder (a calibkit document: ``calibkit apply`` reads it).
ADAPTER_FILE = "adapter.json"
#: What each row of the scores table holds.
VARIANT_TEXT = {
    "unadapted": "unadapted (source priors)",
    "adapted": "adapted",
    "oracle": "oracle (true target priors)",
}
#: The estimators by name, as the report says them.
ESTIMATOR_TEXT = {"em": "EM", "bbse": "BBSE"}


def _value(info: MetricInfo, v: float) -> str:
    return f"{100 * v:.2f}" if info.percent else f"{v:.4f}"


def _spoken(info: MetricInfo, v: float) -> str:
    """A value in a sentence: ``91.2%`` or ``0.412``."""
    return f"{100 * v:.1f}%" if info.percent else f"{v:.3f}"


def _name(info: MetricInfo) -> str:
    """The metric's label inside a sentence: ``NLL``, ``ECE``, ``accuracy``."""
    return info.label if info.label.isupper() else info.label.lower()


def _header(info: MetricInfo) -> str:
    return f"{info.label} %" if info.percent else info.label


def _with_ci(info: MetricInfo, v: float, ci: Interval | None) -> str:
    if ci is None:
        return _value(info, v)
    return f"{_value(info, v)} [{_value(info, ci[0])}, {_value(info, ci[1])}]"


def _largest_move(r: LabelShiftResult) -> tuple[float, int]:
    """The largest |target prior - source prior| (a fraction) and its class."""
    moved = np.abs(r.priors - r.source_priors)
    c = int(np.argmax(moved))
    return float(moved[c]), c


def _how(r: LabelShiftResult) -> str:
    """How the priors were had, on which calibrator, from how many rows."""
    calibrator = r.adapter.calibrator or "no calibrator (softmax)"
    if r.given:
        how = "target priors given (--priors)"
    else:
        how = f"target priors estimated by {ESTIMATOR_TEXT.get(r.estimator, r.estimator)}"
        if r.estimator == "em":
            converged = "" if r.converged else ", not converged"
            how += f" ({_iterations(r.n_iter)}{converged})"
        if not r.identified:
            how += " (singular confusion matrix: source priors kept)"
    return f"{how}; calibrator {calibrator}; {r.n_source:,} source rows, {r.n_target:,} target rows"


def _change(name: str, before: float, after: float) -> str:
    """``lowered NLL from 0.412 to 0.305`` (or raised, or left unchanged)."""
    info = METRICS.get(name)
    if _spoken(info, before) == _spoken(info, after):
        return f"left {_name(info)} at {_spoken(info, after)}"
    verb = "lowered" if after < before else "raised"
    return f"{verb} {_name(info)} from {_spoken(info, before)} to {_spoken(info, after)}"


def _change_detail(r: LabelShiftResult, name: str) -> str:
    info = METRICS.get(name)
    d = r.metrics["adapted"][name] - r.metrics["unadapted"][name]
    unit = " pp" if info.percent else ""  # a difference of percentages, as in the tables
    scale = 100.0 if info.percent else 1.0
    digits = 2 if info.percent else 4
    text = f"{_name(info)} {scale * d:+.{digits}f}{unit}"
    ci = r.change_ci.get(name)
    if ci is not None:
        text += f" [{scale * ci[0]:+.{digits}f}, {scale * ci[1]:+.{digits}f}]"
    return text


def _moved(r: LabelShiftResult) -> str:
    """``by up to 21.6 percentage points (class 0: 9.8% -> 31.4%)``."""
    moved, c = _largest_move(r)
    source, target = 100 * r.source_priors[c], 100 * r.priors[c]
    return f"by up to {format_points(moved, 1)} (class {c}: {source:.1f}% -> {target:.1f}%)"


def _iterations(n: int) -> str:
    return f"{n:,} iteration" + ("" if n == 1 else "s")


def _cautions(r: LabelShiftResult) -> str:
    """The estimate's caveats in a few words, for the verdict (empty if none)."""
    said = []
    if not r.identified:
        said.append("BBSE's confusion matrix is singular, so the source priors were kept")
    if not r.converged:
        said.append(f"EM did not converge in {_iterations(r.n_iter)}")
    k = r.priors.shape[0]
    if not r.given and r.n_target < k:
        said.append(f"{r.n_target:,} target rows are too few for {k} priors")
    return "Read with care: " + "; ".join(said) + ". " if said else ""


def label_shift_verdict(r: LabelShiftResult) -> Verdict:
    """What the run shows, in plain words, and the numbers behind it (led by the
    estimate's caveats, if any: EM not converged, BBSE's system singular, too few rows)."""
    verdict = _plain_verdict(r)
    caution = _cautions(r)
    if not caution:
        return verdict
    headline = verdict.headline
    if not r.identified:  # nothing was estimated: the headline says so, not "differ by 0.0"
        headline = (
            "BBSE could not estimate the target priors: its confusion matrix is singular, "
            "so the source priors were kept and nothing was adapted (EM, --estimator em, "
            "needs no inverse)."
        )
    return Verdict(headline, caution + verdict.detail)


def _plain_verdict(r: LabelShiftResult) -> Verdict:
    moved, c = _largest_move(r)
    which = "given" if r.given else "estimated"
    if not r.metrics:
        headline = (
            f"The {which} target priors differ from the source's by up to "
            f"{format_points(moved, 1)} (class {c}); without target labels the gain of "
            "adapting cannot be measured."
        )
        source, target = 100 * r.source_priors[c], 100 * r.priors[c]
        detail = f"Class {c}: {source:.1f}% of the source, {target:.1f}% {which} for the target"
        return Verdict(headline, f"{detail}; {_how(r)}.")
    before, after, oracle = (r.metrics[v] for v in VARIANTS)
    nll = _change("nll", before["nll"], after["nll"])
    acc = _change("accuracy", before["accuracy"], after["accuracy"])
    oracle_nll = f"oracle {_spoken(METRICS.get('nll'), oracle['nll'])}"
    helped = after["nll"] < before["nll"]
    start = f"Adapting to the {which} priors"
    if not helped:
        start += " did not help: it"
    headline = f"{start} {nll} ({oracle_nll}) and {acc}."
    changes = ", ".join(_change_detail(r, m) for m in SCORED)
    level = f" ({100 * r.resampling.level:g}% intervals)" if r.change_ci else ""
    detail = f"Adapted - unadapted{level}: {changes}. The priors moved {_moved(r)}."
    return Verdict(headline, detail)


def priors_table(r: LabelShiftResult) -> Table:
    """Per class: the source's prior, the estimated (or given) one, and the true one."""
    header = ["Class", "Source %", "Given %" if r.given else "Estimated %"]
    if r.true_priors is not None:
        header.append("True %")
    rows = []
    for c in range(r.priors.shape[0]):
        values = [r.source_priors[c], r.priors[c]]
        if r.true_priors is not None:
            values.append(r.true_priors[c])
        rows.append([Cell(str(c)), *(Cell(f"{100 * v:.2f}") for v in values)])
    return Table("Class priors", header, rows)


def scores_table(r: LabelShiftResult) -> Table:
    """The metrics of the unadapted, adapted and oracle posteriors (intervals in brackets);
    the better of unadapted and adapted in bold."""
    infos = [METRICS.get(m) for m in SCORED]
    rows = []
    for v in VARIANTS:
        cells = [Cell(VARIANT_TEXT[v])]
        for info in infos:
            value = r.metrics[v][info.name]
            other = r.metrics["unadapted" if v == "adapted" else "adapted"][info.name]
            best = v != "oracle" and _better(info, value, other)
            cells.append(Cell(_with_ci(info, value, r.ci.get(v, {}).get(info.name)), best=best))
        rows.append(cells)
    return Table("Adapted against unadapted", ["Posteriors", *map(_header, infos)], rows)


def _better(info: MetricInfo, value: float, other: float) -> bool:
    if info.better == "min":
        return value < other
    if info.better == "max":
        return value > other
    return False


def label_shift_document(r: LabelShiftResult, title: str) -> Document:
    """The report: the verdict, how the priors were had, the priors, the scores."""
    how = _how(r)
    body: list[Block] = [Paragraph(how[0].upper() + how[1:] + ".", meta=True)]
    body += [Paragraph(f"Caution: {caveat}.") for caveat in r.caveats]
    body.append(Section("Class priors", [priors_table(r)]))
    if r.metrics:
        notes = [
            "Oracle: the calibrated posteriors adapted to the target's true label frequencies "
            "(what a perfect prior estimate would give)."
        ]
        if r.ci:
            notes.append(
                f"In brackets: {100 * r.resampling.level:g}% bootstrap intervals "
                f"({plural(r.resampling.n_boot, 'resample')} of the target rows, the same for "
                f"all three rows); ECE with {r.binning.n_bins} equal-width bins."
            )
        else:
            bins = r.binning.n_bins
            notes.append(f"ECE with {bins} equal-width bins; no intervals (--n-boot 0).")
        scores: list[Block] = [scores_table(r), *(Paragraph(n) for n in notes)]
        body.append(Section("Adapted against unadapted", scores))
    else:
        body.append(
            Paragraph(
                "The target file has no labels: give them (an .npz with a labels array, or "
                "--target-labels) to score the unadapted, adapted and oracle posteriors."
            )
        )
    body.append(
        Paragraph(
            f"The fitted adapter, adapted to these priors, is `{ADAPTER_FILE}` in the report "
            f"folder: `calibkit apply {ADAPTER_FILE} FILE` adapts new predictions with it."
        )
    )
    return Document(title, body, label_shift_verdict(r))


def label_shift_results(r: LabelShiftResult) -> dict[str, Any]:
    """Every number of the report (fractions) for ``results.json``."""
    return {
        "estimator": r.estimator,
        "params": r.adapter.to_json()["params"],  # the estimator as {"name": ..., ...}
        "n_source": r.n_source,
        "n_target": r.n_target,
        "n_iter": r.n_iter,
        "converged": r.converged,
        "identified": r.identified,
        "caveats": list(r.caveats),
        "source_priors": r.source_priors.tolist(),
        "priors": r.priors.tolist(),
        "true_priors": None if r.true_priors is None else r.true_priors.tolist(),
        "metrics": r.metrics,
        "intervals": {v: {m: list(ci) for m, ci in d.items()} for v, d in r.ci.items()},
        "change_intervals": {m: list(ci) for m, ci in r.change_ci.items()},
        "level": r.resampling.level,
        "n_bins": r.binning.n_bins,
        "n_boot": r.resampling.n_boot,
    }


def label_shift_report(
    r: LabelShiftResult,
    *,
    title: str = "Label shift",
    inputs: Mapping[str, str] | None = None,
    options: Mapping[str, Any] | None = None,
) -> Report:
    """The whole report: document, numbers, terminal tables, and the fitted adapter."""
    doc = label_shift_document(r, title)
    tables = [priors_table(r), *([scores_table(r)] if r.metrics else [])]
    return Report(
        "labelshift",
        doc,
        label_shift_results(r),
        text="\n\n".join(
            [*(table_text(t) for t in tables), *(f"caution: {caveat}" for caveat in r.caveats)]
        ),
        inputs=dict(inputs or {}),
        options=dict(options or {}),
        files={ADAPTER_FILE: json.dumps(r.adapter.to_json(), indent=1, allow_nan=False)},
    )


__all__ = [
    "ADAPTER_FILE",
    "label_shift_document",
    "label_shift_report",
    "label_shift_results",
    "label_shift_verdict",
    "priors_table",
    "scores_table",
]
