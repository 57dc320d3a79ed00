"""The per-group part of a comparison's report, readable at 60 groups (a language model's
tasks, ``compare --groups task``): which groups the figure draws, one table row per group,
and whether one temperature per group beats one temperature.

With many groups a report cannot draw or tabulate every method on every group: 60 tasks
times 15 methods is 900 table rows and a 60-panel figure (9 s of drawing). So:

- :func:`panel_groups`: the reliability-per-group figure draws at most
  :data:`MAX_PANELS` groups, the worst and the best by the reference method's ECE
  (:func:`reference_method`: the recommended one, else temperature scaling, else the
  uncalibrated model); every group is in the table.
- :func:`per_group_table`: a row per group, worst first: its size, accuracy, and the ECE
  with its interval of the uncalibrated model, the reference method and the group-aware
  method with the smallest worst-group gap. The table of every method on every group is
  kept up to :data:`MAX_FULL_TABLE_GROUPS` groups (every number is in ``results.json``).
- :func:`per_group_help`: one temperature per group (``temperature_groupwise``) against
  one temperature (``temperature``): the paired change in test NLL with its interval
  (:meth:`~calibkit.workflows.comparison.Comparison.nll_change`) and both worst-group gaps,
  said as "helps", "hurts" or "cannot be told apart", so "does per-task calibration help?"
  has an honest answer.

>>> per_group_help_words(-0.012, (-0.02, -0.004), 0.95)
'lowers test NLL by 0.0120 (95% CI [0.0040, 0.0200]): it helps'
>>> per_group_help_words(-0.001, (-0.004, 0.002), 0.95)
'changes test NLL by -0.0010 (95% CI [-0.0040, +0.0020]): the test part cannot tell the two apart'
"""

from __future__ import annotations

import math

from calibkit.calibrators import CALIBRATORS
from calibkit.reporting.document import Cell, Table
from calibkit.reporting.tables import format_value
from calibkit.workflows.comparison import Comparison, MethodResult

#: The most groups the reliability-per-group figure draws (the worst and the best).
MAX_PANELS = 8
#: Of :data:`MAX_PANELS`, how many are the best groups (the rest are the worst).
BEST_PANELS = 2
#: Up to this many groups the report also keeps the table of every method on every group.
MAX_FULL_TABLE_GROUPS = 12
#: One temperature per group, and the one-temperature method it is judged against.
GROUPWISE, GLOBAL = "temperature_groupwise", "temperature"


def _grouped(comp: Comparison) -> dict[str, MethodResult]:
    return {r.method: r for r in comp.rows if r.groups is not None}


def reference_method(comp: Comparison) -> str | None:
    """The method whose per-group ECEs rank the groups: the recommended method, else
    temperature scaling, else the uncalibrated model (None without groups)."""
    rows = _grouped(comp)
    rec = comp.recommendation.method if comp.recommendation is not None else None
    return next((m for m in (rec, GLOBAL, comp.rows[0].method) if m in rows), None)


def aware_method(comp: Comparison) -> str | None:
    """The group-aware method (kind ``groups``) with the smallest worst-group gap."""
    aware = [
        r
        for r in _grouped(comp).values()
        if r.method in CALIBRATORS and CALIBRATORS.kind_of(r.method) == "groups"
    ]
    if not aware:
        return None
    return min(aware, key=lambda r: r.groups.gap if r.groups is not None else math.inf).method


def ranked_groups(comp: Comparison) -> list[str]:
    """Every group, worst first by the reference method's ECE (names break ties)."""
    ref = reference_method(comp)
    if ref is None:
        return []
    ge = _grouped(comp)[ref].groups
    assert ge is not None
    return sorted(ge.names, key=lambda g: (-ge.values[g]["ece"], g))


