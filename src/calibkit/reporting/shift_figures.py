"""Ovadia-style box plots of calibration under shift: one panel per metric, the severity on
the x axis (clean, then 1..5), at each severity one box per method over the corruptions.

Each panel is titled with the metric's label from the registry
(:func:`calibkit.reporting.tables.column_info`), never its key; the ECE panel marks each
box's noise floor (the median over the corruptions of ``ece_floor``, when the rows carry
it). One legend, under the panels. Imports matplotlib: reports import this module only when
they draw.

>>> from calibkit.workflows.shift import ShiftRow
>>> rows = [ShiftRow(m, c, s, 10, {"ece": v, "ece_floor": 0.02})
...         for m, v in (("none", 0.2), ("temperature", 0.1))
...         for c, s in (("clean", 0), ("a", 1), ("b", 1))]
>>> fig = shift_boxplots(rows, ("ece",), title="demo")
>>> [t.get_text() for t in fig.axes[0].get_xticklabels()], fig.axes[0].get_title()
(['clean', '1'], 'ECE')
>>> [t.get_text() for t in fig.legends[0].get_texts()]
['none', 'temperature', 'Noise floor (median over the corruptions)']
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from calibkit.core.errors import InputError
from calibkit.reporting.figure_style import FLOOR_GID, new_figure, style_axes, wrapped
from calibkit.reporting.tables import column_info
from calibkit.workflows.shift import ShiftRow

__all__ = ["shift_boxplots"]

_COLOURS = ("#555555", "#d1495b", "#2a9d8f", "#e9a03b", "#7b5ea7", "#3d5a80", "#8c564b")
FLOOR_LABEL = "Noise floor (median over the corruptions)"
TARGET_LABEL = "Target coverage"


def shift_boxplots(
    rows: Sequence[ShiftRow],
    metrics: Sequence[str],
    *,
    title: str,
    target: float | None = None,
    labels: Mapping[str, tuple[str, bool]] | None = None,
) -> Figure:
    """One panel per name in ``metrics``, titled with its registry label: at each severity,
    a box per method (one colour each) over the corruptions; severity 0 is labelled
    ``clean``. Methods whose values are all NaN for a metric are left out of its panel;
    ``target`` draws a dashed line (e.g. the conformal target coverage, a fraction) on the
    ``coverage`` panel; the ``ece`` panel marks each box's noise floor (dotted, gid
    :data:`~calibkit.reporting.figure_style.FLOOR_GID`) when the rows carry ``ece_floor``.
    ``labels``: each metric's axis label and whether it is shown in percent (by default
    the registry's label, with ``(%)`` for a percentage)."""
    if not rows or not metrics:
        raise InputError("rows/metrics", "at least one row and one metric", f"{len(rows)}")
    methods = list(dict.fromkeys(r.method for r in rows))
    severities = sorted({r.severity for r in rows})
    fig = new_figure(4.2 * len(metrics), 4.0)
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    width = 0.8 / len(methods)
    extra: dict[str, Artist] = {}
    for ax, metric in zip(axes, metrics, strict=True):
        info = column_info(metric)
        default = (f"{info.label} (%)" if info.percent else info.label, info.percent)
        label, pct = (labels or {}).get(metric, default)
        scale = 100.0 if pct else 1.0
        for j, method in enumerate(methods):
            for i, s in enumerate(severities):
                mine = [r for r in rows if r.method == method and r.severity == s]
                vals = [scale * r.values[metric] for r in mine if not math.isnan(r.values[metric])]
                if not vals:
                    continue
                colour = _COLOURS[j % len(_COLOURS)]
                pos = i - 0.4 + width * (j + 0.5)
                ax.boxplot(
                    [vals],
                    positions=[pos],
                    widths=width * 0.85,
                    patch_artist=True,
                    showfliers=True,
                    boxprops={"facecolor": colour, "alpha": 0.75, "linewidth": 0.6},
                    medianprops={"color": "black", "linewidth": 0.8},
                    whiskerprops={"linewidth": 0.6},
                    capprops={"linewidth": 0.6},
                    flierprops={"markersize": 2, "markeredgecolor": colour},
                    manage_ticks=False,
                )
                if metric == "ece":
                    floors = [r.values.get("ece_floor", math.nan) for r in mine]
                    if finite := [v for v in floors if math.isfinite(v)]:
                        floor = float(np.median(finite))
                        half = width * 0.5
                        ax.hlines(
                            scale * floor, pos - half, pos + half, colors="black",
                            linestyles=(0, (1, 1)), linewidth=1.3, gid=FLOOR_GID, zorder=4,
                        )  # fmt: skip
                        extra[FLOOR_LABEL] = Line2D(
                            [], [], color="black", linestyle=(0, (1, 1)), linewidth=1.3
                        )
        if target is not None and metric == "coverage":
            ax.axhline(scale * target, color="black", linestyle="--", linewidth=0.8)
            extra[f"{TARGET_LABEL} ({target:.0%})"] = Line2D(
                [], [], color="black", linestyle="--", linewidth=0.8
            )
        _severity_axis(ax, severities)
        ax.set_title(info.label, fontsize=10)
        ax.set_ylabel(label)
        style_axes(ax)
    shown = [
        m
        for m in methods
        if any(r.method == m and not math.isnan(r.values[k]) for r in rows for k in metrics)
    ]
    handles: list[Artist] = [
        Patch(facecolor=_COLOURS[methods.index(m) % len(_COLOURS)], alpha=0.75, label=m)
        for m in shown
    ]
    for name, handle in extra.items():
        handle.set_label(name)
        handles.append(handle)
    fig.legend(
        handles=handles, loc="outside lower center", ncols=min(len(handles), 8), fontsize=8,
        frameon=False,
    )  # fmt: skip
    fig.suptitle(wrapped(title, 4.2 * len(metrics) - 0.4, 11), fontsize=11)
    return fig


def _severity_axis(ax: Axes, severities: Sequence[int]) -> None:
    ax.set_xticks(np.arange(len(severities)))
    ax.set_xticklabels(["clean" if s == 0 else str(s) for s in severities])
    ax.set_xlim(-0.5, len(severities) - 0.5)
    ax.set_xlabel("Corruption severity")
