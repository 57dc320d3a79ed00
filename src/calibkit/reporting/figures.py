"""Calibration figures: reliability diagrams (one, a grid, per group, smoothed), in the
layout every calibkit figure follows (:mod:`calibkit.reporting.figure_style`;
:mod:`calibkit.reporting.curves` draws the ECE-versus-temperature curve and the
risk-coverage curves with it).

Every figure is a plain :class:`matplotlib.figure.Figure` rendered with the Agg canvas,
so nothing touches pyplot's global state and no display is needed. Reliability diagrams
are drawn from a :class:`~calibkit.core.binning.BinStats` (the output of
:func:`calibkit.metrics.reliability_stats`), never by re-binning: the bars show exactly
the numbers behind the ECE printed next to them.

Drawing rules
    One bar per non-empty bin, as wide as the bin, as tall as the bin's accuracy; an
    empty bin draws nothing (its accuracy is undefined, not zero). The shaded "gap"
    spans from the accuracy to the bin's mean confidence. The histogram below shows the
    fraction of samples in each bin, with the overall accuracy and mean confidence.

Layout rules (a figure is read at a glance)
    Nothing is drawn over the data: the bins' sample counts sit in a strip under the bars
    (below every bar and interval), the ECE is stated above the axes beside its noise floor
    where known, and the legend lies under the figure, each thing listed once. Every ECE
    panel shows the floor (a line on the ECE-versus-T curve and the shift box plots). Rows
    of panels are spaced so a title never touches the row above; long titles wrap into
    balanced lines; outcome-rate curves are drawn within [0, 1].

>>> from calibkit.core.binning import bin_stats
>>> stats = bin_stats(np.array([0.15, 0.55, 0.95, 0.97]), np.array([0.0, 1.0, 1.0, 0.0]), 10)
>>> fig = reliability_figure(stats, title="demo", ece=0.3)
>>> bars = bar_heights(fig.axes[0], ACCURACY_LABEL)
>>> bars.tolist() == stats.accuracy[stats.nonempty].tolist()
True
>>> from calibkit.reporting.figure_style import figure_png_bytes
>>> figure_png_bytes(fig)[:8] == b"\\x89PNG\\r\\n\\x1a\\n"
True
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from matplotlib.axes import Axes
from matplotlib.container import BarContainer
from matplotlib.figure import Figure

from calibkit.core.binning import BinStats
from calibkit.core.errors import InputError
from calibkit.reporting.figure_style import (
    _ACC_LINE,
    _BAR,
    _CONF_LINE,
    _FITTED_COLOURS,
    _GAP,
    _HIST,
    _IDEAL,
    PercentTicks,
    below,
    ece_text,
    figure_legend,
    new_figure,
    plain,
    spaced,
    style_axes,
    title_with_ece,
    unit_limits,
    wrapped,
)

if TYPE_CHECKING:
    from calibkit.metrics.reliability_bands import CorpReliability, IntervalMethod
    from calibkit.metrics.smooth import SmoothReliability

ACCURACY_LABEL = "Accuracy per bin"
GAP_LABEL = "Gap to mean confidence"
FRACTION_LABEL = "Share of samples per bin"
SMOOTH_LABEL = "Smoothed accuracy"
BAND_LABEL = "Bootstrap band"
INTERVAL_GID = "bin-interval"
COUNT_GID = "bin-count"
CORP_LABEL = "CORP (isotonic) curve"
CONSISTENCY_LABEL = "Consistency band"

#: Size (points) of the bins' sample counts, set upright in a strip under a reliability
#: diagram's bars (below every bar and interval, so no count meets one).
COUNT_FONT = 6.5
_STRIP = "#f1f3f6"


def bin_bars(
    ax: Axes, left: npt.ArrayLike, heights: npt.ArrayLike, width: npt.ArrayLike, **style: Any
) -> BarContainer:
    """One bar per bin, from its left edge, white-edged (``style`` adds to or overrides)."""
    return ax.bar(
        left,
        heights,
        width=width,
        align="edge",
        **{"edgecolor": "white", "linewidth": 0.6, **style},
    )


def bar_heights(ax: Axes, label: str) -> npt.NDArray[np.float64]:
    """Heights of the bars of the container labelled ``label`` on ``ax`` (for checks)."""
    for container in ax.containers:
        if isinstance(container, BarContainer) and container.get_label() == label:
            return np.array([p.get_height() for p in container.patches], dtype=np.float64)
    raise InputError("label", "the label of a bar container on these axes", repr(label))


def _check_stats(stats: object) -> BinStats:
    if not isinstance(stats, BinStats):
        raise InputError("stats", "a BinStats (from reliability_stats)", type(stats).__name__)
    if stats.total <= 0:
        raise InputError("stats", "bin statistics of at least one sample", "an empty binning")
    return stats


def draw_bin_intervals(
    ax: Axes,
    stats: BinStats,
    centres: npt.NDArray[np.float64],
    *,
    method: IntervalMethod = "wilson",
    level: float = 0.95,
    color: str = "black",
    label: bool = True,
) -> None:
    """Error bars of each non-empty bin's accuracy interval at ``centres`` (one x per
    non-empty bin; empty bins get none), from
    :func:`calibkit.metrics.reliability_bands.bin_intervals`. ``label``: whether they get a
    legend entry (several models' intervals share one)."""
    from calibkit.metrics.reliability_bands import bin_intervals

    keep = stats.nonempty
    iv = bin_intervals(stats, method, level)
    acc, lo, hi = stats.accuracy[keep], iv.lower[keep], iv.upper[keep]
    name = "Wilson" if method == "wilson" else "Clopper-Pearson"
    bars = ax.errorbar(
        centres,
        acc,
        yerr=np.vstack([acc - lo, hi - acc]),
        fmt="none",
        ecolor=color,
        elinewidth=0.9,
        capsize=0,
        zorder=4,
        label=f"{level:.0%} {name} interval" if label else "_nolegend_",
    )
    for segments in bars.lines[2]:  # the vertical bars: one LineCollection
        segments.set_gid(INTERVAL_GID)


def _count_label(n: float) -> str:
    return f"{n:,.0f}"


def _text_points(text: str, fontsize: float) -> float:
    """Length in points of ``text`` set in ``fontsize`` (DejaVu Sans digits: 0.64 em, a
    comma 0.32 em)."""
    return fontsize * sum(0.32 if c in ",." else 0.64 for c in text)


def count_strip(ax: Axes, counts: Sequence[npt.ArrayLike]) -> None:
    """Make room under the bars of ``ax`` for a strip holding the bins' sample ``counts``
    (one array per model): the y axis starts below 0 by as much as the longest count, set
    upright in :data:`COUNT_FONT` points, needs; the strip is shaded and labelled ``n``. Call
    after the y limits are set, before :func:`draw_bin_counts`."""
    labels = [_count_label(n) for c in counts for n in np.asarray(c, dtype=np.float64).ravel()]
    need = _text_points(max(labels, key=len, default="0"), COUNT_FONT) + 4.0
    top = ax.get_ylim()[1]
    span = top - ax.get_ylim()[0]
    depth = 0.1
    for _ in range(4):  # the strip deepens the axis it is measured on: a few fixed-point steps
        ax.set_ylim(-depth, top)
        per_unit = _axes_points(ax)[1] / (top + depth)
        depth = min(need / max(per_unit, 1e-9), 0.35 * span)
    ax.set_ylim(-depth, top)
    ax.fill_between([-1.0, 2.0], -depth, 0.0, color=_STRIP, linewidth=0, zorder=0, label="_strip")
    ax.text(
        -0.01, -depth / 2, "n", transform=ax.get_yaxis_transform(), ha="right",
        va="center", fontsize=8, color="#555555", gid="count-strip",
    )  # fmt: skip


def _axes_points(ax: Axes) -> tuple[float, float]:
    """Width and height of ``ax`` in points as laid out now (an equal aspect applied)."""
    fig, pos = ax.figure, ax.get_position()
    width = pos.width * fig.bbox.width * 72 / fig.dpi
    height = pos.height * fig.bbox.height * 72 / fig.dpi
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    if ax.get_aspect() == 1.0:  # the box shrinks to keep one data unit as long both ways
        scale = min(width / (x1 - x0), height / (y1 - y0))
        width, height = scale * (x1 - x0), scale * (y1 - y0)
    return width, height


def draw_bin_counts(
    ax: Axes,
    centres: npt.NDArray[np.float64],
    counts: npt.ArrayLike,
    widths: npt.NDArray[np.float64],
    *,
    color: str = "#444444",
) -> None:
    """Each non-empty bin's sample count (gid :data:`COUNT_GID`), upright in the strip under
    its bar (:func:`count_strip`), in :data:`COUNT_FONT` points or less where the strip or
    the bar is narrower; a count never meets a bar, an interval, the legend or the ECE."""
    texts = [_count_label(n) for n in np.asarray(counts, dtype=np.float64)]
    if not texts:
        return
    width_pt, height_pt = _axes_points(ax)
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    depth = -y0
    strip_pt = depth / (y1 - y0) * height_pt
    column_pt = float(np.min(widths)) / (x1 - x0) * width_pt
    fit = (strip_pt - 4.0) / _text_points(max(texts, key=len), 1.0)
    size = max(3.0, min(COUNT_FONT, fit, 0.7 * column_pt))
    for x, text in zip(centres, texts, strict=True):
        ax.text(
            x, -depth / 2, text, ha="center", va="center", rotation=90,
            fontsize=size, color=color, gid=COUNT_GID, zorder=5,
        )  # fmt: skip


def draw_corp(
    ax: Axes, corp: CorpReliability, *, color: str = "#2a9d8f", name: str | None = None
) -> None:
    """The CORP curve (a step function) and its consistency band around the diagonal;
    ``name`` (the model's, when several share the axes) ends their legend labels."""
    suffix = f": {plain(name)}" if name else ""
    ax.fill_between(
        corp.grid, corp.lower, corp.upper, color=color, alpha=0.2, linewidth=0, step="post",
        label=f"{CONSISTENCY_LABEL} ({corp.level:.0%}){suffix}", zorder=1,
    )  # fmt: skip
    ax.step(
        corp.grid, corp.curve, where="post", color=color, linewidth=1.6,
        label=CORP_LABEL + suffix,
    )  # fmt: skip


def draw_reliability(
    ax: Axes,
    stats: BinStats,
    *,
    square: bool = True,
    interval: IntervalMethod | None = "wilson",
    counts: bool = True,
    corp: CorpReliability | None = None,
) -> None:
    """Draw the reliability bars, gap shading and diagonal of ``stats`` on ``ax``; with
    ``interval``, each bar's 95% interval (:func:`draw_bin_intervals`); with ``counts``, the
    bins' sample counts in a strip under the bars (:func:`draw_bin_counts`); with ``corp``,
    the CORP curve and its band (:func:`draw_corp`). Nothing is drawn over the data: the
    caller states the ECE above the axes (:func:`title_with_ece`) and puts the legend
    outside."""
    keep = stats.nonempty
    left = stats.edges[:-1][keep]
    width = np.diff(stats.edges)[keep]
    acc = stats.accuracy[keep]
    conf = stats.mean_confidence[keep]
    ax.plot(
        [0, 1], [0, 1], linestyle="--", color=_IDEAL, linewidth=1.0, label="Perfect calibration"
    )
    bin_bars(ax, left, acc, width, color=_BAR, label=ACCURACY_LABEL, zorder=2)
    ax.bar(
        left,
        np.abs(conf - acc),
        bottom=np.minimum(acc, conf),
        width=width,
        align="edge",
        color=_GAP,
        alpha=0.3,
        edgecolor=_GAP,
        linewidth=0.6,
        hatch="///",
        label=GAP_LABEL,
        zorder=3,
    )
    if interval is not None:
        draw_bin_intervals(ax, stats, left + width / 2, method=interval)
    if corp is not None:
        draw_corp(ax, corp)
    unit_limits(ax)
    if square:
        ax.set_aspect("equal", adjustable="box")
    if counts:
        count_strip(ax, [stats.counts[keep]])
        draw_bin_counts(ax, left + width / 2, stats.counts[keep], width)
    ax.set_ylabel("Accuracy")
    style_axes(ax)


def draw_histogram(ax: Axes, stats: BinStats) -> None:
    """Draw the fraction of samples per non-empty bin, overall accuracy and confidence
    (their legend entries go in the figure's legend)."""
    keep = stats.nonempty
    edges = stats.edges
    left, width = edges[:-1][keep], np.diff(edges)[keep]
    bin_bars(ax, left, stats.weights[keep], width, color=_HIST, label=FRACTION_LABEL)
    total = stats.total
    acc = float(stats.accuracy_sum.sum() / total)
    conf = float(stats.confidence_sum.sum() / total)
    ax.axvline(acc, color=_ACC_LINE, linewidth=1.6, label=f"Overall accuracy {100 * acc:.1f}%")
    ax.axvline(
        conf,
        color=_CONF_LINE,
        linewidth=1.6,
        linestyle="--",
        label=f"Mean confidence {100 * conf:.1f}%",
    )
    unit_limits(ax, y=False)
    ax.set_ylim(0, max(1e-9, float(stats.weights.max())) * 1.1)
    ax.yaxis.set_major_formatter(PercentTicks())
    ax.set_ylabel("% of samples")
    ax.set_xlabel("Confidence")
    style_axes(ax)


def reliability_figure(
    stats: BinStats,
    *,
    title: str,
    ece: float | None = None,
    floor: float | None = None,
    subtitle: str | None = None,
    interval: IntervalMethod | None = "wilson",
    corp: CorpReliability | None = None,
) -> Figure:
    """Reliability diagram of ``stats`` stacked above its confidence histogram.

    ``ece`` (a fraction) is printed above the diagram when given, beside its noise
    ``floor`` (the ECE a perfectly calibrated model with the same confidences shows) when
    given; pass the values from the same evaluation so that figure and table agree.
    ``interval``: each bin's 95% interval (``None``: none), with the bins' sample counts in
    a strip under the bars; ``corp``: the CORP curve with its consistency band. One legend,
    under the histogram.

    Examples
    --------
    >>> from calibkit import reliability_stats
    >>> stats = reliability_stats([0, 1, 1], probs=[[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]])
    >>> len(reliability_figure(stats, title="My model", ece=0.2).axes)  # diagram, histogram
    2
    """
    stats = _check_stats(stats)
    fig = new_figure(5.2, 7.2)
    top, bottom = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3.3, 1.0]})
    draw_reliability(
        top, stats, square=False, interval=interval, counts=interval is not None, corp=corp
    )
    draw_histogram(bottom, stats)
    figure_legend(fig, [top, bottom])
    fig.suptitle(wrapped(title, 5.0, 12), fontsize=12)
    line = None if ece is None else ece_text(ece, floor, stats.total)
    subtitle = wrapped(subtitle or "", 5.0, 9)
    title_with_ece(top, subtitle, line, fontsize=9, ece_fontsize=9.5, color="#555555")
    return fig


