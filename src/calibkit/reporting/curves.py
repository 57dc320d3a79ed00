"""Curves of a calibration report: the ECE against the temperature (where temperature
scaling lands on it), and the risk-coverage curves of selective prediction.

They follow the layout of :mod:`calibkit.reporting.figure_style` (the legend under the
axes, the noise floor on every ECE panel, titles wrapped into balanced lines).

>>> t, e = [0.5, 1.0, 2.0], [0.10, 0.05, 0.08]
>>> fig = ece_temperature_figure(t, e, fitted={"ts": 1.1}, floor=0.02)
>>> FLOOR_GID in [line.get_gid() for line in fig.axes[0].lines]  # the floor is drawn
True
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from calibkit.core.errors import InputError
from calibkit.reporting.figure_style import (
    _BAR,
    _FITTED_COLOURS,
    _FLOOR,
    _IDEAL,
    FLOOR_GID,
    FLOOR_LABEL,
    PercentTicks,
    figure_legend,
    new_figure,
    plain,
    style_axes,
    wrapped,
)

if TYPE_CHECKING:
    from calibkit.metrics.selective import RiskCoverage


def ece_temperature_figure(
    temperatures: object,
    eces: object,
    *,
    fitted: Mapping[str, float],
    title: str = "ECE against the temperature",
    floor: float | None = None,
) -> Figure:
    """ECE (y, percent) of ``softmax(logits / T)`` against T, marking fitted temperatures.

    ``fitted`` maps a method name to the temperature it chose; T = 1 (the uncalibrated
    model) and the minimum of the curve are marked too. ``floor``: the noise floor of the
    ECE at the first fitted temperature (the ECE a perfectly calibrated model with those
    confidences shows), drawn as a dotted line (gid :data:`FLOOR_GID`): the curve cannot
    be read below it. The legend sits under the axes.

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
    fig = new_figure(6.4, 4.8)
    ax = fig.subplots()
    ax.plot(t, e, color=_BAR, linewidth=1.8, label="ECE on the test part")
    _mark_temperatures(ax, t, e, fitted)
    if floor is not None and math.isfinite(floor):
        where = f" at T = {next(iter(fitted.values())):.2f}" if fitted else ""
        ax.axhline(
            floor, color=_FLOOR, linestyle=(0, (1, 1.5)), linewidth=1.4, gid=FLOOR_GID,
            label=f"{FLOOR_LABEL}{where}: {100 * floor:.2f}%",
        )  # fmt: skip
    ax.set_xscale("log")
    ax.set_xlim(t[0], t[-1])
    ticks = [v for v in (0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10) if t[0] <= v <= t[-1]]
    ax.set_xticks(ticks, [f"{v:g}" for v in ticks])
    ax.minorticks_off()
    ax.set_ylim(0, max(float(np.nanmax(e)), floor or 0.0) * 1.05)
    ax.yaxis.set_major_formatter(PercentTicks())
    ax.set_xlabel("Temperature T (log scale)")
    ax.set_ylabel("ECE")
    ax.set_title(wrapped(title, 6.2, 11), fontsize=11)
    figure_legend(fig, [ax])
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
        # ten colours, then the same ten dashed: no two curves look alike
        style = {"color": f"C{i % 10}", "linestyle": ("-", "--", "-.", ":")[i // 10 % 4]}
        left.plot(
            cov[1:], rc.risk[keep], linewidth=1.5, label=f"{name} (AURC {rc.aurc:.2%})", **style
        )
        grisk = np.r_[0.0, rc.generalized_risk[keep]]
        right.plot(cov, grisk, linewidth=1.5, label=f"{name} (AUGRC {rc.augrc:.2%})", **style)
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
        ax.xaxis.set_major_formatter(PercentTicks())
        ax.yaxis.set_major_formatter(PercentTicks())
        ax.set_xlabel("Coverage (accepted fraction)")
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=7, frameon=False)
        style_axes(ax)
    fig.suptitle(wrapped(title, 9.4, 11), fontsize=11)
    return fig
