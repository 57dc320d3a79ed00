"""Small, readable code: no module over 400 lines, no function over 60 (docstring included)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import calibkit

SRC = Path(calibkit.__file__).parent
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
MODULES = sorted(SRC.rglob("*.py"))


def _id(path: Path) -> str:
    return str(path.relative_to(SRC))


@pytest.mark.parametrize("path", MODULES, ids=_id)
def test_module_is_small(path: Path) -> None:
    n = len(path.read_text(encoding="utf-8").splitlines())
    assert n <= MAX_MODULE_LINES, f"{_id(path)} has {n} lines"


@pytest.mark.parametrize("path", MODULES, ids=_id)
def test_functions_are_small(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    long = [
        f"{node.name} (line {node.lineno}): {node.end_lineno - node.lineno + 1} lines"
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert long == []
