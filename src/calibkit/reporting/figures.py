"""Calibration figures: reliability diagrams, the ECE-versus-temperature curve and the
risk-coverage curves of selective prediction.

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

>>> from calibkit.core.binning import bin_stats
>>> stats = bin_stats(np.array([0.15, 0.55, 0.95, 0.97]), np.array([0.0, 1.0, 1.0, 0.0]), 10)
>>> fig = reliability_figure(stats, title="demo", ece=0.3)
>>> bars = bar_heights(fig.axes[0], ACCURACY_LABEL)
>>> bars.tolist() == stats.accuracy[stats.nonempty].tolist()
True
>>> figure_png_bytes(fig)[:8] == b"\\x89PNG\\r\\n\\x1a\\n"
True
"""

from __future__ import annotations

import io
import math
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.container import BarContainer
from matplotlib.figure import Figure
from matplotlib.ticker import PercentFormatter

from calibkit.core.binning import BinStats
from calibkit.core.errors import InputError
from calibkit.io.atomic import atomic_write_bytes

if TYPE_CHECKING:
    from calibkit.metrics.reliability_bands import CorpReliability, IntervalMethod
    from calibkit.metrics.selective import RiskCoverage
    from calibkit.metrics.smooth import SmoothReliability

DPI = 120
ACCURACY_LABEL = "Accuracy"
GAP_LABEL = "Gap to mean confidence"
FRACTION_LABEL = "Samples"
SMOOTH_LABEL = "Smoothed accuracy"
BAND_LABEL = "Bootstrap band"
INTERVAL_GID = "bin-interval"
COUNT_GID = "bin-count"
CORP_LABEL = "CORP (isotonic) curve"
CONSISTENCY_LABEL = "Consistency band"

_BAR = "#3366a8"
_GAP = "#d1495b"
_HIST = "#7f8fa6"
_IDEAL = "#555555"
_CONF_LINE = "#d1495b"
_ACC_LINE = "#1b3a63"
_FITTED_COLOURS = ("#d1495b", "#2a9d8f", "#e9a03b", "#7b5ea7", "#3d5a80")
#: Unit-interval axes reach this far past 0 and 1, so the bars and ticks at the ends show whole.
_MARGIN = 0.05


def new_figure(width: float, height: float) -> Figure:
    """An empty figure of ``width`` x ``height`` inches, constrained layout, Agg canvas
    (no pyplot state); every calibkit figure starts here."""
    fig = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def plain(text: str) -> str:
    """``text`` with ``$`` escaped, so matplotlib never reads user text as mathtext."""
    return text.replace("$", r"\$")


def wrapped(text: str, width_inches: float, fontsize: float) -> str:
    """``text`` (``$`` escaped, see :func:`plain`) broken into lines that fit ``width_inches``
    at ``fontsize`` points, so a long title wraps instead of running off the figure.

    >>> wrapped("a" * 10 + " " + "b" * 10, 1.0, 10)
    'aaaaaaaaaa\\nbbbbbbbbbb'
    """
    per_line = max(10, int(width_inches * 72 / (0.62 * fontsize)))
    return textwrap.fill(plain(text), per_line, break_on_hyphens=False)


def unit_limits(ax: Axes, *, y: bool = True) -> None:
    """Axis limits just past [0, 1] (a tick every 0.2) so the ends show whole."""
    ticks = np.linspace(0.0, 1.0, 6)
    ax.set_xlim(-_MARGIN, 1 + _MARGIN)
    ax.set_xticks(ticks)
    if y:
        ax.set_ylim(-_MARGIN, 1 + _MARGIN)
        ax.set_yticks(ticks)


def style_axes(ax: Axes) -> None:
    """The house style of an axes: no top or right spine, a light grid behind the data."""
    ax.spines[["top", "right"]].set_visible(False)
    ax.grid(True, color="#e4e4e4", linewidth=0.7)
    ax.set_axisbelow(True)


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
    counts: bool = True,
    color: str = "black",
) -> None:
    """Error bars of each non-empty bin's accuracy interval at ``centres`` (one x per
    non-empty bin), and its sample count above (gid :data:`COUNT_GID`); empty bins get
    neither. The intervals come from :func:`calibkit.metrics.reliability_bands.bin_intervals`.
    """
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
        label=f"{level:.0%} {name} interval",
    )
    for segments in bars.lines[2]:  # the vertical bars: one LineCollection
        segments.set_gid(INTERVAL_GID)
    if counts:
        for x, y, n in zip(centres, hi, stats.counts[keep], strict=True):
            ax.text(
                x, min(y + 0.02, 1.0), f"{n:,.0f}", ha="center", va="bottom", rotation=90,
                fontsize=5.5, color="#444444", gid=COUNT_GID, zorder=5,
            )  # fmt: skip


