"""Small, readable code, as a warning: a module over 400 code lines or a function over 60
is pointed at, to ask whether it holds more than one concept; it is split by concept, never
to meet a count. Twice those sizes fails: nothing reads well then. Code lines are what a
reader reads as code: docstrings (of the module, its classes and functions), comments and
blank lines are not counted (issue #45: a well-documented module is not a long one).
"""

from __future__ import annotations

import ast
import io
import tokenize
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


def _docstring_lines(tree: ast.Module) -> set[int]:
    """The lines of every module, class and function docstring."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            first = body[0] if body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
                and first.end_lineno is not None
            ):
                lines.update(range(first.lineno, first.end_lineno + 1))
    return lines


def code_lines(text: str) -> set[int]:
    """The lines holding code: a token other than a comment or a line break, outside the
    docstrings."""
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
    lines: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type not in skip and tok.type != tokenize.ENDMARKER:
            lines.update(range(tok.start[0], tok.end[0] + 1))
    return lines - _docstring_lines(ast.parse(text))


def sizes(name: str, text: str) -> dict[str, int]:
    """The code lines of the module ``name`` and of each of its functions."""
    code = code_lines(text)
    found = {name: len(code)}
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno:
            span = range(node.lineno, node.end_lineno + 1)
            found[f"{name}: {node.name} (line {node.lineno})"] = len(code.intersection(span))
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


def test_docstrings_comments_and_blank_lines_are_not_counted() -> None:
    doc = '"""A long docstring.\n' + "More.\n" * 900 + '"""\n'
    body = 'def f():\n    """Doc.\n' + "    more\n" * 100 + '    """\n    # why\n\n    return 1\n'
    assert sizes("m.py", doc + body) == {"m.py": 2, "m.py: f (line 903)": 2}
    check("m.py", doc + body)  # neither warns nor fails


def test_long_code_is_pointed_at_and_twice_as_long_fails() -> None:
    with pytest.warns(SizeWarning, match="long.py has 401 lines"):
        check("long.py", "x = 1\n" * 401)
    body = "def f():\n" + "    x = 1\n" * 70
    with pytest.warns(SizeWarning, match="f \\(line 1\\) has 71 lines"):
        check("f.py", body)
    with pytest.raises(AssertionError, match="has 801 lines"):
        check("huge.py", "x = 1\n" * 801)