def smooth_reliability_figure(rel: SmoothReliability, *, title: str) -> Figure:
    """The kernel-smoothed reliability curve of ``rel`` (from
    :func:`calibkit.metrics.smooth_reliability`) with its bootstrap band, above the
    kernel density of the confidences; the smooth ECE and its interval above the diagram,
    the legend under the figure. Curve and band are outcome rates, drawn within [0, 1].

    Examples
    --------
    >>> from calibkit import smooth_reliability
    >>> probs = [[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.7, 0.3], [0.1, 0.9]]
    >>> rel = smooth_reliability([0, 1, 1, 0, 1], probs=probs)
    >>> len(smooth_reliability_figure(rel, title="My model").axes)  # curve, density
    2
    """
    fig = new_figure(5.2, 7.0)
    top, bottom = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3.3, 1.0]})
    top.plot(
        [0, 1], [0, 1], linestyle="--", color=_IDEAL, linewidth=1.0, label="Perfect calibration"
    )
    top.fill_between(
        rel.grid,
        np.clip(rel.lower, 0.0, 1.0),
        np.clip(rel.upper, 0.0, 1.0),
        color=_BAR,
        alpha=0.25,
        linewidth=0,
        label=f"{BAND_LABEL} ({rel.level:.0%})",
    )
    top.plot(rel.grid, np.clip(rel.curve, 0.0, 1.0), color=_BAR, linewidth=2.0, label=SMOOTH_LABEL)
    unit_limits(top)
    top.set_ylabel("Accuracy")
    lo, hi = rel.interval
    line = (
        f"smooth ECE = {100 * rel.value:.2f}%  [{100 * lo:.2f}%, {100 * hi:.2f}%],  "
        f"bandwidth {rel.bandwidth:.3g}"
    )
    title_with_ece(top, "", line, fontsize=9, ece_fontsize=9.5)
    style_axes(top)
    bottom.fill_between(rel.grid, 0, rel.density, color=_HIST, linewidth=0, label="Density")
    bottom.set_ylim(0, max(1e-9, float(rel.density.max())) * 1.1)
    bottom.set_ylabel("Density")
    bottom.set_xlabel("Confidence")
    style_axes(bottom)
    figure_legend(fig, [top, bottom])
    fig.suptitle(wrapped(title, 5.0, 12), fontsize=12)
    return fig


