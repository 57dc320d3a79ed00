"""Small, readable code, as a warning: a module over 400 lines or a function over 60
(docstring included) is pointed at, to ask whether it holds more than one concept; it is
split by concept, never to meet a count. Twice those sizes fails: nothing reads well then.
"""

from __future__ import annotations

import ast
import warnings
from pathlib import Path

import pytest

import calibkit

SRC = Path(calibkit.__file__).parent
#: Sizes above which a module or a function is pointed at (a warning).
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
#: Sizes above which it fails.
HARD = 2
MODULES = sorted(SRC.rglob("*.py"))


class SizeWarning(UserWarning):
    """A module or function longer than the house sizes: does it hold one concept?"""


def sizes(name: str, text: str) -> dict[str, int]:
    """The lines of the module ``name`` and of each of its functions."""
    found = {name: len(text.splitlines())}
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno:
            found[f"{name}: {node.name} (line {node.lineno})"] = node.end_lineno - node.lineno + 1
    return found


def check(name: str, text: str) -> None:
    """Warn about what is long, fail on what is twice as long."""
    for what, n in sizes(name, text).items():
        limit = MAX_MODULE_LINES if what == name else MAX_FUNCTION_LINES
        assert n <= HARD * limit, f"{what} has {n} lines"
        if n > limit:
            message = f"{what} has {n} lines (> {limit}): one concept, or several?"
            warnings.warn(message, SizeWarning, stacklevel=2)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_modules_and_functions_are_small(path: Path) -> None:
    check(str(path.relative_to(SRC)), path.read_text(encoding="utf-8"))


def test_long_code_is_pointed_at_and_twice_as_long_fails() -> None:
    with pytest.warns(SizeWarning, match="long.py has 401 lines"):
        check("long.py", "x = 1\n" * 401)
    body = "def f():\n" + "    x = 1\n" * 70
    with pytest.warns(SizeWarning, match="f \\(line 1\\) has 71 lines"):
        check("f.py", body)
    with pytest.raises(AssertionError, match="has 801 lines"):
        check("huge.py", "x = 1\n" * 801)
