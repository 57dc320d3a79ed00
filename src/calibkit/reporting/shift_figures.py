"""Ovadia-style box plots of calibration under shift: one panel per metric, the severity on
the x axis (clean, then 1..5), at each severity one box per method over the corruptions.

Imports matplotlib: reports import this module only when they draw.

>>> from calibkit.workflows.shift import ShiftRow
>>> rows = [ShiftRow(m, c, s, 10, {"ece": v}) for m, v in (("none", 0.2), ("temperature", 0.1))
...         for c, s in (("clean", 0), ("a", 1), ("b", 1))]
>>> fig = shift_boxplots(rows, ("ece",), title="demo")
>>> [t.get_text() for t in fig.axes[0].get_xticklabels()]
['clean', '1']
>>> len(fig.axes[0].get_legend().get_texts())
2
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from calibkit.core.errors import InputError
from calibkit.reporting.figures import new_figure, style_axes, wrapped
from calibkit.workflows.shift import ShiftRow

__all__ = ["shift_boxplots"]

_COLOURS = ("#555555", "#d1495b", "#2a9d8f", "#e9a03b", "#7b5ea7", "#3d5a80", "#8c564b")


def shift_boxplots(
    rows: Sequence[ShiftRow],
    metrics: Sequence[str],
    *,
    title: str,
    target: float | None = None,
    labels: Mapping[str, tuple[str, bool]] | None = None,
) -> Figure:
    """One panel per name in ``metrics``: at each severity, a box per method (one colour
    each) over the corruptions; severity 0 is labelled ``clean``. Methods whose values
    are all NaN for a metric are left out of its panel; ``target`` draws a dashed line
    (e.g. the conformal target coverage, a fraction) on the ``coverage`` panel.
    ``labels``: each metric's axis label and whether it is shown in percent (the report
    reads them from the metric registry; by default the name, as fractions)."""
    if not rows or not metrics:
        raise InputError("rows/metrics", "at least one row and one metric", f"{len(rows)}")
    methods = list(dict.fromkeys(r.method for r in rows))
    severities = sorted({r.severity for r in rows})
    fig = new_figure(4.2 * len(metrics), 3.6)
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    width = 0.8 / len(methods)
    for ax, metric in zip(axes, metrics, strict=True):
        label, pct = (labels or {}).get(metric, (metric, False))
        scale = 100.0 if pct else 1.0
        for j, method in enumerate(methods):
            for i, s in enumerate(severities):
                vals = [
                    scale * r.values[metric]
                    for r in rows
                    if r.method == method and r.severity == s and not math.isnan(r.values[metric])
                ]
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
        if target is not None and metric == "coverage":
            ax.axhline(scale * target, color="black", linestyle="--", linewidth=0.8)
        ax.set_xticks(np.arange(len(severities)))
        ax.set_xticklabels(["clean" if s == 0 else str(s) for s in severities])
        ax.set_xlim(-0.5, len(severities) - 0.5)
        ax.set_xlabel("Corruption severity")
        ax.set_ylabel(label)
        style_axes(ax)
    shown = [
        m
        for m in methods
        if any(r.method == m and not math.isnan(r.values[k]) for r in rows for k in metrics)
    ]
    handles = [
        Patch(facecolor=_COLOURS[methods.index(m) % len(_COLOURS)], alpha=0.75, label=m)
        for m in shown
    ]
    axes[0].legend(handles=handles, fontsize=7, frameon=False)
    fig.suptitle(wrapped(title, 4.2 * len(metrics) - 0.4, 11), fontsize=11)
    return fig
