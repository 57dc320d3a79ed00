"""The global ``--threads N`` option: parsed before the command, set before it runs."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import calibkit.cli
from calibkit.cli import main


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[int | None]:
    """The thread counts the CLI asked for (nothing is set for real)."""
    seen: list[int | None] = []

    def record(n: int | None = None) -> int:
        seen.append(n)
        return n or 1

    monkeypatch.setattr(calibkit.cli, "set_threads", record)
    return seen


def test_the_parsed_count_is_set_before_the_command(
    calls: list[int | None], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--threads", "3", "methods"]) == 0
    assert main(["methods"]) == 0
    assert calls == [3, None]  # None: set_threads uses the free cores


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
def test_torch_uses_the_given_count(n: int) -> None:
    code = (
        "import contextlib, io, torch; from calibkit.cli import main;"
        f"contextlib.redirect_stdout(io.StringIO()).__enter__(); main(['--threads', '{n}', "
        "'methods']); print(torch.get_num_threads(), file=__import__('sys').stderr)"
    )
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert out.stderr.split()[-1] == str(n)