#: A reliability-grid panel: ``(name, stats, ece)`` or ``(name, stats, ece, noise floor)``.
GridPanel = tuple[str, BinStats, float] | tuple[str, BinStats, float, float | None]


def reliability_grid(
    panels: Sequence[GridPanel], *, ncols: int = 4, title: str | None = None
) -> Figure:
    """Reliability diagrams side by side: one ``(name, stats, ece)`` or ``(name, stats, ece,
    floor)`` per panel, the ECE (beside its noise floor, when given) above each panel, the
    sample counts in a strip under the bars, one legend under the grid.

    Examples
    --------
    >>> from calibkit import reliability_stats
    >>> stats = reliability_stats([0, 1, 1], probs=[[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]])
    >>> len(reliability_grid([("before", stats, 0.2), ("after", stats, 0.2)]).axes)
    2
    """
    if not panels:
        raise InputError("panels", "at least one (title, stats, ece) panel", "none")
    n = len(panels)
    cols = max(1, min(ncols, n))
    rows = math.ceil(n / cols)
    fig = new_figure(2.9 * cols, 3.5 * rows + 0.5)
    spaced(fig)
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).reshape(-1)
    for i, (ax, panel) in enumerate(zip(axes, panels, strict=False)):
        name, stats, ece = panel[0], panel[1], panel[2]
        floor = panel[3] if len(panel) > 3 else None
        draw_reliability(ax, _check_stats(stats))
        title_with_ece(
            ax, wrapped(name, 2.8, 10), ece_text(ece, floor), fontsize=10, ece_fontsize=8
        )
        if i % cols:
            ax.set_ylabel("")
        if i >= n - cols:
            ax.set_xlabel("Confidence")
    for ax in axes[n:]:
        ax.set_visible(False)
    figure_legend(fig, list(axes[:1]), ncols=max(2, min(4, int(fig.get_figwidth() / 1.8))))
    if title:
        fig.suptitle(wrapped(title, 2.9 * cols - 0.2, 12), fontsize=12)
    return fig


