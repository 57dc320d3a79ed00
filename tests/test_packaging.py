"""The source distribution carries the tests, their data and the licence; the wheel alone
runs the command line."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import calibkit

ROOT = Path(__file__).resolve().parents[1]
#: What setuptools reads to build the sdist.
SOURCES = ("pyproject.toml", "README.md", "LICENSE", "MANIFEST.in", "src", "tests")


def _copy_sources(tree: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", "*.egg-info")
    tree.mkdir()
    for name in SOURCES:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, tree / name, ignore=ignore)
        else:
            shutil.copy2(src, tree / name)


def test_license_is_mit() -> None:
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License")
    assert "Copyright (c) 2026 the calibkit developers" in text


def test_sdist_lists_tests_and_license(tmp_path: Path) -> None:
    """Build the sdist from a copy of the checkout (setuptools' own backend, no network)."""
    tree = tmp_path / "tree"
    _copy_sources(tree)
    code = "from setuptools import build_meta; print(build_meta.build_sdist('dist'))"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tree, capture_output=True, text=True, check=True
    )
    archive = tree / "dist" / done.stdout.strip().splitlines()[-1]
    with tarfile.open(archive) as tar:
        names = {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}
        pkg_info = tar.extractfile(f"{archive.name.removesuffix('.tar.gz')}/PKG-INFO")
        assert pkg_info is not None
        metadata = pkg_info.read().decode()
    assert "LICENSE" in names
    assert "tests/test_packaging.py" in names
    assert "tests/io/fixtures/lm/harness/results_2026-12-07T06-57-36.181984.json" in names
    assert not any("__pycache__" in name for name in names)
    assert "License-Expression: MIT" in metadata
    assert "License-File: LICENSE" in metadata


def test_wheel_alone_runs_the_command_line(tmp_path: Path) -> None:
    """Build the wheel from a copy of the checkout (no network), install it alone into a
    folder and run ``calibkit --version`` from there, with the package found in that folder
    only (the environment gives the dependencies: numpy, torch, ...)."""
    tree = tmp_path / "tree"
    _copy_sources(tree)
    code = "from setuptools import build_meta; print(build_meta.build_wheel('dist'))"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tree, capture_output=True, text=True, check=True
    )
    wheel = tree / "dist" / done.stdout.strip().splitlines()[-1]
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    assert "calibkit/py.typed" in names
    assert "calibkit/study/definition/digits.toml" in names
    assert not any(name.startswith("tests/") for name in names)

    target = tmp_path / "site"
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index"]
    subprocess.run(
        [*pip, "--target", str(target), str(wheel)],
        capture_output=True,
        text=True,
        check=True,
    )
    env = {**os.environ, "PYTHONPATH": str(target)}
    code = (
        "import calibkit, calibkit.study; from calibkit.cli import main;"
        "print(calibkit.__file__); print(calibkit.study.__file__); main(['--version'])"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    package, study, version = run.stdout.strip().splitlines()
    assert Path(package).is_relative_to(target)
    assert Path(study).is_relative_to(target)
    assert version == f"calibkit {calibkit.__version__}"
    # the console script the wheel declares runs the same entry point
    script = subprocess.run(
        [str(target / "bin" / "calibkit"), "--version"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert script.returncode == 0, script.stderr
    assert script.stdout.strip() == f"calibkit {calibkit.__version__}"
