"""The source distribution carries the tests, their data and the licence."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: What setuptools reads to build the sdist.
SOURCES = ("pyproject.toml", "README.md", "LICENSE", "MANIFEST.in", "src", "tests")


def test_license_is_mit() -> None:
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License")
    assert "Copyright (c) 2026 the calibkit developers" in text


def test_sdist_lists_tests_and_license(tmp_path: Path) -> None:
    """Build the sdist from a copy of the checkout (setuptools' own backend, no network)."""
    tree = tmp_path / "tree"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", "*.egg-info")
    for name in SOURCES:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, tree / name, ignore=ignore)
        else:
            tree.mkdir(exist_ok=True)
            shutil.copy2(src, tree / name)
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
    assert "tests/calibrators/model/clamping/data/nc_v1.safetensors" in names
    assert not any("__pycache__" in name for name in names)
    assert "License-Expression: MIT" in metadata
    assert "License-File: LICENSE" in metadata