def draw_corp(ax: Axes, corp: CorpReliability, *, color: str = "#2a9d8f") -> None:
    """The CORP curve (a step function) and its consistency band around the diagonal."""
    ax.fill_between(
        corp.grid, corp.lower, corp.upper, color=color, alpha=0.2, linewidth=0, step="post",
        label=f"{CONSISTENCY_LABEL} ({corp.level:.0%})", zorder=1,
    )  # fmt: skip
    ax.step(corp.grid, corp.curve, where="post", color=color, linewidth=1.6, label=CORP_LABEL)


def draw_reliability(
    ax: Axes,
    stats: BinStats,
    *,
    ece: float | None = None,
    square: bool = True,
    interval: IntervalMethod | None = "wilson",
    counts: bool = True,
    corp: CorpReliability | None = None,
) -> None:
    """Draw the reliability bars, gap shading and diagonal of ``stats`` on ``ax``; with
    ``interval``, each bar's 95% interval (:func:`draw_bin_intervals`, with the bin counts
    when ``counts``); with ``corp``, the CORP curve and its band (:func:`draw_corp`)."""
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
        draw_bin_intervals(ax, stats, left + width / 2, method=interval, counts=counts)
    if corp is not None:
        draw_corp(ax, corp)
    unit_limits(ax)
    if square:
        ax.set_aspect("equal", adjustable="box")
    ax.set_ylabel("Accuracy")
    style_axes(ax)
    if ece is not None:
        ax.text(
            0.04,
            0.95,
            f"ECE = {100 * ece:.2f}%\nn = {stats.total:,.0f}",
            transform=ax.transAxes,
            va="top",
            ha="left",
            fontsize=9,
            bbox={
                "boxstyle": "round,pad=0.35",
                "facecolor": "white",
                "edgecolor": "#bbbbbb",
                "linewidth": 0.7,
            },
        )


def draw_histogram(ax: Axes, stats: BinStats) -> None:
    """Draw the fraction of samples per non-empty bin, overall accuracy and confidence."""
    keep = stats.nonempty
    edges = stats.edges
    left, width = edges[:-1][keep], np.diff(edges)[keep]
    bars = bin_bars(ax, left, stats.weights[keep], width, color=_HIST, label=FRACTION_LABEL)
    total = stats.total
    acc = float(stats.accuracy_sum.sum() / total)
    conf = float(stats.confidence_sum.sum() / total)
    lines = [
        ax.axvline(acc, color=_ACC_LINE, linewidth=1.6, label=f"Accuracy {100 * acc:.1f}%"),
        ax.axvline(
            conf,
            color=_CONF_LINE,
            linewidth=1.6,
            linestyle="--",
            label=f"Mean confidence {100 * conf:.1f}%",
        ),
    ]
    unit_limits(ax, y=False)
    ax.set_ylim(0, max(1e-9, float(stats.weights.max())) * 1.4)
    ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    ax.set_ylabel("% of samples")
    ax.set_xlabel("Confidence")
    ax.legend(
        handles=[bars, *lines],
        loc="upper center",
        ncols=3,
        fontsize=7,
        framealpha=0.9,
        edgecolor="none",
    )
    style_axes(ax)


def reliability_figure(
    stats: BinStats,
    *,
    title: str,
    ece: float | None = None,
    subtitle: str | None = None,
    interval: IntervalMethod | None = "wilson",
    corp: CorpReliability | None = None,
) -> Figure:
    """Reliability diagram of ``stats`` stacked above its confidence histogram.

    ``ece`` (a fraction) is printed in the diagram when given; pass the value from the
    same evaluation so that figure and table agree. ``interval``: each bin's 95% interval
    (``None``: none); ``corp``: the CORP curve with its consistency band.

    Examples
    --------
    >>> from calibkit import reliability_stats
    >>> stats = reliability_stats([0, 1, 1], probs=[[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]])
    >>> len(reliability_figure(stats, title="My model", ece=0.2).axes)  # diagram, histogram
    2
    """
    stats = _check_stats(stats)
    fig = new_figure(5.2, 6.6)
    top, bottom = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3.3, 1.2]})
    draw_reliability(top, stats, ece=ece, square=False, interval=interval, corp=corp)
    top.legend(
        loc="upper left", bbox_to_anchor=(0.0, 0.86), fontsize=8, framealpha=0.85, edgecolor="none"
    )
    draw_histogram(bottom, stats)
    fig.suptitle(wrapped(title, 5.0, 12), fontsize=12)
    if subtitle:
        top.set_title(wrapped(subtitle, 5.0, 9), fontsize=9, color="#555555")
    return fig