def panel_groups(comp: Comparison, limit: int = MAX_PANELS) -> list[str]:
    """The groups the per-group figure draws: all of them up to ``limit``, else the
    ``limit - BEST_PANELS`` worst and the :data:`BEST_PANELS` best by the reference
    method's ECE, worst first."""
    ranked = ranked_groups(comp)
    if len(ranked) <= limit:
        return ranked
    best = min(BEST_PANELS, limit // 2)
    return ranked[: limit - best] + ranked[len(ranked) - best :]


def _ece_cell(row: MethodResult, group: str) -> Cell:
    ge = row.groups
    assert ge is not None
    value, ci = ge.values[group]["ece"], ge.ci.get(group, {}).get("ece")
    shown = format_value("ece", value)
    if ci is not None:
        shown += f" [{format_value('ece', ci[0])}, {format_value('ece', ci[1])}]"
    return Cell(shown)


def per_group_methods(comp: Comparison) -> list[str]:
    """The methods of :func:`per_group_table`'s columns: the uncalibrated model, the
    reference method, the group-aware method with the smallest gap (each once)."""
    rows = _grouped(comp)
    chosen = [comp.rows[0].method, reference_method(comp), aware_method(comp)]
    return list(dict.fromkeys(m for m in chosen if m is not None and m in rows))


def per_group_table(comp: Comparison) -> Table | None:
    """One row per group, worst first by the reference method's ECE: its size, accuracy
    and each of :func:`per_group_methods`' ECE with its interval (None without groups)."""
    methods = per_group_methods(comp)
    if not methods:
        return None
    rows = _grouped(comp)
    first = rows[methods[0]].groups
    assert first is not None
    sizes = dict(zip(first.names, first.sizes, strict=True))
    ref = reference_method(comp)
    table = []
    for g in ranked_groups(comp):
        accuracy = format_value("accuracy", first.values[g]["accuracy"])
        cells = [Cell(g), Cell(f"{sizes[g]:,}"), Cell(accuracy)]
        table += [[*cells, *(_ece_cell(rows[m], g) for m in methods)]]
    header = ["Group", "n", "Accuracy", *(f"ECE: {m}" for m in methods)]
    title = f"Every group on the test part, worst first by {ref}'s ECE"
    return Table(title, header, table)


def per_group_help_words(estimate: float, ci: tuple[float, float], level: float) -> str:
    """The paired NLL change of per-group temperatures, in words (see the module doc)."""
    low, high = ci
    if high < 0.0:
        return (
            f"lowers test NLL by {-estimate:.4f} ({level:.0%} CI [{-high:.4f}, {-low:.4f}]): "
            "it helps"
        )
    if low > 0.0:
        return (
            f"raises test NLL by {estimate:.4f} ({level:.0%} CI [{low:.4f}, {high:.4f}]): it hurts"
        )
    return (
        f"changes test NLL by {estimate:+.4f} ({level:.0%} CI [{low:+.4f}, {high:+.4f}]): "
        "the test part cannot tell the two apart"
    )


def per_group_help(comp: Comparison) -> str:
    """Does one temperature per group beat one temperature? The paired test-NLL change of
    ``temperature_groupwise`` against ``temperature`` with its interval, and their
    worst-group ECE gaps; empty unless both rows have groups and intervals."""
    rows = _grouped(comp)
    if GROUPWISE not in rows or GLOBAL not in rows:
        return ""
    ci = comp.nll_change(GROUPWISE, GLOBAL)
    if ci is None:
        return ""
    words = per_group_help_words(ci.estimate, (ci.low, ci.high), ci.level)
    a, b = rows[GROUPWISE].groups, rows[GLOBAL].groups
    assert a is not None
    assert b is not None
    return (
        f"One temperature per group ({GROUPWISE}) against one temperature ({GLOBAL}): it "
        f"{words}; worst-group ECE gap {100 * a.gap:.2f} against {100 * b.gap:.2f} "
        "percentage points."
    )


__all__ = [
    "BEST_PANELS",
    "MAX_FULL_TABLE_GROUPS",
    "MAX_PANELS",
    "aware_method",
    "panel_groups",
    "per_group_help",
    "per_group_help_words",
    "per_group_methods",
    "per_group_table",
    "ranked_groups",
    "reference_method",
]
