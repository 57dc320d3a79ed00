"""Tests of the progress bar: silent off a terminal until close, redrawn on one."""

from __future__ import annotations

import io
import itertools

import pytest

from calibkit.training import Progress
from calibkit.training import progress as progress_module


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_off_a_tty_only_close_writes() -> None:
    stream = io.StringIO()
    bar = Progress("epoch 1/3", total=5, stream=stream)
    assert not bar.live
    for _ in range(5):
        bar.update(1, "loss 0.1")
    assert stream.getvalue() == ""
    bar.close("loss 0.1 acc 90%")
    assert stream.getvalue() == "epoch 1/3 loss 0.1 acc 90%\n"


def test_keep_false_writes_nothing_off_a_tty() -> None:
    stream = io.StringIO()
    bar = Progress("x", total=2, stream=stream)
    bar.update(2)
    bar.close("done", keep=False)
    assert stream.getvalue() == ""


def test_disabled_is_silent_even_on_a_tty() -> None:
    stream = FakeTTY()
    bar = Progress("x", total=2, stream=stream, enabled=False)
    assert not bar.live
    bar.update(1, "a")
    bar.update(1, "b")
    bar.close("done")
    bar.close("done", keep=False)
    assert stream.getvalue() == ""


def test_tty_redraws_and_final_line(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = itertools.count(1.0)  # 1 s per call: every update redraws
    monkeypatch.setattr(progress_module.time, "perf_counter", lambda: next(clock))
    stream = FakeTTY()
    bar = Progress("epoch 2/3", total=4, stream=stream)
    assert bar.live
    bar.update(1, "loss 0.9")
    bar.update(1, "loss 0.8")
    out = stream.getvalue()
    assert out.count("\r") == 2
    assert "\repoch 2/3 [" + "#" * 6 + "." * 18 + "] loss 0.9" in out
    assert "\repoch 2/3 [" + "#" * 12 + "." * 12 + "] loss 0.8" in out
    assert "\n" not in out
    bar.update(5, "loss 0.7")  # clamped to the total
    assert bar.done == 4
    assert "[" + "#" * 24 + "] loss 0.7" in stream.getvalue()
    bar.close("finished")
    assert stream.getvalue().endswith("\r\033[Kepoch 2/3 finished\n")


def test_tty_redraw_is_throttled_but_last_step_drawn() -> None:
    stream = FakeTTY()
    bar = Progress("x", total=1000, stream=stream)
    for _ in range(999):
        bar.update(1)
    drawn = stream.getvalue().count("\r")
    assert drawn < 50  # at most one redraw per 0.1 s (the loop takes far less)
    bar.update(1, "last")
    assert stream.getvalue().count("\r") == drawn + 1
    assert stream.getvalue().endswith("] last  eta    0s ")


def test_tty_keep_false_clears_the_bar() -> None:
    stream = FakeTTY()
    bar = Progress("x", total=1, stream=stream)
    bar.update(1)
    bar.close("gone", keep=False)
    out = stream.getvalue()
    assert out.endswith("\r\033[K")
    assert "gone" not in out


def test_default_stream_is_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    bar = Progress("lbl", total=0)
    assert bar.total == 1
    bar.update(1)
    bar.close("end")
    captured = capsys.readouterr()
    assert captured.err == "lbl end\n"
    assert captured.out == ""
