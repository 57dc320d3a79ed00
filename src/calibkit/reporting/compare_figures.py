"""The figures of a comparison's report (``calibkit compare``, ``calibkit demo``): the
reliability diagrams before and after calibration (:data:`BEFORE_AFTER`, the one figure
shown unfolded, of :func:`single_methods`), every method's (:data:`GRID`), the test-part
ECE against the temperature (:data:`CURVE`), the risk-coverage curves (:data:`RC`) and, with
groups, the reliability per group (:data:`GROUPS_FIGURE`, of
:func:`group_figure_methods`); each a :class:`~calibkit.reporting.document.Figure` of the
report's ``figures/`` folder, drawn as one progress phase.
"""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING

from calibkit.calibrators import CALIBRATORS
from calibkit.core.progress import Phase
from calibkit.reporting.curves import ece_temperature_figure, risk_coverage_figure
from calibkit.reporting.document import Figure
from calibkit.reporting.figure_style import figure_png_bytes
from calibkit.reporting.figures import group_reliability_figure, reliability_grid
from calibkit.reporting.per_group import BEST_PANELS, aware_method, panel_groups, reference_method
from calibkit.workflows.comparison import Comparison

if TYPE_CHECKING:
    from matplotlib.figure import Figure as MplFigure


_log = logging.getLogger(__name__)


#: The one figure shown unfolded: the reliability diagrams of :func:`single_methods`.
BEFORE_AFTER = "reliability_before_after.png"


#: Folded: every method's reliability diagram, and the test-part ECE against temperature.
GRID, CURVE = "reliability_grid.png", "ece_temperature.png"


#: The risk-coverage curves of every method (selective prediction), folded too.
RC = "risk_coverage.png"


#: Reliability per group (with groups), folded too.
GROUPS_FIGURE = "reliability_groups.png"


def comparison_figures(comp: Comparison, name: str) -> list[Figure]:
    """Every figure of the report: the reliability diagrams before and after calibration
    (:func:`single_methods`), the grid of every method, ECE(T), the risk-coverage curves,
    and with groups the reliability per group.

    ``name`` says what was compared (a file's name, not its path); every title holds it,
    so each figure reads on its own.
    """
    curves = {r.method: r.risk_coverage for r in comp.rows if r.risk_coverage is not None}
    n = 3 + bool(curves)
    phase = Phase(_log, f"drawing {n} figures", n)

    def png(fig: MplFigure) -> bytes:
        data = figure_png_bytes(fig)
        phase.step()
        return data

    panels = {
        r.method: (
            r.method,
            r.reliability,
            r.evaluation.values["ece"],
            r.evaluation.values.get("ece_floor"),
        )
        for r in comp.rows
    }
    chosen = single_methods(comp)
    before_after = reliability_grid(
        [panels[m] for m in chosen],
        ncols=len(chosen),
        title=f"{name}: reliability on the test part, before and after calibration",
    )
    grid = reliability_grid(
        list(panels.values()), title=f"{name}: reliability on the test part, every method"
    )
    floors = {r.method: r.evaluation.values.get("ece_floor") for r in comp.rows}
    first = next(iter(comp.fitted_temperatures), None)
    curve = ece_temperature_figure(
        comp.temperatures,
        comp.ece_curve,
        fitted=comp.fitted_temperatures,
        title=f"{name}: test-part ECE against the temperature",
        floor=floors.get(first) if first is not None else None,
    )
    shown = ", ".join(chosen)
    figs = [
        Figure(BEFORE_AFTER, f"Reliability diagrams: {shown}", png(before_after)),
        Figure(GRID, "Reliability diagrams, every method", png(grid)),
        Figure(CURVE, "Test-part ECE versus temperature", png(curve)),
    ]
    if curves:
        rc = risk_coverage_figure(curves, title=f"{name}: risk-coverage on the test part")
        figs.append(Figure(RC, "Risk-coverage curves, every method", png(rc)))
    group_figure = _group_figure(comp, name)
    if group_figure is not None:
        figs.append(group_figure)
    return figs


def single_methods(comp: Comparison) -> list[str]:
    """The methods of the figure shown first (:data:`BEFORE_AFTER`, one panel each): the
    uncalibrated model, the recommended method (else temperature scaling), and with groups
    the group-aware method with the smallest worst-group gap. Every method is in the folded
    grid; a figure of each again cost 0.3 s a method (15 methods: 4.5 of a report's 17 s),
    and a diagram of each of these on its own drew them twice (issue #46, item 6).
    """
    rec = comp.recommendation.method if comp.recommendation is not None else "temperature"
    names = [r.method for r in comp.rows]
    chosen = [names[0], *(m for m in (rec, aware_method(comp)) if m in names)]
    return list(dict.fromkeys(chosen))


def group_figure_methods(comp: Comparison) -> list[str]:
    """The methods of the per-group reliability figure: the uncalibrated model, the
    recommended method (else temperature scaling), the group-aware method with the
    smallest worst-group gap, and the method with the smallest worst-group gap of all (the
    one the verdict names, group-aware or not)."""
    names = [r.method for r in comp.rows if r.group_reliability is not None]
    rec = comp.recommendation.method if comp.recommendation is not None else "temperature"
    chosen = [names[0]] if names else []
    chosen += [m for m in (rec, "temperature") if m in names][:1]
    aware = [
        r
        for r in comp.rows
        if r.method in names
        and r.method in CALIBRATORS
        and CALIBRATORS.kind_of(r.method) == "groups"
    ]
    if aware:
        chosen.append(min(aware, key=lambda r: r.groups.gap if r.groups else math.inf).method)
    if comp.smallest_gap in names:  # the verdict names it: the figure draws it
        chosen.append(comp.smallest_gap)
    return list(dict.fromkeys(chosen))


def _group_figure(comp: Comparison, name: str) -> Figure | None:
    methods = group_figure_methods(comp)
    if not methods:
        return None
    rows = {r.method: r for r in comp.rows}
    first = rows[methods[0]].groups
    assert first is not None
    sizes = dict(zip(first.names, first.sizes, strict=True))
    drawn = panel_groups(comp)
    panels = []
    for g in drawn:
        n = sizes[g]
        lines = {}
        for m in methods:
            ge, bins = rows[m].groups, rows[m].group_reliability
            assert ge is not None
            assert bins is not None
            lines[m] = (bins[g], ge.values[g]["ece"], ge.values[g].get("ece_floor"))
        panels.append((f"group {g} ({n:,} samples)", lines))
    fig = group_reliability_figure(panels, title=f"{name}: reliability per group, test part")
    caption = "Reliability per group: " + ", ".join(methods)
    if len(drawn) < len(first.names):
        best = min(BEST_PANELS, len(drawn) // 2)
        caption += (
            f"; the {len(drawn) - best} worst and {best} best of {len(first.names)} groups by "
            f"{reference_method(comp)}'s ECE (every group: the table)"
        )
    return Figure(GROUPS_FIGURE, caption, figure_png_bytes(fig))
