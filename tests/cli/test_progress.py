"""Tests of the command line's progress display: log records drawn on stderr."""

from __future__ import annotations

import io
import itertools
import logging

import pytest

from calibkit.cli import progress as progress_module
from calibkit.cli.progress import ProgressDisplay, show_progress
from calibkit.core.progress import ProgressEvent, report_step

log = logging.getLogger("calibkit.tests")


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def _steps(label: str, total: int, texts: list[str]) -> None:
    for step, text in enumerate(texts, start=1):
        report_step(log, ProgressEvent(label, step, total, text))


def _epoch(label: str, text: str) -> None:
    report_step(log, ProgressEvent(label, 1, 1, text), logging.INFO)


def test_off_a_tty_only_permanent_lines_are_written() -> None:
    stream = io.StringIO()
    with show_progress(stream=stream):
        _steps("epoch 1/3", 5, ["loss 0.1"] * 5)
        assert stream.getvalue() == ""
        _epoch("epoch 1/3", "loss 0.1 acc 90%")
        log.info("loading %s", "digits")
        log.debug("a detail")
    assert stream.getvalue() == "epoch 1/3 loss 0.1 acc 90%\ncalibkit: loading digits\n"


def test_quiet_drops_progress_but_keeps_messages() -> None:
    stream = FakeTTY()
    with show_progress(quiet=True, stream=stream):
        _steps("x", 2, ["a", "b"])
        _epoch("x", "done")
        log.info("all runs done")
    assert stream.getvalue() == "calibkit: all runs done\n"


def test_tty_redraws_the_bar_and_the_line_replaces_it(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = itertools.count(1.0)  # 1 s per call: every step redraws
    monkeypatch.setattr(progress_module.time, "perf_counter", lambda: next(clock))
    stream = FakeTTY()
    with show_progress(stream=stream):
        _steps("epoch 2/3", 4, ["loss 0.9", "loss 0.8"])
        out = stream.getvalue()
        assert out.count("\r") == 2
        assert "\r\033[Kepoch 2/3 [" + "#" * 6 + "." * 18 + "] loss 0.9" in out
        assert "\r\033[Kepoch 2/3 [" + "#" * 12 + "." * 12 + "] loss 0.8" in out
        assert "\n" not in out
        report_step(log, ProgressEvent("epoch 2/3", 5, 4, "loss 0.7"))  # clamped to the total
        assert "[" + "#" * 24 + "] loss 0.7" in stream.getvalue()
        _epoch("epoch 2/3", "finished")
    assert stream.getvalue().endswith("\r\033[Kepoch 2/3 finished\n")


def test_tty_redraw_is_throttled_but_last_step_drawn() -> None:
    stream = FakeTTY()
    with show_progress(stream=stream):
        _steps("x", 1000, [""] * 999)
        drawn = stream.getvalue().count("\r")
        assert drawn < 50  # at most one redraw per 0.1 s (the loop takes far less)
        report_step(log, ProgressEvent("x", 1000, 1000, "last"))
    assert stream.getvalue().count("\r") == drawn + 1
    assert stream.getvalue().endswith("] last  eta    0s ")


def test_default_stream_is_stderr_and_the_logger_is_restored(
    capsys: pytest.CaptureFixture[str],
) -> None:
    logger = logging.getLogger("calibkit")
    before = logger.level, logger.propagate, list(logger.handlers)
    with show_progress():
        assert any(isinstance(h, ProgressDisplay) for h in logger.handlers)
        _epoch("lbl", "end")
    assert (logger.level, logger.propagate, logger.handlers) == before
    log.info("not shown any more")
    captured = capsys.readouterr()
    assert captured.err == "lbl end\n"
    assert captured.out == ""


def test_a_phase_keeps_its_bar_clock_across_its_permanent_lines(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A phase (calibkit.core.progress.Phase) writes a permanent line between two steps of
    the same bar: the bar's time left still counts from the phase's start (step 0)."""
    now = [0.0]
    monkeypatch.setattr(progress_module.time, "perf_counter", lambda: now[0])
    stream = FakeTTY()
    with show_progress(stream=stream):
        report_step(log, ProgressEvent("fits", 0, 4))  # the phase begins at 0 s
        now[0] = 10.0
        report_step(log, ProgressEvent("fits", 1, 4, "a"))
        report_step(log, ProgressEvent("fits 1/4", 1, 4, "a  10s spent"), logging.INFO)
        now[0] = 20.0
        report_step(log, ProgressEvent("fits", 2, 4, "b"))
    # 2 steps in 20 s: 20 s left (it said 0 s when the line reset the bar's clock)
    assert stream.getvalue().endswith("] b  eta   20s ")
