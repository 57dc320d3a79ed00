"""Each reproduction is one folder: its configs, drivers, figure code, tests and write-up; the
library never imports the experiments."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = sorted(p.parent.name for p in (ROOT / "experiments").glob("*/__init__.py"))


def test_every_config_is_in_its_experiments_folder() -> None:
    """A study config is ``experiments/<paper>/configs/*.toml`` (the ``config.toml`` copies
    under ``results/`` are what the studies wrote); the top-level ``configs/`` is gone."""
    assert not (ROOT / "configs").exists()
    misplaced = [
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "experiments").rglob("*.toml")
        if "results" not in p.relative_to(ROOT).parts
        and not (p.parent.name == "configs" and p.parent.parent.name in FOLDERS)
    ]
    assert misplaced == []
    assert len(list((ROOT / "experiments").glob("*/configs/*.toml"))) >= 20


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_experiment_has_its_write_up(folder: str) -> None:
    assert (ROOT / "experiments" / folder / "README.md").is_file()


def test_the_library_never_imports_the_experiments() -> None:
    pattern = re.compile(r"^\s*(from|import)\s+experiments\b", re.MULTILINE)
    users = [
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "src" / "calibkit").rglob("*.py")
        if pattern.search(p.read_text(encoding="utf-8"))
    ]
    assert users == []


#: Every driver script: a file of an experiment that runs as ``__main__``.
DRIVERS = sorted(
    p.relative_to(ROOT).as_posix()
    for p in (ROOT / "experiments").glob("*/*.py")
    if "__main__" in p.read_text(encoding="utf-8")
)
#: What a driver runs with: calibkit importable, no display, no bytecode written.
ENV = {
    "PYTHONPATH": str(ROOT / "src"),
    "MPLBACKEND": "Agg",
    "PATH": "/usr/bin:/bin",
    "PYTHONDONTWRITEBYTECODE": "1",
}


@pytest.mark.parametrize("driver", DRIVERS)
def test_every_driver_runs_as_a_file(driver: str, tmp_path: Path) -> None:
    """``python experiments/<paper>/<driver>.py --help`` finds the experiments it imports
    from any folder, prints the usage and does nothing else: nothing is created in the
    current folder (``wang2021/test_wang2021_configs.py``: nor is a config rewritten)."""
    done = subprocess.run(
        [sys.executable, str(ROOT / driver), "--help"],
        cwd=tmp_path,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "usage" in done.stdout.lower()
    assert list(tmp_path.iterdir()) == []
