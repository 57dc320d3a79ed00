"""The layout and style every calibkit figure follows, and how a figure is written.

Every figure is a plain :class:`matplotlib.figure.Figure` started by :func:`new_figure`
(constrained layout, the Agg canvas: nothing touches pyplot's global state and no display
is needed), its axes in the house style (:func:`style_axes`), its text safe from mathtext
(:func:`plain`) and wrapped to its width (:func:`wrapped`), an ECE stated above the axes
beside its noise floor (:func:`ece_text`, :func:`title_with_ece`), the legend under the
figure with each thing listed once (:func:`figure_legend`, :func:`below`); it is written as
PNG bytes without metadata (:func:`figure_png_bytes`, :func:`save_figure`). The reliability
diagrams (:mod:`calibkit.reporting.figures`), the curves (:mod:`calibkit.reporting.curves`),
the shift box plots and the study's figures are drawn with these.

>>> fig = new_figure(2.0, 2.0)
>>> ax = fig.add_subplot()
>>> style_axes(ax)
>>> figure_png_bytes(fig)[:8] == b"\\x89PNG\\r\\n\\x1a\\n"
True
"""

from __future__ import annotations

import io
import math
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine
from matplotlib.ticker import Formatter
from matplotlib.transforms import ScaledTranslation

from calibkit.io.atomic import atomic_write_bytes

if TYPE_CHECKING:
    pass


DPI = 120


#: The gid of the line (or text) giving an ECE beside its noise floor, and of a floor line.
ECE_GID = "ece-line"


FLOOR_GID = "ece-floor"


FLOOR_LABEL = "Noise floor"


_BAR = "#3366a8"


_GAP = "#d1495b"


_HIST = "#7f8fa6"


_IDEAL = "#555555"


_CONF_LINE = "#d1495b"


_ACC_LINE = "#1b3a63"


_FLOOR = "#8c564b"


_FITTED_COLOURS = ("#d1495b", "#2a9d8f", "#e9a03b", "#7b5ea7", "#3d5a80")


#: Unit-interval axes reach this far past 0 and 1, so the bars and ticks at the ends show whole.
_MARGIN = 0.05


def new_figure(width: float, height: float) -> Figure:
    """An empty figure of ``width`` x ``height`` inches, constrained layout, Agg canvas
    (no pyplot state); every calibkit figure starts here."""
    fig = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def spaced(fig: Figure) -> None:
    """Space the panels of a multi-row figure (constrained layout) so that a row's titles
    clear the tick and axis labels of the row above."""
    engine = fig.get_layout_engine()
    if isinstance(engine, ConstrainedLayoutEngine):
        engine.set(h_pad=0.11, w_pad=0.06, hspace=0.08, wspace=0.04)


def plain(text: str) -> str:
    """``text`` with ``$`` escaped, so matplotlib never reads user text as mathtext."""
    return text.replace("$", r"\$")


def wrapped(text: str, width_inches: float, fontsize: float) -> str:
    """``text`` (``$`` escaped, see :func:`plain`) broken into lines that fit ``width_inches``
    at ``fontsize`` points, so a long title wraps instead of running off the figure. The
    lines are balanced (as narrow as the same number of lines allows), so a wrap never
    leaves one short word alone on the last line.

    >>> wrapped("a" * 10 + " " + "b" * 10, 1.0, 10)
    'aaaaaaaaaa\\nbbbbbbbbbb'
    >>> print(wrapped("cifar10_resnet18.npz: test-part ECE of the uncalibrated logits / T", 5, 11))
    cifar10_resnet18.npz: test-part
    ECE of the uncalibrated logits / T
    """
    per_line = max(10, int(width_inches * 72 / (0.62 * fontsize)))
    text = plain(text)
    lines = textwrap.wrap(text, per_line, break_on_hyphens=False)
    width = per_line
    while len(lines) > 1 and width > 10:
        narrower = textwrap.wrap(text, width - 1, break_on_hyphens=False)
        if len(narrower) > len(lines):
            break
        width -= 1
    return "\n".join(textwrap.wrap(text, width, break_on_hyphens=False))


def unit_limits(ax: Axes, *, y: bool = True) -> None:
    """Axis limits just past [0, 1] (a tick every 0.2) so the ends show whole."""
    ticks = np.linspace(0.0, 1.0, 6)
    ax.set_xlim(-_MARGIN, 1 + _MARGIN)
    ax.set_xticks(ticks)
    if y:
        ax.set_ylim(-_MARGIN, 1 + _MARGIN)
        ax.set_yticks(ticks)


