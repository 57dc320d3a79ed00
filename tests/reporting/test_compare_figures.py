"""The figures of a comparison's report (``calibkit.reporting.compare_figures``)."""

from __future__ import annotations

import logging

import pytest

from calibkit.core.progress import progress_of
from calibkit.reporting.compare_figures import comparison_figures
from calibkit.workflows.comparison import Comparison


def test_drawing_the_figures_is_a_phase_with_a_step_per_figure(
    comp: Comparison, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, logger="calibkit.reporting.compare_figures"):
        figures = comparison_figures(comp, "data.npz")
    events = [e for r in caplog.records if r.levelno == logging.DEBUG if (e := progress_of(r))]
    n = len(figures)  # the grid, ECE(T), risk-coverage and one per row
    assert [(e.step, e.total) for e in events] == [(k, n) for k in range(n + 1)]
    assert events[0].label == f"drawing {n} figures"