def smooth_reliability_figure(rel: SmoothReliability, *, title: str) -> Figure:
    """The kernel-smoothed reliability curve of ``rel`` (from
    :func:`calibkit.metrics.smooth_reliability`) with its bootstrap band, above the
    kernel density of the confidences; the smooth ECE and its interval in the legend.

    Examples
    --------
    >>> from calibkit import smooth_reliability
    >>> probs = [[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.7, 0.3], [0.1, 0.9]]
    >>> rel = smooth_reliability([0, 1, 1, 0, 1], probs=probs)
    >>> len(smooth_reliability_figure(rel, title="My model").axes)  # curve, density
    2
    """
    fig = new_figure(5.2, 6.6)
    top, bottom = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3.3, 1.2]})
    top.plot(
        [0, 1], [0, 1], linestyle="--", color=_IDEAL, linewidth=1.0, label="Perfect calibration"
    )
    top.fill_between(
        rel.grid,
        rel.lower,
        rel.upper,
        color=_BAR,
        alpha=0.25,
        linewidth=0,
        label=f"{BAND_LABEL} ({rel.level:.0%})",
    )
    lo, hi = rel.interval
    top.plot(
        rel.grid,
        rel.curve,
        color=_BAR,
        linewidth=2.0,
        label=f"{SMOOTH_LABEL}; smooth ECE {100 * rel.value:.2f}% "
        f"[{100 * lo:.2f}%, {100 * hi:.2f}%]",
    )
    unit_limits(top)
    top.set_ylabel("Accuracy")
    top.set_title(f"Bandwidth {rel.bandwidth:.4g}", fontsize=9, color="#555555")
    top.legend(loc="upper left", fontsize=8, framealpha=0.85, edgecolor="none")
    style_axes(top)
    bottom.fill_between(rel.grid, 0, rel.density, color=_HIST, linewidth=0, label="Density")
    bottom.set_ylim(0, max(1e-9, float(rel.density.max())) * 1.1)
    bottom.set_ylabel("Density")
    bottom.set_xlabel("Confidence")
    style_axes(bottom)
    fig.suptitle(wrapped(title, 5.0, 12), fontsize=12)
    return fig


