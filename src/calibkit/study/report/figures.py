"""Figures of a study: training curves and confusion matrices.

Reliability diagrams and the ECE-versus-temperature curve come from
:mod:`calibkit.reporting.figures` (the same code as every other report). Here: per-epoch
curves averaged over seeds (with the min-max band), and a confusion matrix of counts summed
over seeds, row-normalised.

>>> hist = [[{"epoch": 1.0, "train_loss": 0.7, "test_nll": 0.6, "train_accuracy": 0.5,
...           "test_accuracy": 0.6, "test_ece": 0.1, "test_optimal_ece": 0.05}]]
>>> fig = training_curves_figure(hist, title="m")
>>> len(fig.axes)
3
>>> confusion_figure(np.array([[3, 1], [0, 4]]), ("a", "b"), title="m").axes[0].get_title()
'm'
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator, PercentFormatter

from calibkit.core.errors import InputError
from calibkit.reporting.figure_style import PercentTicks, new_figure, plain

_COLOURS = {"train": "#3366a8", "cal": "#7b5ea7", "test": "#d1495b", "optimal": "#2a9d8f"}
#: Up to this many epochs, each epoch is a marked point and a tick of its own.
FEW_EPOCHS = 12


def _series(histories: Sequence[Sequence[dict[str, float]]], key: str) -> npt.NDArray[np.float64]:
    """``(n_seeds, n_epochs)`` values of ``key`` (shortest history wins)."""
    n = min(len(h) for h in histories)
    return np.array([[float(r.get(key, np.nan)) for r in h[:n]] for h in histories])


def training_curves_figure(
    histories: Sequence[Sequence[dict[str, float]]], *, title: str, split: str = "test"
) -> Figure:
    """Loss/NLL, accuracy, and ECE with optimal ECE per epoch, mean over seeds (band: range)."""
    if not histories or not all(histories):
        raise InputError("histories", "at least one non-empty history", "none")
    epochs = _series(histories, "epoch")[0]
    fig = new_figure(12.0, 3.6)
    panels = fig.subplots(1, 3)
    spec = (
        (
            panels[0],
            (("train_loss", "train loss", "train"), (f"{split}_nll", f"{split} NLL", "test")),
            "Loss",
            False,
        ),
        (
            panels[1],
            (("train_accuracy", "train", "train"), (f"{split}_accuracy", split, "test")),
            "Accuracy",
            True,
        ),
        (
            panels[2],
            (
                (f"{split}_ece", f"{split} ECE", "test"),
                (f"{split}_optimal_ece", f"{split} ECE at the best T", "optimal"),
            ),
            "ECE",
            True,
        ),
    )
    for ax, lines, ylabel, percent in spec:
        for key, label, colour in lines:
            values = _series(histories, key)
            if not np.isfinite(values).any():
                continue
            mean = np.nanmean(values, axis=0)
            few = epochs.size <= FEW_EPOCHS  # a point per epoch shows, even for one epoch
            ax.plot(
                epochs, mean, color=_COLOURS[colour], linewidth=1.8, label=label,
                marker="o" if few else None, markersize=4,
            )  # fmt: skip
            if values.shape[0] > 1:
                lo, hi = np.nanmin(values, axis=0), np.nanmax(values, axis=0)
                ax.fill_between(epochs, lo, hi, color=_COLOURS[colour], alpha=0.18, linewidth=0)
        ax.set_xlabel("Epoch")
        if epochs.size <= FEW_EPOCHS:
            ax.set_xticks(epochs, [f"{e:g}" for e in epochs])
            ax.set_xlim(epochs[0] - 0.5, epochs[-1] + 0.5)
        else:
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel(ylabel)
        if percent:  # as many decimals as the ticks need, so each reads exactly
            ax.yaxis.set_major_formatter(PercentTicks())
        ax.legend(fontsize=8, frameon=False)
        ax.grid(alpha=0.3)
    n = len(histories)
    fig.suptitle(plain(f"{title}: mean over {n} seed{'s' if n > 1 else ''} (band: min-max)"))
    return fig


def confusion_counts(
    labels: npt.ArrayLike, predictions: npt.ArrayLike, n_classes: int
) -> npt.NDArray[np.int64]:
    """``(K, K)`` counts: row = true class, column = predicted class."""
    y = np.asarray(labels, dtype=np.int64)
    p = np.asarray(predictions, dtype=np.int64)
    counts = np.bincount(y * n_classes + p, minlength=n_classes * n_classes)
    return counts.reshape(n_classes, n_classes).astype(np.int64)


def confusion_figure(counts: npt.ArrayLike, classes: Sequence[str], *, title: str) -> Figure:
    """Row-normalised confusion matrix with the counts written in each cell."""
    c = np.asarray(counts, dtype=np.int64)
    k = len(classes)
    if c.shape != (k, k):
        raise InputError("counts", f"a ({k}, {k}) matrix", str(c.shape))
    rates = c / np.maximum(c.sum(axis=1, keepdims=True), 1)
    size = min(3.2 + 0.45 * k, 12.0)
    fig = new_figure(size, size * 0.88)
    ax = fig.subplots()
    image = ax.imshow(rates, cmap="Blues", vmin=0.0, vmax=1.0)
    if k <= 20:
        for i in range(k):
            for j in range(k):
                colour = "white" if rates[i, j] > 0.6 else "#222222"
                ax.text(
                    j,
                    i,
                    f"{rates[i, j]:.0%}\n{c[i, j]:,}",
                    ha="center",
                    va="center",
                    fontsize=7,
                    color=colour,
                )
        ax.set_xticks(range(k), [plain(n) for n in classes], rotation=45, ha="right", fontsize=8)
        ax.set_yticks(range(k), [plain(n) for n in classes], fontsize=8)
    ax.set_xlabel("Predicted class")
    ax.set_ylabel("True class")
    ax.set_title(plain(title), fontsize=10)
    fig.colorbar(image, ax=ax, format=PercentFormatter(1.0, decimals=0), shrink=0.8)
    return fig
