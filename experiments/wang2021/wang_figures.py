"""The figures of Wang, Feng & Zhang (NeurIPS 2021) that the loss study's report lacks.

- their Figure 1(d): the best loss coefficient against the training-set size (one study
  per size), :func:`best_coefficient_figure`;
- their Figure 2: reliability diagrams before and after temperature scaling,
  :func:`reliability_after_ts_figure`;
- their Figure 4 with the label-smoothing sweep: the study report's
  :func:`~experiments.wang2021.loss_figures.optimal_ece_per_epoch_figure` on every smoothing
  coefficient;
- their Figure 6(a): the per-epoch loss curves of inverse focal loss beside CE,
  :func:`loss_curves_figure`.

The inputs are a study's records (:class:`~calibkit.study.store.record.RunRecord`: per-epoch
history, result rows, run folder); ECE axes are in percent and every plotted value is the
input's value.

>>> fig = best_coefficient_figure({500: {0.0: {"none": np.array([0.2]), "temperature_ece":
...     np.array([0.03])}, 0.05: {"none": np.array([0.1]), "temperature_ece": np.array([0.04])}}})
>>> [line.get_ydata().tolist() for line in fig.axes[0].lines]
[[0.05], [0.0]]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt
from matplotlib.figure import Figure
from matplotlib.ticker import PercentFormatter

from calibkit.core.binning import BinStats
from calibkit.core.errors import InputError
from calibkit.core.outputs import log_softmax64
from calibkit.metrics import ece, reliability_stats
from calibkit.reporting.figure_style import new_figure, style_axes, wrapped
from calibkit.reporting.figures import reliability_grid
from calibkit.study.store.record import RunRecord
from experiments.wang2021.analysis import CALIBRATOR_NAMES

F64 = npt.NDArray[np.float64]
#: ``size -> coefficient -> calibrator -> ECE per seed``.
SizeTable = Mapping[int, Mapping[float, Mapping[str, F64]]]
_COLOURS = ("#3366a8", "#d1495b", "#2a9d8f", "#e9a03b", "#7b5ea7", "#3d5a80")


def ece_by_coefficient(
    records: Sequence[RunRecord], coefficients: Mapping[str, float]
) -> dict[float, dict[str, F64]]:
    """``coefficient -> calibrator -> test ECE per seed`` of the labels in ``coefficients``."""
    table: dict[float, dict[str, list[float]]] = {}
    for rec in sorted(records, key=lambda r: r.seed):
        if rec.model not in coefficients:
            continue
        per = table.setdefault(coefficients[rec.model], {})
        for row in rec.rows:
            per.setdefault(row["calibrator"], []).append(float(row["ece"]))
    return {c: {k: np.asarray(v) for k, v in per.items()} for c, per in sorted(table.items())}


def best_coefficients(table: SizeTable, calibrator: str) -> dict[int, float]:
    """Per training-set size, the coefficient of the lowest mean ECE after ``calibrator``."""
    best = {}
    for size, per in sorted(table.items()):
        means = {c: float(v[calibrator].mean()) for c, v in per.items() if calibrator in v}
        if means:
            best[size] = min(means, key=means.__getitem__)
    return best


def best_coefficient_figure(
    table: SizeTable,
    calibrators: Sequence[str] = ("none", "temperature_ece"),
    *,
    title: str = "Best label-smoothing coefficient against the training-set size",
) -> Figure:
    """Left: the best coefficient per size, one line per calibrator. Right: mean ECE after
    the last of ``calibrators`` against the coefficient, one line per size (± std)."""
    if not table:
        raise InputError("table", "at least one training-set size", "none")
    fig = new_figure(10.0, 4.0)
    left, right = fig.subplots(1, 2)
    for i, cal in enumerate(calibrators):
        best = best_coefficients(table, cal)
        name = CALIBRATOR_NAMES.get(cal, cal)
        left.plot(
            list(best),
            list(best.values()),
            marker="o",
            color=_COLOURS[i],
            label=f"lowest ECE {name}" if cal != "none" else "lowest raw ECE",
        )
    left.set_xscale("log")
    left.set_xlabel("training images")
    left.set_ylabel("best coefficient (lowest mean ECE over seeds)")
    left.legend(fontsize=8, frameon=False)
    cal = calibrators[-1]
    for i, (size, per) in enumerate(sorted(table.items())):
        coefs = [c for c in per if cal in per[c]]
        values = [per[c][cal] for c in coefs]
        mean = np.array([v.mean() for v in values])
        std = np.array([v.std(ddof=1) if v.size > 1 else 0.0 for v in values])
        colour = _COLOURS[(i + len(calibrators)) % len(_COLOURS)]
        right.errorbar(
            coefs,
            mean,
            yerr=std,
            color=colour,
            marker="o",
            markersize=4,
            capsize=3,
            label=f"{size:,} training images",
        )
    right.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=1))
    right.set_xlabel("label-smoothing coefficient (0: CE)")
    after = "" if cal == "none" else f"after {CALIBRATOR_NAMES.get(cal, cal)} "
    right.set_ylabel(f"test ECE {after}(mean ± std)")
    right.legend(fontsize=8, frameon=False)
    for ax in (left, right):
        style_axes(ax)
    fig.suptitle(wrapped(title, 9.8, 12), fontsize=12)
    return fig


def _per_epoch(histories: Sequence[Sequence[Mapping[str, float]]], key: str) -> tuple[F64, F64]:
    """Epochs and ``(n_seeds, n_epochs)`` values of ``key`` (the shortest history wins)."""
    n = min(len(h) for h in histories)
    if not histories or n == 0:
        raise InputError("histories", "at least one non-empty history", "none")
    values = np.array([[float(r[key]) for r in h[:n]] for h in histories])
    return np.arange(1.0, n + 1.0), values


def _probs(logits: F64, temperature: float = 1.0) -> F64:
    return np.exp(log_softmax64(np.asarray(logits, dtype=np.float64) / temperature))


def reliability_after_ts_figure(
    records: Sequence[RunRecord],
    labels: Mapping[str, str],
    *,
    calibrator: str = "temperature_ece",
    seed: int = 0,
    title: str,
) -> Figure:
    """Reliability diagrams on the test part of each label's run ``seed``: before TS (top
    row) and after the ``calibrator`` row's temperature (bottom row). ``labels`` maps a
    model label to its display name."""
    by_key = {(r.model, r.seed): r for r in records}
    before: list[tuple[str, BinStats, float]] = []
    after: list[tuple[str, BinStats, float]] = []
    for label, name in labels.items():
        rec = by_key.get((label, seed))
        if rec is None:
            raise InputError("labels", f"labels with a finished run of seed {seed}", repr(label))
        z = rec.folder.logits()
        y = z["test_labels"]
        t = next(float(r["temperature"]) for r in rec.rows if r["calibrator"] == calibrator)
        for panels, temp, what in (
            (before, 1.0, "raw"),
            (after, t, f"TS, T = {t:.2f}"),
        ):
            p = _probs(z["test_logits"], temp)
            panels.append(
                (f"{name}: {what}", reliability_stats(y, p, n_bins=15), ece(y, p, n_bins=15))
            )
    return reliability_grid(before + after, ncols=len(labels), title=title)


def loss_curves_figure(
    histories_by_label: Mapping[str, Sequence[Sequence[Mapping[str, float]]]],
    names: Mapping[str, str],
    *,
    title: str,
) -> Figure:
    """Per-epoch training loss (each label's own objective), test NLL and test accuracy:
    mean over seeds, band min-max. ``names`` maps each label to plot to its legend name."""
    keys = (
        ("train_loss", "training loss (the model's own objective)"),
        ("test_nll", "test NLL (no post-hoc)"),
        ("test_accuracy", "test accuracy"),
    )
    fig = new_figure(12.0, 3.8)
    panels = fig.subplots(1, len(keys))
    for ax, (key, panel_title) in zip(panels, keys, strict=True):
        for i, (label, name) in enumerate(names.items()):
            epochs, values = _per_epoch(histories_by_label[label], key)
            colour = _COLOURS[i % len(_COLOURS)]
            ax.plot(epochs, values.mean(axis=0), color=colour, linewidth=1.6, label=name)
            if values.shape[0] > 1:
                ax.fill_between(
                    epochs,
                    values.min(axis=0),
                    values.max(axis=0),
                    color=colour,
                    alpha=0.15,
                    linewidth=0,
                )
        ax.set_title(panel_title, fontsize=10)
        ax.set_xlabel("epoch")
        style_axes(ax)
    panels[-1].yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    panels[0].legend(fontsize=8, frameon=False)
    fig.suptitle(wrapped(title, 11.8, 12), fontsize=12)
    return fig
