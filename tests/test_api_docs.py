"""The API reference (docs/api, ``bash scripts/docs.sh``) builds offline without a warning, and
every public name of the package root has its page, with its docstring and its example."""

from __future__ import annotations

import importlib.util
import inspect
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import calibkit

ROOT = Path(__file__).resolve().parents[1]
#: The reference's sources are in the checkout, not in the sdist (which ships the tests).
needs_sources = pytest.mark.skipif(
    not (ROOT / "docs" / "api" / "conf.py").is_file(), reason="docs/api is not in this tree"
)

#: Public functions and classes whose docstring has no example yet; a new public name must
#: come with one (a doctest, run by pytest --doctest-modules). Shrink this list, never grow it.
NO_EXAMPLE = frozenset(
    (
        "ShiftResult",
        "run_shift",
        "run_study",
        "shift_report",
        "write_shift_report",
    )
)


def sphinx_build(source: Path, out: Path) -> subprocess.CompletedProcess[str]:
    """``sphinx-build`` as ``scripts/docs.sh`` runs it: every warning is an error."""
    pytest.importorskip("sphinx", reason="the docs extra (sphinx) is not installed")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "MPLBACKEND": "Agg"}
    command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html"]
    return subprocess.run(
        [*command, "-d", str(out / ".doctrees"), str(source), str(out)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )


def test_a_warning_fails_the_build(tmp_path: Path) -> None:
    """The flags the reference is built with turn a warning (here bad markup) into a failure."""
    source = tmp_path / "src"
    source.mkdir()
    (source / "conf.py").write_text("extensions = []\n", encoding="utf-8")
    (source / "index.rst").write_text("Title\n=\n\n:func:`unclosed\n", encoding="utf-8")
    done = sphinx_build(source, tmp_path / "out")
    assert done.returncode != 0
    assert "WARNING" in done.stderr


@needs_sources
def test_api_reference_builds_without_warning(tmp_path: Path) -> None:
    """Build a copy of docs/api (autosummary writes its stubs beside the sources)."""
    docs = tmp_path / "docs"
    shutil.copytree(ROOT / "docs" / "api", docs / "api", ignore=shutil.ignore_patterns("generated"))
    shutil.copy2(ROOT / "docs" / "cli.md", docs / "cli.md")
    out = tmp_path / "html"
    done = sphinx_build(docs / "api", out)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "WARNING" not in done.stderr, done.stderr[-4000:]
    missing = []
    for name in calibkit.__all__:
        page = out / "generated" / f"calibkit.{name}.html"
        if not page.is_file() or f'id="calibkit.{name}"' not in page.read_text(encoding="utf-8"):
            missing.append(name)
    assert not missing, f"public names without a page: {missing}"
    # the pages are reachable from the concept pages, and the command line has its page
    index = (out / "index.html").read_text(encoding="utf-8")
    for page in ("metrics", "calibrators", "conformal", "label_shift", "errors", "cli"):
        assert f'href="{page}.html"' in index
    cli = (out / "cli.html").read_text(encoding="utf-8")
    assert "--n-bins" in cli


def _has_example(obj: object) -> bool:
    return ">>>" in (inspect.getdoc(obj) or "")


def test_every_public_function_and_class_has_an_example() -> None:
    names = [
        name
        for name in calibkit.__all__
        if inspect.isclass(getattr(calibkit, name)) or callable(getattr(calibkit, name))
    ]
    without = {name for name in names if not _has_example(getattr(calibkit, name))}
    assert without <= NO_EXAMPLE, f"add an Examples section to: {sorted(without - NO_EXAMPLE)}"
    # the list shrinks as examples are written
    assert not (NO_EXAMPLE - without), f"remove from NO_EXAMPLE: {sorted(NO_EXAMPLE - without)}"


def _api_conf() -> Any:
    """docs/api/conf.py, imported."""
    spec = importlib.util.spec_from_file_location("api_conf", ROOT / "docs" / "api" / "conf.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@needs_sources
def test_a_catalog_line_lists_the_kinds_calibrators() -> None:
    """Issue #45, item 1: a page lists the calibrators of a kind from the catalog."""
    text = _api_conf().catalog_autosummary("Sets\n\n.. catalog:: sets\n")
    assert text == (
        "Sets\n\n.. autosummary::\n   :toctree: generated\n   :nosignatures:\n\n"
        "   ConformalClassifier\n"
    )
    with pytest.raises(ValueError, match="no public calibrator of kind 'model'"):
        _api_conf().catalog_autosummary(".. catalog:: model\n")


@needs_sources
def test_every_public_name_is_on_a_concept_page() -> None:
    """Each root name is listed once, in the autosummary of one page of docs/api."""
    listed: list[str] = []
    for page in sorted((ROOT / "docs" / "api").glob("*.rst")):
        text = _api_conf().catalog_autosummary(page.read_text(encoding="utf-8"))
        for block in re.findall(r"\.\. autosummary::\n((?:   .*\n|\n)+)", text):
            listed += [line.strip() for line in block.splitlines() if line.strip()[:1].isalpha()]
    assert sorted(listed) == sorted(calibkit.__all__)
