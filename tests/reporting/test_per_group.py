"""The per-group part of a comparison's report at many groups (issue #44): at most 8
panels, the worst and the best; a row per group, worst first; and whether one temperature
per group beats one temperature, said from the paired NLL interval."""

from __future__ import annotations

import numpy as np
import pytest

from calibkit import Resampling, as_outputs
from calibkit.reporting.compare_report import compare_report
from calibkit.reporting.compare_verdict import compare_verdict
from calibkit.reporting.per_group import (
    MAX_PANELS,
    panel_groups,
    per_group_help,
    per_group_table,
    ranked_groups,
)
from calibkit.workflows.compare import compare_parts
from calibkit.workflows.comparison import Comparison

pytestmark = pytest.mark.usefixtures("one_thread")
METHODS = ["temperature", "temperature_groupwise"]


def _tasks(scales: np.ndarray, n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``n`` four-option questions over ``len(scales)`` tasks, the gold drawn from
    softmax(z), the model reporting softmax(scale_task * z)."""
    rng = np.random.default_rng(seed)
    task = np.arange(n) % len(scales)
    z = rng.normal(size=(n, 4)) + 1.5 * np.eye(4)[rng.integers(0, 4, n)]
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    y = (rng.uniform(size=(n, 1)) > p.cumsum(1)).sum(1)
    names = np.array([f"task{t:02d}" for t in range(len(scales))])
    return scales[task][:, None] * z, y, names[task]


@pytest.fixture(scope="module")
def many() -> Comparison:
    """20 tasks, one temperature the truth (every task 2.5 times too sharp)."""
    z, y, g = _tasks(np.full(20, 2.5), 4_000, 0)
    return compare_parts(
        as_outputs(y, logits=z), groups=g, methods=METHODS, resampling=Resampling(n_boot=50)
    )


def test_panels_are_the_worst_and_the_best(many: Comparison) -> None:
    ranked = ranked_groups(many)
    ge = many.row("temperature").groups  # the recommended method ranks the groups
    assert ge is not None
    assert many.recommendation is not None
    assert many.recommendation.method == "temperature"
    ece = [ge.values[g]["ece"] for g in ranked]
    assert ece == sorted(ece, reverse=True)
    assert sorted(ranked) == ge.names
    drawn = panel_groups(many)
    assert len(drawn) == MAX_PANELS
    assert drawn == ranked[:6] + ranked[-2:]
    assert panel_groups(many, limit=30) == ranked  # all of them when they fit


def test_one_row_per_group_worst_first(many: Comparison) -> None:
    table = per_group_table(many)
    assert table is not None
    assert [r[0].text for r in table.rows] == ranked_groups(many)
    assert table.header[3:] == ["ECE: none", "ECE: temperature", "ECE: temperature_groupwise"]
    ge = many.row("temperature").groups
    assert ge is not None
    g = table.rows[0][0].text
    low, high = ge.ci[g]["ece"]
    assert (
        table.rows[0][4].text
        == f"{100 * ge.values[g]['ece']:.2f}% [{100 * low:.2f}%, {100 * high:.2f}%]"
    )


def test_report_draws_a_bounded_figure_and_keeps_every_group_in_a_table(many: Comparison) -> None:
    report = compare_report(many, title="t", name="many.jsonl")
    figures = {f.name: f for f in report.document.figures()}
    assert "worst and 2 best of 20 groups" in figures["reliability_groups.png"].caption
    assert set(figures) == {
        "reliability_grid.png",
        "ece_temperature.png",
        "risk_coverage.png",
        "reliability_groups.png",
        "reliability_before_after.png",
    }
    before_after = figures["reliability_before_after.png"].caption  # drawn once each
    assert before_after.endswith(": none, temperature, temperature_groupwise")
    titles = [t.title for t in _tables(report.document.body)]
    assert "Every group on the test part, worst first by temperature's ECE" in titles
    # 20 groups x 3 methods: the table of every method on every group is left to the JSON
    assert "ECE, NLL and accuracy per group on the test part" not in titles
    assert len(report.results["methods"][1]["groups"]["groups"]) == 20


def _tables(blocks: list) -> list:
    from calibkit.reporting.document import Section, Table

    found = []
    for b in blocks:
        if isinstance(b, Table):
            found.append(b)
        elif isinstance(b, Section):
            found += _tables(b.blocks)
    return found


def test_per_task_temperatures_help_when_the_tasks_differ() -> None:
    """Tasks 1.2 and 4 times too sharp: one temperature per task lowers the test NLL, and
    the paired interval says so; the verdict repeats it."""
    z, y, g = _tasks(np.array([1.2, 4.0, 1.2, 4.0]), 4_000, 1)
    comp = compare_parts(
        as_outputs(y, logits=z), groups=g, methods=METHODS, resampling=Resampling(n_boot=50)
    )
    ci = comp.nll_change("temperature_groupwise", "temperature")
    assert ci is not None
    assert ci.high < 0
    said = per_group_help(comp)
    assert f"lowers test NLL by {-ci.estimate:.4f}" in said
    assert said.endswith("percentage points.")
    assert "it helps" in said
    assert said in compare_verdict(comp).detail


def test_per_task_temperatures_do_not_help_when_one_temperature_is_the_truth(
    many: Comparison,
) -> None:
    ci = many.nll_change("temperature_groupwise", "temperature")
    assert ci is not None
    assert ci.high >= 0  # 20 temperatures from 100 questions each: no better than one
    assert "it helps" not in per_group_help(many)


def test_no_sentence_without_both_rows_or_intervals() -> None:
    z, y, g = _tasks(np.array([1.0, 2.0]), 400, 2)
    out = as_outputs(y, logits=z)
    assert (
        per_group_help(
            compare_parts(out, groups=g, methods=["temperature"], resampling=Resampling(n_boot=10))
        )
        == ""
    )
    assert (
        per_group_help(
            compare_parts(out, groups=g, methods=METHODS, resampling=Resampling(n_boot=0))
        )
        == ""
    )
