"""Progress with a time left: one rule (spent / done x left), said at most every few
seconds, after a quiet start; each step a bar record."""

from __future__ import annotations

import logging

import pytest

from calibkit.core.progress import Phase, ProgressEvent, duration, progress_of, time_left


def test_the_time_left_is_the_time_per_step_done_times_the_steps_left() -> None:
    # 3 of 10 steps in 45 s: 15 s a step, 7 steps left
    assert time_left(45.0, 3, 10) == 105.0
    assert time_left(45.0, 10, 10) == 0.0
    assert time_left(0.0, 0, 10) == 0.0  # nothing done: nothing to go by
    assert duration(105.0) == "1m45s"
    assert duration(59.4) == "59s"
    assert duration(7322) == "2h02m"


def _phase(
    caplog: pytest.LogCaptureFixture, steps: list[float], total: int
) -> tuple[list[str], list[ProgressEvent]]:
    """The permanent lines and the bar events of a phase whose steps end at ``steps``."""
    now = [0.0]
    log = logging.getLogger("calibkit.test_progress")
    with caplog.at_level(logging.DEBUG, logger="calibkit.test_progress"):
        phase = Phase(log, "work", total, clock=lambda: now[0])
        for k, t in enumerate(steps, 1):
            now[0] = t
            phase.step(f"step {k}")
    records = [r for r in caplog.records if r.name == "calibkit.test_progress"]
    lines = [r.getMessage() for r in records if r.levelno == logging.INFO]
    bars = [e for r in records if r.levelno == logging.DEBUG if (e := progress_of(r))]
    return lines, bars


def test_a_short_phase_draws_its_bar_but_writes_no_line(caplog: pytest.LogCaptureFixture) -> None:
    lines, bars = _phase(caplog, [0.5, 1.0, 1.5], 3)
    assert lines == []
    assert [(e.step, e.total) for e in bars] == [(0, 3), (1, 3), (2, 3), (3, 3)]


def test_a_long_phase_says_where_it_is_every_few_seconds(caplog: pytest.LogCaptureFixture) -> None:
    # 10 steps of 4 s: a line at 4 s (past the quiet 2 s), then every >= 5 s, and the last
    lines, _ = _phase(caplog, [4.0 * k for k in range(1, 11)], 10)
    assert lines == [
        "work 1/10 step 1  4s spent, about 36s left",
        "work 3/10 step 3  12s spent, about 28s left",
        "work 5/10 step 5  20s spent, about 20s left",
        "work 7/10 step 7  28s spent, about 12s left",
        "work 9/10 step 9  36s spent, about 4s left",
        "work 10/10 step 10  40s spent, about 0s left",
    ]


def test_steps_skipped_at_once_count(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    log = logging.getLogger("calibkit.test_progress")
    with caplog.at_level(logging.DEBUG, logger="calibkit.test_progress"):
        phase = Phase(log, "work", 5, clock=lambda: now[0])
        now[0] = 3.0
        phase.step("a left out", 3)
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert lines == ["work 3/5 a left out  3s spent, about 2s left"]
