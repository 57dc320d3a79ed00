"""Conformal prediction sets judged on held-out data: fit on one part, measure on another.

:func:`conformal_sets` fits a :class:`~calibkit.calibrators.sets.conformal.ConformalClassifier`
per score on the calibration part and measures its sets on the test part
(:func:`~calibkit.metrics.conformal.set_metrics`); :func:`format_sets_table` and
:func:`sets_markdown` say it as text; ``calibkit conformal`` writes both.

>>> from calibkit.core.outputs import as_outputs
>>> rng = np.random.default_rng(0)
>>> z = rng.normal(size=(600, 3)) * 3
>>> y = np.array([rng.choice(3, p=np.exp(r) / np.exp(r).sum()) for r in z])
>>> cal, test = as_outputs(y[:300], logits=z[:300]), as_outputs(y[300:], logits=z[300:])
>>> rows = conformal_sets(cal, test, ["lac"], alpha=0.2, n_boot=0)
>>> rows[0].score, 0.7 < rows[0].metrics.values["coverage"] < 0.9
('lac', True)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from calibkit.calibrators.sets.conformal import ConformalClassifier
from calibkit.core.outputs import ClassifierOutputs
from calibkit.metrics.conformal import SET_METRICS, SetMetrics, set_metrics

__all__ = ["SetsResult", "conformal_sets", "format_sets_table", "sets_json", "sets_markdown"]


@dataclass(frozen=True)
class SetsResult:
    """One score's sets on the test part: the fitted classifier and its metrics."""

    score: str
    model: ConformalClassifier
    metrics: SetMetrics


def conformal_sets(
    cal: ClassifierOutputs,
    test: ClassifierOutputs,
    scores: Sequence[str],
    *,
    alpha: float,
    calibrator: str | None = None,
    mondrian: bool = False,
    randomized: bool = False,
    n_boot: int = 1000,
    seed: int = 0,
) -> list[SetsResult]:
    """Every score in ``scores`` fitted on ``cal`` and measured on ``test``.

    Each classifier is built (parameters checked) before any is fitted, so a bad one
    refuses before work starts; ``randomized`` applies to the scores that have a
    randomised variant (LAC has none).
    """
    models = [
        ConformalClassifier(
            score=s,
            alpha=alpha,
            calibrator=calibrator,
            mondrian=mondrian,
            randomized=randomized and s != "lac",
            seed=seed,
        )
        for s in scores
    ]
    z_cal, z_test = cal.as_logits(), test.as_logits()
    for m in models:
        m.fit(z_cal, cal.labels)
    return [
        SetsResult(
            m.score,
            m,
            set_metrics(m.predict_set(z_test), test.labels, alpha, n_boot=n_boot, seed=seed),
        )
        for m in models
    ]


def _cell(r: SetsResult, name: str, pct: bool) -> str:
    value, (low, high) = r.metrics.values[name], r.metrics.ci[name]
    f = (lambda x: f"{100 * x:.1f}") if pct else (lambda x: f"{x:.2f}")
    return f(value) if np.isnan(low) else f"{f(value)} [{f(low)}, {f(high)}]"


HEADERS = ("score", "coverage %", "mean size", "median size", "class gap %")


def table_rows(rows: Sequence[SetsResult]) -> list[list[str]]:
    """The table's cells (95% intervals in brackets)."""
    pct = {"coverage": True, "mean_size": False, "median_size": False, "class_coverage_gap": True}
    return [[r.score, *(_cell(r, m, pct[m]) for m in SET_METRICS)] for r in rows]


def format_sets_table(rows: Sequence[SetsResult]) -> str:
    """A plain-text table, one row per score."""
    cells = [list(HEADERS), *table_rows(rows)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(HEADERS))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in cells
    )


def sets_markdown(rows: Sequence[SetsResult], *, title: str, source: str) -> str:
    """The report as Markdown: the table, then each score's coverage by set size."""
    m = rows[0].model
    lines = [
        f"# {title}",
        "",
        f"Data: {source}. alpha = {m.alpha:g} (target coverage {100 * (1 - m.alpha):.1f}%), "
        f"calibrator {m.calibrator or 'none'}, {'Mondrian (per class)' if m.mondrian else 'split'}"
        f" conformal, {m.n_calibration_:,} rows for the quantile"
        f"{', randomised' if m.randomized else ''}. Intervals: 95% bootstrap of the test part.",
        "",
        "| " + " | ".join(HEADERS) + " |",
        "|" + "---|" * len(HEADERS),
        *("| " + " | ".join(r) + " |" for r in table_rows(rows)),
        "",
        "Class gap: target coverage minus the worst class's coverage (positive: under-covered).",
    ]
    for r in rows:
        lines += ["", f"## {r.score}: coverage by set size", "", "| size | rows | coverage % |"]
        lines += ["|---|---|---|"]
        lines += [
            f"| {s} | {n:,} | {100 * c:.1f} |" for s, (c, n) in r.metrics.size_coverage.items()
        ]
    return "\n".join(lines) + "\n"


def sets_json(rows: Sequence[SetsResult], *, source: str) -> dict[str, Any]:
    """The report's numbers as a JSON-ready dict (NaN intervals as None)."""

    def num(x: float) -> float | None:
        return None if np.isnan(x) else x

    return {
        "source": source,
        "results": [
            {
                "score": r.score,
                "params": {k: v for k, v in r.model.get_params().items() if not k.startswith("_")},
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