def reliability_grid(
    panels: Sequence[tuple[str, BinStats, float]], *, ncols: int = 4, title: str | None = None
) -> Figure:
    """Reliability diagrams side by side: one ``(name, stats, ece)`` per panel.

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
    fig = new_figure(2.9 * cols, 3.0 * rows + 0.3)
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).reshape(-1)
    for i, (ax, (name, stats, ece)) in enumerate(zip(axes, panels, strict=False)):
        draw_reliability(ax, _check_stats(stats), ece=ece)
        ax.set_title(wrapped(name, 2.8, 10), fontsize=10)
        if i % cols:
            ax.set_ylabel("")
        if i >= n - cols:
            ax.set_xlabel("Confidence")
    for ax in axes[n:]:
        ax.set_visible(False)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=3, fontsize=8, frameon=False)
    if title:
        fig.suptitle(wrapped(title, 2.9 * cols - 0.2, 12), fontsize=12)
    return fig


def group_reliability_figure(
    panels: Sequence[tuple[str, Mapping[str, tuple[BinStats, float]]]],
    *,
    ncols: int = 4,
    title: str | None = None,
) -> Figure:
    """Reliability per group: one panel per ``(group, {method: (stats, ece)})``, each
    method's non-empty bins drawn as a line of points (mean confidence, accuracy) sized by
    the bin's share of the group, the legend giving the group's ECE; empty bins draw nothing.

    >>> from calibkit.core.binning import bin_stats
    >>> s = bin_stats(np.array([0.15, 0.55, 0.95]), np.array([0.0, 1.0, 1.0]), 10)
    >>> fig = group_reliability_figure([("a (3)", {"none": (s, 0.2)})])
    >>> [line.get_label() for line in fig.axes[0].lines]
    ['none (ECE 20.00%)', '_diagonal']
    >>> fig.axes[0].lines[0].get_xdata().tolist() == s.mean_confidence[s.nonempty].tolist()
    True
    """
    if not panels:
        raise InputError("panels", "at least one (group, {method: (stats, ece)}) panel", "none")
    n = len(panels)
    cols = max(1, min(ncols, n))
    rows = math.ceil(n / cols)
    fig = new_figure(2.9 * cols, 3.0 * rows + 0.4)
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).reshape(-1)
    for i, (ax, (name, methods)) in enumerate(zip(axes, panels, strict=False)):
        for j, (method, (stats, ece)) in enumerate(methods.items()):
            st = _check_stats(stats)
            keep = st.nonempty
            share = st.counts[keep] / max(1.0, float(st.counts.sum()))
            colour = _FITTED_COLOURS[j % len(_FITTED_COLOURS)] if j else _BAR
            ax.plot(
                st.mean_confidence[keep],
                st.accuracy[keep],
                "-",
                color=colour,
                linewidth=1.2,
                label=f"{plain(method)} (ECE {ece:.2%})",
            )
            ax.scatter(st.mean_confidence[keep], st.accuracy[keep], s=8 + 120 * share, color=colour)
        ax.plot([0, 1], [0, 1], ":", color=_IDEAL, linewidth=1, label="_diagonal")
        unit_limits(ax)
        style_axes(ax)
        ax.set_title(wrapped(name, 2.8, 10), fontsize=10)
        ax.legend(fontsize=7, frameon=False, loc="upper left")
        if i % cols == 0:
            ax.set_ylabel("Accuracy")
        if i >= n - cols:
            ax.set_xlabel("Confidence")
    for ax in axes[n:]:
        ax.set_visible(False)
    if title:
        fig.suptitle(wrapped(title, 2.9 * cols - 0.2, 12), fontsize=12)
    return fig


def ece_temperature_figure(
    temperatures: object,
    eces: object,
    *,
    fitted: Mapping[str, float],
    title: str = "ECE versus temperature",
) -> Figure:
    """ECE (y, percent) of ``softmax(logits / T)`` against T, marking fitted temperatures.

    ``fitted`` maps a method name to the temperature it chose; T = 1 (the uncalibrated
    model) and the minimum of the curve are marked too.

    Examples
    --------
    >>> fig = ece_temperature_figure([0.5, 1.0, 2.0], [0.10, 0.05, 0.08], fitted={"ts": 1.1})
    >>> len(fig.axes)
    1
    """
    t = np.asarray(temperatures, dtype=np.float64).reshape(-1)
    e = np.asarray(eces, dtype=np.float64).reshape(-1)
    if t.size < 2 or t.shape != e.shape or not np.all(np.diff(t) > 0):
        raise InputError(
            "temperatures/eces",
            "two equal-length arrays, temperatures increasing",
            f"shapes {t.shape} and {e.shape}",
        )
    fig = new_figure(6.4, 4.0)
    ax = fig.subplots()
    ax.plot(t, e, color=_BAR, linewidth=1.8, label="ECE on the test part")
    _mark_temperatures(ax, t, e, fitted)
    ax.set_xscale("log")
    ax.set_xlim(t[0], t[-1])
    ticks = [v for v in (0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10) if t[0] <= v <= t[-1]]
    ax.set_xticks(ticks, [f"{v:g}" for v in ticks])
    ax.minorticks_off()
    ax.set_ylim(0, float(np.nanmax(e)) * 1.05)
    ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    ax.set_xlabel("Temperature T (log scale)")
    ax.set_ylabel("ECE")
    ax.set_title(wrapped(title, 6.2, 11), fontsize=11)
    ax.legend(fontsize=8, frameon=False)
    style_axes(ax)
    return fig


def _mark_temperatures(
    ax: Axes, t: npt.NDArray[np.float64], e: npt.NDArray[np.float64], fitted: Mapping[str, float]
) -> None:
    """Mark the curve's minimum, T = 1 (when in range) and each fitted temperature."""
    best = int(np.argmin(e))
    ax.plot(
        t[best],
        e[best],
        marker="v",
        color=_BAR,
        markerfacecolor="none",
        markersize=10,
        markeredgewidth=1.5,
        linestyle="none",
        zorder=5,
        label=f"Minimum: T = {t[best]:.2f}, ECE = {100 * e[best]:.2f}%",
    )
    if t[0] <= 1.0 <= t[-1]:
        ax.axvline(
            1.0,
            color=_IDEAL,
            linestyle=":",
            linewidth=1.2,
            label=f"T = 1 (uncalibrated), ECE = {100 * np.interp(1.0, t, e):.2f}%",
        )
    for i, (name, temp) in enumerate(fitted.items()):
        colour = _FITTED_COLOURS[i % len(_FITTED_COLOURS)]
        ax.axvline(temp, color=colour, linestyle="--", linewidth=1.2)
        ax.plot(
            temp,
            np.interp(temp, t, e),
            marker="o",
            color=colour,
            linestyle="none",
            label=f"{plain(name)}: T = {temp:.3f}",
        )


