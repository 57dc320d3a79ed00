"""Label shift judged on data: priors estimated on a target, adapted against unadapted.

:func:`label_shift` fits a :class:`~calibkit.calibrators.priors.label_shift.PriorShiftAdapter`
on labelled source rows, estimates the target priors from the target's logits and, when
the target has labels, scores the unadapted (calibrated) posteriors, the adapted ones and
the oracle's (adapted with the target's true label frequencies): NLL, accuracy, ECE.
``calibkit labelshift`` prints and writes it. :func:`resample_to_priors` and
:func:`simulate_label_shift` make label shift from one labelled file (the test part
resampled to Dirichlet-drawn priors), as the tests and the README's numbers do.

>>> from calibkit.core.outputs import as_outputs
>>> rng = np.random.default_rng(0)
>>> y = rng.integers(0, 3, 3000)
>>> z = rng.normal(size=(3000, 3)) + 2.0 * np.eye(3)[y]
>>> src = as_outputs(y[:1500], logits=z[:1500])
>>> rows = resample_to_priors(y[1500:], np.array([0.7, 0.2, 0.1]), 1500, rng) + 1500
>>> r = label_shift(src, z[rows], y[rows], method="em", calibrator="bcts")
>>> bool(np.abs(r.priors - [0.7, 0.2, 0.1]).max() < 0.05)
True
>>> r.metrics["adapted"]["nll"] < r.metrics["unadapted"]["nll"]
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from calibkit.calibrators.priors.label_shift import PriorShiftAdapter, adapt_priors, check_priors
from calibkit.core.errors import InputError
from calibkit.core.outputs import ClassifierOutputs
from calibkit.metrics.binned import ece
from calibkit.metrics.scores import accuracy, nll

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
#: The posteriors scored when the target has labels, in table order.
VARIANTS = ("unadapted", "adapted", "oracle")
#: The metrics scored, in table order.
METRICS = ("nll", "accuracy", "ece")


def score(probs: F64, labels: I64) -> dict[str, float]:
    """NLL, accuracy and ECE (15 equal-width bins) of ``probs``."""
    return {
        "nll": nll(labels, probs),
        "accuracy": accuracy(labels, probs),
        "ece": ece(labels, probs, n_bins=15),
    }


@dataclass(frozen=True)
class LabelShiftResult:
    """The fitted adapter, its prior estimate, and (with target labels) the scores."""

    adapter: PriorShiftAdapter
    source_priors: F64
    priors: F64
    n_iter: int
    true_priors: F64 | None
    metrics: dict[str, dict[str, float]]


def label_shift(
    source: ClassifierOutputs,
    target_logits: object,
    target_labels: object = None,
    *,
    method: str = "em",
    calibrator: str | None = "bcts",
    priors: object = None,
) -> LabelShiftResult:
    """Fit on ``source``, estimate the target priors (or take ``priors``), score with labels.

    A target label of a class the source never shows is refused (no prior to reweight).
    """
    adapter = PriorShiftAdapter(method=method, calibrator=calibrator)
    k = source.n_classes
    z = np.asarray(target_logits, dtype=np.float64)
    if z.ndim != 2 or z.shape[1] != k:
        raise InputError("target", f"scores of {k} classes, as the source's", f"shape {z.shape}")
    y = None if target_labels is None else np.asarray(target_labels, dtype=np.int64)
    counts = np.bincount(source.labels, minlength=k)
    if y is not None:
        outside = np.setdiff1d(np.unique(y), np.flatnonzero(counts))
        if outside.size:
            raise InputError(
                "target labels",
                "classes the source has rows of",
                f"class {int(outside[0])}, which the source never shows",
            )
    adapter.fit(source.as_logits(), source.labels)
    if priors is not None:
        adapter.set_target_priors(check_priors(priors, "priors", k))
    else:
        adapter.adapt(z)
    metrics: dict[str, dict[str, float]] = {}
    true = None
    if y is not None:
        true = np.bincount(y, minlength=k) / float(y.shape[0])
        unadapted = adapter.source_proba(z)
        metrics["unadapted"] = score(unadapted, y)
        metrics["adapted"] = score(adapter.predict_proba(z), y)
        metrics["oracle"] = score(adapt_priors(unadapted, adapter.source_priors_, true), y)
    return LabelShiftResult(
        adapter, adapter.source_priors_, adapter.target_priors_, adapter.n_iter_, true, metrics
    )


# ----- simulated label shift ----------------------------------------------------------------
def resample_to_priors(labels: I64, priors: F64, n: int, rng: np.random.Generator) -> I64:
    """Row indices of ``labels`` drawn with replacement so that ``n`` rows follow ``priors``
    (class counts multinomial; a class without rows must have prior 0)."""
    counts = rng.multinomial(n, priors)
    parts = []
    for c in np.flatnonzero(counts):
        pool = np.flatnonzero(labels == c)
        if pool.size == 0:
            raise InputError("priors", "0 for a class without rows", f"{priors[c]:g} for {c}")
        parts.append(rng.choice(pool, size=int(counts[c]), replace=True))
    return np.concatenate(parts).astype(np.int64)


def simulate_label_shift(
    cal: ClassifierOutputs,
    test: ClassifierOutputs,
    *,
    n_shifts: int = 20,
    concentration: float = 1.0,
    n_rows: int = 2000,
    calibrator: str | None = "bcts",
    seed: int = 0,
) -> list[dict[str, Any]]:
    """One row per shift: the test part resampled to priors drawn from a symmetric
    Dirichlet(``concentration``); EM and BBSE adapters fitted on ``cal``.

    Each row has the true priors, EM's and BBSE's estimates with their mean squared
    error against the resample's label frequencies, and the NLL and accuracy of the
    unadapted, EM-adapted, BBSE-adapted and oracle posteriors.
    """
    rng = np.random.default_rng(seed)
    z_cal, z_test = cal.as_logits(), test.as_logits()
    em = PriorShiftAdapter("em", calibrator).fit(z_cal, cal.labels)
    bbse = PriorShiftAdapter("bbse", calibrator).fit(z_cal, cal.labels)
    k = cal.n_classes
    rows = []
    for _ in range(n_shifts):
        pi = rng.dirichlet(np.full(k, concentration))
        idx = resample_to_priors(test.labels, pi, n_rows, rng)
        z, y = z_test[idx], test.labels[idx]
        true = np.bincount(y, minlength=k) / float(n_rows)
        base = em.source_proba(z)
        probs = {
            "unadapted": base,
            "em": em.adapt(z).predict_proba(z),
            "bbse": bbse.adapt(z).predict_proba(z),
            "oracle": adapt_priors(base, em.source_priors_, true),
        }
        rows.append(
            {
                "true_priors": true,
                "em_priors": em.target_priors_,
                "bbse_priors": bbse.target_priors_,
                "em_mse": float(np.mean((em.target_priors_ - true) ** 2)),
                "bbse_mse": float(np.mean((bbse.target_priors_ - true) ** 2)),
                **{f"{v}_nll": nll(y, p) for v, p in probs.items()},
                **{f"{v}_accuracy": accuracy(y, p) for v, p in probs.items()},
            }
        )
    return rows


# ----- text ---------------------------------------------------------------------------------
def _priors_rows(r: LabelShiftResult, names: Sequence[str] | None) -> list[list[str]]:
    rows = []
    for c in range(r.priors.shape[0]):
        name = names[c] if names is not None else str(c)
        cells = [name, f"{r.source_priors[c]:.4f}", f"{r.priors[c]:.4f}"]
        if r.true_priors is not None:
            cells.append(f"{r.true_priors[c]:.4f}")
        rows.append(cells)
    return rows


def _headers(r: LabelShiftResult) -> list[str]:
    return ["class", "source", "estimated", *(["true"] if r.true_priors is not None else [])]


def _metric_rows(r: LabelShiftResult) -> list[list[str]]:
    return [
        [
            v,
            f"{r.metrics[v]['nll']:.4f}",
            f"{100 * r.metrics[v]['accuracy']:.2f}",
            f"{100 * r.metrics[v]['ece']:.2f}",
        ]
        for v in VARIANTS
    ]


METRIC_HEADERS = ["posteriors", "NLL", "accuracy %", "ECE %"]


def _plain(cells: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells
    )


def format_label_shift(r: LabelShiftResult) -> str:
    """The priors table, then (with target labels) the scores table, as plain text."""
    text = _plain([_headers(r), *_priors_rows(r, None)])
    if r.metrics:
        text += "\n\n" + _plain([METRIC_HEADERS, *_metric_rows(r)])
    return text


def _how(r: LabelShiftResult) -> str:
    a = r.adapter
    how = f"method {a.method}, calibrator {a.calibrator or 'none'}"
    return how + (f", {r.n_iter} EM iterations" if a.method == "em" and r.n_iter else "")


def label_shift_markdown(r: LabelShiftResult, *, title: str, source: str) -> str:
    """The report as Markdown."""

    def table(headers: list[str], rows: list[list[str]]) -> list[str]:
        return [
            "| " + " | ".join(headers) + " |",
            "|" + "---|" * len(headers),
            *("| " + " | ".join(row) + " |" for row in rows),
        ]

    lines = [f"# {title}", "", f"Data: {source}. {_how(r)}.", "", "## Class priors", ""]
    lines += table(_headers(r), _priors_rows(r, None))
    if r.metrics:
        lines += ["", "## Adapted against unadapted", ""]
        lines += table(METRIC_HEADERS, _metric_rows(r))
        lines += [
            "",
            "Oracle: the calibrated posteriors adapted to the target's true label frequencies.",
        ]
    return "\n".join(lines) + "\n"


def label_shift_json(r: LabelShiftResult, *, source: str) -> dict[str, Any]:
    """The report's numbers as a JSON-ready dict."""
    return {
        "source": source,
        "params": r.adapter.get_params(),
        "source_priors": r.source_priors.tolist(),
        "priors": r.priors.tolist(),
        "n_iter": r.n_iter,
        "true_priors": None if r.true_priors is None else r.true_priors.tolist(),
        "metrics": r.metrics,
    }
