"""Each reproduction is one folder: every shipped config belongs to exactly one of them, and
the library never imports the experiments."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = sorted(p.parent.name for p in (ROOT / "experiments").glob("*/__init__.py"))


def test_every_config_belongs_to_one_experiment() -> None:
    owners: dict[str, list[str]] = {}
    for folder in FOLDERS:
        for config in importlib.import_module(f"experiments.{folder}").CONFIGS:
            assert (ROOT / config).is_file(), f"{folder} lists {config}, which is absent"
            owners.setdefault(config, []).append(folder)
    shipped = {p.relative_to(ROOT).as_posix() for p in (ROOT / "configs").rglob("*.toml")}
    assert set(owners) == shipped
    assert all(len(v) == 1 for v in owners.values()), owners


def test_the_library_never_imports_the_experiments() -> None:
    pattern = re.compile(r"^\s*(from|import)\s+experiments\b", re.MULTILINE)
    users = [
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "src" / "calibkit").rglob("*.py")
        if pattern.search(p.read_text(encoding="utf-8"))
    ]
    assert users == []


@pytest.mark.parametrize(
    "driver",
    sorted(
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "experiments").glob("*/*.py")
        if "__main__" in p.read_text(encoding="utf-8")
        and "from experiments." in p.read_text(encoding="utf-8")
    ),
)
def test_every_driver_runs_as_a_file(driver: str) -> None:
    """``python experiments/<paper>/<driver>.py --help`` finds the experiments it imports
    from any folder (the drivers that import none are plain scripts)."""
    env = {"PYTHONPATH": str(ROOT / "src"), "MPLBACKEND": "Agg", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, str(ROOT / driver), "--help"],
        cwd="/",
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "usage" in done.stdout.lower()
