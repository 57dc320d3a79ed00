"""Every command is thin: its ``run()`` parses, calls one library function and hands the
result to the writer, in at most 40 lines (docstring included)."""

from __future__ import annotations

import importlib
import inspect

import pytest

from calibkit.cli.parser import COMMANDS

MAX_LINES = 40


@pytest.mark.parametrize("command", COMMANDS)
def test_run_is_at_most_40_lines(command: str) -> None:
    run = importlib.import_module(f"calibkit.cli.{command}").run
    lines = inspect.getsource(run).splitlines()
    assert len(lines) <= MAX_LINES, f"calibkit {command}: run() is {len(lines)} lines"