#: The most points drawn per risk-coverage curve (a larger curve is thinned evenly).
RC_POINTS = 2000


def risk_coverage_figure(
    curves: Mapping[str, RiskCoverage], *, title: str = "Risk-coverage curves"
) -> Figure:
    """Selective risk (left) and generalized risk (right) against coverage, one line per
    entry of ``curves`` (:func:`calibkit.metrics.selective.risk_coverage_curve`), through the
    achievable points (tie groups enter together); the legend gives AURC and AUGRC. The
    first curve's perfect ranking at the same accuracy is dashed.

    >>> from calibkit.metrics.selective import risk_coverage_curve
    >>> p = [[0.9, 0.1], [0.8, 0.2], [0.7, 0.3], [0.6, 0.4]]
    >>> rc = risk_coverage_curve([0, 1, 0, 0], probs=p)  # risks 0, 1/2, 1/3, 1/4
    >>> fig = risk_coverage_figure({"model": rc})
    >>> [line.get_label() for line in fig.axes[0].lines][:1]
    ['model (AURC 27.08%)']
    """
    if not curves:
        raise InputError("curves", "at least one risk-coverage curve", "none")
    fig = new_figure(9.6, 4.0)
    left, right = fig.subplots(1, 2)
    for i, (name, rc) in enumerate(curves.items()):
        keep = np.unique(np.linspace(0, rc.coverage.size - 1, RC_POINTS).astype(np.int64))
        cov = np.r_[0.0, rc.coverage[keep]]
        left.plot(cov[1:], rc.risk[keep], linewidth=1.5, label=f"{name} (AURC {rc.aurc:.2%})")
        grisk = np.r_[0.0, rc.generalized_risk[keep]]
        right.plot(cov, grisk, linewidth=1.5, label=f"{name} (AUGRC {rc.augrc:.2%})")
        if i == 0:
            acc = 1.0 - rc.risk[-1]
            c = np.linspace(1e-3, 1.0, 400)
            best = np.maximum(0.0, (c - acc) / c)
            left.plot(c, best, "--", color=_IDEAL, linewidth=1, label="perfect ranking")
            right.plot(c, best * c, "--", color=_IDEAL, linewidth=1, label="perfect ranking")
    for ax, ylabel in (
        (left, "Selective risk (error among accepted)"),
        (right, "Generalized risk"),
    ):
        ax.set_xlim(0, 1)
        ax.set_ylim(bottom=0)
        ax.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        ax.set_xlabel("Coverage (accepted fraction)")
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=7, frameon=False)
        style_axes(ax)
    fig.suptitle(wrapped(title, 9.4, 11), fontsize=11)
    return fig


def figure_png_bytes(fig: Figure, *, dpi: int = DPI) -> bytes:
    """The figure as PNG bytes (no timestamp or version metadata, so output is stable)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, facecolor="white", metadata={"Software": None})
    return buf.getvalue()


def save_figure(fig: Figure, path: str | Path, *, dpi: int = DPI) -> None:
    """Write the figure to ``path`` as a PNG, atomically.

    Examples
    --------
    >>> import tempfile
    >>> fig = ece_temperature_figure([0.5, 1.0, 2.0], [0.10, 0.05, 0.08], fitted={"ts": 1.1})
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     save_figure(fig, Path(folder) / "ece.png")
    ...     (Path(folder) / "ece.png").read_bytes()[:4]
    b'\x89PNG'
    """
    atomic_write_bytes(Path(path), figure_png_bytes(fig, dpi=dpi))
