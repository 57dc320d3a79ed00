"""The global ``--threads N`` option: parsed before the command, set before it runs."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

import calibkit.cli
from calibkit.cli import main


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[int | None]:
    """The thread counts the CLI asked for (nothing is set for real)."""
    seen: list[int | None] = []

    @contextlib.contextmanager
    def record(n: int | None = None) -> Iterator[int]:
        seen.append(n)
        yield n or 1

    monkeypatch.setattr(calibkit.cli, "using_threads", record)
    return seen


def test_the_parsed_count_is_set_before_the_command(
    calls: list[int | None], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--threads", "3", "methods"]) == 0
    assert main(["methods"]) == 0
    assert calls == [3, None]  # None: the free cores


def test_help_version_and_bad_counts_set_nothing(
    calls: list[int | None], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--help"]) == 0
    assert main(["--version"]) == 0
    assert "--threads N" in capsys.readouterr().out
    for bad in ("0", "1025", "-1", "1.5", "two"):
        assert main(["--threads", bad, "methods"]) == 2
        err = capsys.readouterr().err
        assert err.startswith(
            "calibkit: error: argument --threads: expected an integer in [1, 1024]"
        )
    assert calls == []


@pytest.mark.parametrize("n", [1, 2])
def test_torch_uses_the_given_count_during_the_command_only(n: int) -> None:
    code = f"""
import contextlib, io, sys, torch
import calibkit.cli.methods as methods
from calibkit.cli import main
torch.set_num_threads(3)
methods.run = lambda args: print(torch.get_num_threads(), file=sys.stderr) or 0
main(["--threads", "{n}", "methods"])
print(torch.get_num_threads(), file=sys.stderr)
"""
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert out.stderr.split()[-2:] == [str(n), "3"]  # n while it runs, the caller's after
