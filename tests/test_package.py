"""The package's public API: every exported name resolves, ``dir`` lists only those, the
lazy export table and the type checkers' imports agree; py.typed ships."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import calibkit


@pytest.mark.parametrize("name", calibkit.__all__)
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(calibkit, name) is not None


def test_unknown_attribute_raises_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_thing"):
        calibkit.no_such_thing  # noqa: B018


def test_py_typed_ships() -> None:
    assert (Path(calibkit.__file__).parent / "py.typed").exists()


def test_dir_shows_the_public_names_only() -> None:
    # in a fresh interpreter: no test has loaded a name or a submodule yet
    code = "import calibkit, calibkit.metrics; calibkit.ece; print(dir(calibkit))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    shown = ast.literal_eval(out.stdout.strip())
    assert shown == sorted([*calibkit.__all__, "__version__"])


def _type_checking_imports() -> dict[str, str]:
    """Name -> module of the ``from M import N`` lines under ``if TYPE_CHECKING:``."""
    tree = ast.parse(Path(calibkit.__file__).read_text(encoding="utf-8"))
    block = next(
        node
        for node in tree.body
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
    )
    return {
        alias.name: str(node.module)
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }


def test_the_export_table_and_the_type_checking_imports_agree() -> None:
    assert _type_checking_imports() == calibkit._EXPORTS