class PercentTicks(Formatter):
    """Fractions as percent tick labels with as few decimals as the ticks need to read
    exactly (``2.5%`` is never shown as ``2%``; ``10%`` never as ``10.0%``).

    >>> PercentTicks().format_ticks([0.0, 0.025, 0.05, 0.1])
    ['0.0%', '2.5%', '5.0%', '10.0%']
    >>> PercentTicks().format_ticks([0.0, 0.2, 0.4])
    ['0%', '20%', '40%']
    """

    def __call__(self, x: float, pos: int | None = None) -> str:
        return self.format_ticks([x])[0]

    def format_ticks(self, values: Sequence[float]) -> list[str]:
        pct = [100.0 * float(v) for v in values]
        digits = next((d for d in range(4) if all(abs(round(v, d) - v) < 1e-6 for v in pct)), 4)
        return [f"{v:.{digits}f}%" for v in pct]


def style_axes(ax: Axes) -> None:
    """The house style of an axes: no top or right spine, a light grid behind the data."""
    ax.spines[["top", "right"]].set_visible(False)
    ax.grid(True, color="#e4e4e4", linewidth=0.7)
    ax.set_axisbelow(True)


def ece_text(ece: float, floor: float | None = None, n: float | None = None) -> str:
    """The ECE as a figure states it: beside its noise floor (where known) and the sample size.

    >>> ece_text(0.0535, 0.0061, 10000)
    'ECE = 5.35%  (noise floor 0.61%),  n = 10,000'
    >>> ece_text(0.0535)
    'ECE = 5.35%'
    """
    text = f"ECE = {100 * ece:.2f}%"
    if floor is not None and math.isfinite(floor):
        text += f"  (noise floor {100 * floor:.2f}%)"
    return text + (f",  n = {n:,.0f}" if n is not None else "")


def title_with_ece(
    ax: Axes,
    title: str,
    ece_line: str | None,
    *,
    fontsize: float,
    ece_fontsize: float | None = None,
    color: str = "black",
) -> None:
    """``title`` above ``ax`` and, between it and the axes, ``ece_line`` (gid
    :data:`ECE_GID`): outside the data, so it covers nothing."""
    if ece_line is None:
        ax.set_title(title, fontsize=fontsize, color=color)
        return
    size = ece_fontsize or fontsize - 1
    ax.set_title(title, fontsize=fontsize, color=color, pad=7 + 1.4 * size)
    ax.annotate(
        ece_line, (0.5, 1.0), xycoords="axes fraction", xytext=(0, 4),
        textcoords="offset points", ha="center", va="bottom", fontsize=size, gid=ECE_GID,
    )  # fmt: skip


def below(ax: Axes, points: float) -> dict[str, Any]:
    """Legend placement ``points`` under the bottom of ``ax`` (clear of its tick labels and
    axis label, whatever the axes' size): ``ax.legend(loc="upper center", **below(ax, 34))``."""
    fig = ax.get_figure()
    assert fig is not None
    shift = ScaledTranslation(0, -points / 72, fig.dpi_scale_trans)
    return {"bbox_to_anchor": (0.5, 0.0), "bbox_transform": ax.transAxes + shift}


def figure_legend(fig: Figure, axes: Sequence[Axes], *, ncols: int = 2) -> None:
    """One legend for ``fig`` under its axes: every labelled artist of ``axes``, each label
    once (so it covers no data and lists each thing once)."""
    seen: dict[str, Any] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            seen.setdefault(label, handle)
    fig.legend(
        list(seen.values()), list(seen), loc="outside lower center", ncols=ncols, fontsize=8,
        frameon=False,
    )  # fmt: skip


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
    >>> from calibkit import reliability_figure, reliability_stats
    >>> stats = reliability_stats([0, 1, 1], probs=[[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]])
    >>> fig = reliability_figure(stats, title="My model")
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     save_figure(fig, Path(folder) / "rel.png")
    ...     (Path(folder) / "rel.png").read_bytes()[:4]
    b'\x89PNG'
    """
    atomic_write_bytes(Path(path), figure_png_bytes(fig, dpi=dpi))
