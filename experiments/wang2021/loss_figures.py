"""Figures of the training-loss study (after Wang, Feng & Zhang, NeurIPS 2021).

Plain :class:`matplotlib.figure.Figure` objects with an Agg canvas (pyplot is never
touched); ECE axes are in percent. Every plotted value is the input's value, so tests
(and readers) can take the numbers back from the artists.

>>> curve = {"histogram": np.array([[0.1, 0.02], [0.05, 0.01]])}
>>> fig = calibration_size_figure([50, 100], {"CE": curve}, title="sizes")
>>> fig.axes[0].lines[0].get_ydata().tolist(), fig.axes[0].lines[0].get_label()
([0.1, 0.05], 'CE')
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import numpy.typing as npt
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from matplotlib.ticker import PercentFormatter

from calibkit.core.errors import InputError
from calibkit.reporting.figure_style import new_figure, plain, style_axes
from calibkit.reporting.figures import bin_bars
from experiments.wang2021.analysis import (
    CALIBRATOR_NAMES,
    CE,
    METHOD_NAMES,
    Methods,
    Row,
    RowIndex,
)

F64 = npt.NDArray[np.float64]
History = Sequence[Mapping[str, float]]
_COLOURS = ("#3366a8", "#d1495b", "#2a9d8f", "#e9a03b", "#7b5ea7", "#3d5a80", "#8d6e63")
NEVER_COLOUR = "#9e9e9e"


def _style(ax: Axes, *, percent: bool = True) -> None:
    if percent:
        ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=1))
    style_axes(ax)


def ece_vs_coefficient_figure(
    rows: Iterable[Row],
    methods: Methods,
    calibrators: Sequence[str] = ("temperature_ece", "histogram"),
) -> Figure:
    """Mean ECE (error bars: std over seeds) against the coefficient, one panel per method.

    One line per calibrator (``"none"`` first), labelled with its short name (``"no
    post-hoc"``, ``"TS"``, ``"HB"``); CE's mean for the same calibrator is a dashed
    horizontal line labelled ``"CE, <name>"``. A coefficient axis spanning more than a
    factor of 20 is logarithmic.
    """
    index = RowIndex(rows, methods)
    ce = index.require_ce()
    panels = [(m, pairs) for m, pairs in index.by_method.items() if m != CE]
    if not panels:
        raise InputError("methods", "at least one method besides cross-entropy", "none")
    fig = new_figure(3.4 * len(panels), 3.4)
    axes = np.atleast_1d(fig.subplots(1, len(panels), sharey=True, squeeze=False)).reshape(-1)
    for ax, (method, pairs) in zip(axes, panels, strict=True):
        for i, cal in enumerate(("none", *calibrators)):
            colour = _COLOURS[i % len(_COLOURS)]
            name = CALIBRATOR_NAMES.get(cal, cal)
            points = [(c, index.values(lb, cal)) for c, lb in pairs if index.values(lb, cal).size]
            if points:
                x = np.array([c for c, _ in points])
                mean = np.array([v.mean() for _, v in points])
                std = np.array([v.std(ddof=1) if v.size > 1 else 0.0 for _, v in points])
                ax.plot(x, mean, color=colour, marker="o", markersize=4, label=name)
                ax.errorbar(x, mean, yerr=std, fmt="none", ecolor=colour, capsize=3)
            ref = index.values(ce, cal)
            if ref.size:
                ax.axhline(
                    float(ref.mean()),
                    color=colour,
                    linestyle="--",
                    linewidth=1.0,
                    label=f"CE, {name}",
                )
        coefs = np.array([c for c, _ in pairs])
        if coefs.min() > 0 and coefs.max() / coefs.min() > 20:
            ax.set_xscale("log")
        ax.set_title(plain(METHOD_NAMES.get(method, method)), fontsize=10)
        ax.set_xlabel("Coefficient")
        _style(ax)
    axes[0].set_ylabel("ECE (mean ± std over seeds)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=6, fontsize=8, frameon=False)
    fig.suptitle(f"ECE against the loss coefficient, {index.n_seeds()} seeds (dashed: CE)")
    return fig


def _series(histories: Sequence[History], key: str) -> tuple[F64, F64]:
    """Epochs and ``(n_seeds, n_epochs)`` values of ``key`` (shortest history wins)."""
    if not histories or not all(histories):
        raise InputError("histories", "at least one non-empty history per label", "none")
    n = min(len(h) for h in histories)
    epochs = np.array([float(r.get("epoch", i + 1)) for i, r in enumerate(histories[0][:n])])
    values = np.array([[float(r.get(key, np.nan)) for r in h[:n]] for h in histories])
    return epochs, values


def optimal_ece_per_epoch_figure(
    histories_by_label: Mapping[str, Sequence[History]],
    labels: Sequence[str],
    *,
    names: Mapping[str, str] | None = None,
    title: str = "ECE per epoch",
) -> Figure:
    """Test ECE at the best temperature (left) and raw test ECE (right) per epoch.

    One line per label in ``labels`` (legend: ``names[label]`` or the label): the mean over
    its seeds' histories, with the min-max band. The optimal ECE is the ECE at the
    temperature searched on the test part at that epoch (``test_optimal_ece``).
    """
    missing = [lb for lb in labels if lb not in histories_by_label]
    if not labels or missing:
        raise InputError("labels", "labels of histories_by_label", repr(missing or labels))
    fig = new_figure(10.0, 3.8)
    panels = fig.subplots(1, 2, sharey=True)
    keys = (("test_optimal_ece", "Test ECE at the best temperature"), ("test_ece", "Test ECE"))
    for ax, (key, panel_title) in zip(panels, keys, strict=True):
        for i, label in enumerate(labels):
            epochs, values = _series(histories_by_label[label], key)
            colour = _COLOURS[i % len(_COLOURS)]
            shown = plain((names or {}).get(label, label))
            ax.plot(epochs, np.nanmean(values, axis=0), color=colour, linewidth=1.6, label=shown)
            if values.shape[0] > 1:
                lo, hi = np.nanmin(values, axis=0), np.nanmax(values, axis=0)
                ax.fill_between(epochs, lo, hi, color=colour, alpha=0.15, linewidth=0)
        ax.set_title(panel_title, fontsize=10)
        ax.set_xlabel("Epoch")
        _style(ax)
    panels[0].set_ylabel("ECE (mean over seeds, band: min-max)")
    panels[0].legend(fontsize=8, frameon=False)
    fig.suptitle(plain(title))
    return fig


def epoch_bands(n_epochs: int, max_bands: int = 6) -> list[tuple[int, int]]:
    """Epoch ranges doubling in width (1, 2-3, 4-7, ...), the last one open to ``n_epochs``.

    >>> epoch_bands(10)
    [(1, 1), (2, 3), (4, 7), (8, 10)]
    >>> epoch_bands(200)[-1]
    (32, 200)
    """
    if n_epochs < 1:
        raise InputError("n_epochs", "at least 1", repr(n_epochs))
    bands: list[tuple[int, int]] = []
    start = 1
    while start <= n_epochs:
        last = len(bands) == max_bands - 1
        bands.append((start, n_epochs if last else min(2 * start - 1, n_epochs)))
        start = bands[-1][1] + 1
    return bands


def _band_label(lo: int, hi: int) -> str:
    return f"epoch {lo}" if lo == hi else f"epochs {lo}-{hi}"


def max_logit_by_learned_epoch_figure(
    max_logits: npt.ArrayLike,
    learned_epoch: npt.ArrayLike,
    n_epochs: int,
    *,
    title: str,
    n_bins: int = 40,
) -> Figure:
    """Histogram of the training samples' maximum logit, stacked by the epoch learned.

    ``learned_epoch`` holds 1..n_epochs, or 0 for a sample never learned (grey, on top).
    Epochs are grouped by :func:`epoch_bands`; one bar container per non-empty group,
    labelled ``"epoch 1"``, ``"epochs 2-3"``, ..., ``"never learned"``, whose bar heights
    are that group's counts in ``n_bins`` equal-width bins over the range of the logits.
    """
    z = np.asarray(max_logits, dtype=np.float64)
    e = np.asarray(learned_epoch)
    if z.ndim != 1 or z.shape != e.shape or z.size == 0 or not np.isfinite(z).all():
        raise InputError("max_logits", "finite 1-D values, one per learned_epoch", str(z.shape))
    if not np.issubdtype(e.dtype, np.integer) or e.min() < 0 or e.max() > n_epochs:
        raise InputError("learned_epoch", f"integers in 0..{n_epochs}", f"{e.dtype} array")
    lo, hi = float(z.min()), float(z.max())
    edges = np.linspace(lo, hi if hi > lo else lo + 1.0, n_bins + 1)
    bands = epoch_bands(n_epochs)
    cmap = colormaps["viridis"]
    groups = [
        (_band_label(a, b), (e >= a) & (e <= b), to_hex(cmap(i / max(len(bands) - 1, 1) * 0.9)))
        for i, (a, b) in enumerate(bands)
    ]
    groups.append(("never learned", np.asarray(e == 0), NEVER_COLOUR))
    fig = new_figure(6.4, 4.0)
    ax = fig.subplots()
    bottom = np.zeros(n_bins)
    for label, mask, colour in groups:
        if not mask.any():
            continue
        counts = np.histogram(z[mask], bins=edges)[0].astype(np.float64)
        style = {"bottom": bottom, "color": colour, "linewidth": 0.3, "label": label}
        bin_bars(ax, edges[:-1], counts, np.diff(edges), **style)
        bottom += counts
    ax.set_xlabel("Maximum logit")
    ax.set_ylabel("Training samples")
    ax.set_title(plain(title), fontsize=10)
    ax.legend(title="Learned at", fontsize=8, title_fontsize=8, frameon=False)
    _style(ax, percent=False)
    return fig


def calibration_size_figure(
    sizes: Sequence[int],
    curves: Mapping[str, Mapping[str, npt.ArrayLike]],
    *,
    title: str,
) -> Figure:
    """Test ECE against the calibration-set size (log x): mean line, mean ± std band.

    ``curves`` maps a model's name to the output of
    :func:`experiments.wang2021.analysis.calibration_size_curve` for it: ``{calibrator: array
    (len(sizes), 2)}`` of mean and standard deviation. One panel per calibrator, one line
    per model, so each panel shows whether a model's lead holds at every size.
    """
    x = np.asarray(sizes, dtype=np.float64)
    calibrators = list(dict.fromkeys(c for per in curves.values() for c in per))
    fig = new_figure(4.2 * max(len(calibrators), 1), 3.8)
    axes = np.atleast_1d(fig.subplots(1, max(len(calibrators), 1), sharey=True))
    for ax, cal in zip(axes, calibrators, strict=False):
        for i, (model, per) in enumerate(curves.items()):
            if cal not in per:
                continue
            c = np.asarray(per[cal], dtype=np.float64)
            if c.shape != (x.size, 2):
                raise InputError(
                    f"curves[{model!r}][{cal!r}]", f"a ({x.size}, 2) array", str(c.shape)
                )
            colour = _COLOURS[i % len(_COLOURS)]
            ax.plot(x, c[:, 0], color=colour, marker="o", markersize=4, label=plain(model))
            ax.fill_between(x, c[:, 0] - c[:, 1], c[:, 0] + c[:, 1], color=colour, alpha=0.15)
        ax.set_xscale("log")
        ax.set_xlabel("Calibration samples (log scale)")
        ax.set_title(plain(f"after {CALIBRATOR_NAMES.get(cal, cal)}"), fontsize=10)
        _style(ax)
    axes[0].set_ylabel("Test ECE (mean ± std)")
    axes[0].legend(fontsize=8, frameon=False)
    fig.suptitle(plain(title), fontsize=10)
    return fig