#: A method of a group panel: ``(stats, ece)`` or ``(stats, ece, noise floor)``.
GroupLine = tuple[BinStats, float] | tuple[BinStats, float, float | None]


def group_reliability_figure(
    panels: Sequence[tuple[str, Mapping[str, GroupLine]]],
    *,
    ncols: int = 4,
    title: str | None = None,
) -> Figure:
    """Reliability per group: one panel per ``(group, {method: (stats, ece[, floor])})``,
    each method's non-empty bins drawn as a line of points (mean confidence, accuracy) sized
    by the bin's share of the group, the legend under the panel giving the group's ECE (and
    its noise floor, when given); empty bins draw nothing.

    >>> from calibkit.core.binning import bin_stats
    >>> s = bin_stats(np.array([0.15, 0.55, 0.95]), np.array([0.0, 1.0, 1.0]), 10)
    >>> fig = group_reliability_figure([("a (3)", {"none": (s, 0.2, 0.1)})])
    >>> [line.get_label() for line in fig.axes[0].lines]
    ['none (ECE 20.00%, floor 10.00%)', '_diagonal']
    >>> fig.axes[0].lines[0].get_xdata().tolist() == s.mean_confidence[s.nonempty].tolist()
    True
    """
    if not panels:
        raise InputError("panels", "at least one (group, {method: (stats, ece)}) panel", "none")
    n = len(panels)
    cols = max(1, min(ncols, n))
    rows = math.ceil(n / cols)
    n_methods = max(len(methods) for _, methods in panels)
    fig = new_figure(3.2 * cols, (3.3 + 0.17 * n_methods) * rows + 0.4)
    spaced(fig)
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).reshape(-1)
    for i, (ax, (name, methods)) in enumerate(zip(axes, panels, strict=False)):
        for j, (method, line) in enumerate(methods.items()):
            st = _check_stats(line[0])
            ece = line[1]
            floor = line[2] if len(line) > 2 else None
            keep = st.nonempty
            share = st.counts[keep] / max(1.0, float(st.counts.sum()))
            colour = _FITTED_COLOURS[j % len(_FITTED_COLOURS)] if j else _BAR
            beside = "" if floor is None or not math.isfinite(floor) else f", floor {floor:.2%}"
            ax.plot(
                st.mean_confidence[keep],
                st.accuracy[keep],
                "-",
                color=colour,
                linewidth=1.2,
                label=f"{plain(method)} (ECE {ece:.2%}{beside})",
            )
            ax.scatter(st.mean_confidence[keep], st.accuracy[keep], s=8 + 120 * share, color=colour)
        ax.plot([0, 1], [0, 1], ":", color=_IDEAL, linewidth=1, label="_diagonal")
        unit_limits(ax)
        style_axes(ax)
        ax.set_title(wrapped(name, 3.0, 10), fontsize=10)
        ax.legend(fontsize=7, frameon=False, loc="upper center", **below(ax, 34))
        if i % cols == 0:
            ax.set_ylabel("Accuracy")
        ax.set_xlabel("Confidence")
    for ax in axes[n:]:
        ax.set_visible(False)
    if title:
        fig.suptitle(wrapped(title, 3.2 * cols - 0.2, 12), fontsize=12)
    return fig
