"""JSON Lines files (``.jsonl``): one JSON object per line, every complaint naming the file,
the line and the field.

:func:`read_json_lines` reads the whole file before anything is returned, so a malformed
line anywhere is refused before a single row is used (nothing half-read). Blank lines are
skipped (their numbers still count); ``NaN`` and ``Infinity``, which Python writes but JSON
does not have, are refused where they stand. Each :class:`Line` keeps its number, and
:meth:`Line.field` reads one field by a path of keys, checking its type, so that every
reader of a tool's file says exactly where a value is wrong:

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as folder:
...     path = Path(folder) / "rows.jsonl"
...     _ = path.write_text('{"a": {"b": [1, 2]}}\\n\\n{"a": {"b": "x"}}\\n')
...     lines = read_json_lines(path)
...     [line.number for line in lines], lines[0].field(("a", "b"), list, "a list")
([1, 3], [1, 2])
>>> lines[1].field(("a", "b"), list, "a list of numbers")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
calibkit.core.errors.InputError: ...rows.jsonl, line 3, field a.b: expected a list of numbers, ...
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from calibkit.core.errors import InputError

#: Longest shown excerpt of a wrong value in a message.
SHOWN_CHARS = 60


def shown(value: object) -> str:
    """A wrong value as a message shows it: its ``repr``, cut to :data:`SHOWN_CHARS`.

    >>> shown("x" * 100)[-5:], shown(None)
    ("...'", 'None')
    """
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 4] + "...'"


def where(path: Path, line: int, field: str | None = None) -> str:
    """The argument an InputError names: ``path, line N[, field F]``.

    >>> where(Path("s.jsonl"), 3, "resps")
    's.jsonl, line 3, field resps'
    """
    return f"{path}, line {line}" + (f", field {field}" if field else "")


@dataclass(frozen=True)
class Line:
    """One JSON object of a JSON Lines file: where it is, and what it holds."""

    path: Path
    number: int
    data: dict[str, Any]

    def fail(self, field: str | None, expected: str, got: str) -> InputError:
        """The InputError of a wrong value at ``field`` of this line (raise it)."""
        return InputError(where(self.path, self.number, field), expected, got)

    def has(self, keys: tuple[str, ...] | str) -> bool:
        """Whether the field at ``keys`` (one key or a path of keys) is present."""
        node: Any = self.data
        for key in (keys,) if isinstance(keys, str) else keys:
            if not isinstance(node, dict) or key not in node:
                return False
            node = node[key]
        return True

    def field(
        self, keys: tuple[str, ...] | str, types: type | tuple[type, ...], expected: str
    ) -> Any:
        """The value at ``keys`` (one key or a path of keys), of one of ``types``; a missing
        field or another type is an InputError naming the file, line and field."""
        path = (keys,) if isinstance(keys, str) else keys
        node: Any = self.data
        for depth, key in enumerate(path):
            if not isinstance(node, dict):
                name = ".".join(path[:depth])
                raise self.fail(name, "an object", shown(node))
            if key not in node:
                raise self.fail(".".join(path), expected, "no such field")
            node = node[key]
        bad_bool = isinstance(node, bool) and bool not in (
            types if isinstance(types, tuple) else (types,)
        )
        if not isinstance(node, types) or bad_bool:
            raise self.fail(".".join(path), expected, shown(node))
        return node


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} (not JSON)")


def read_json_lines(path: Path) -> list[Line]:
    """Every non-blank line of ``path`` as a :class:`Line` (a JSON object each): a line that
    is not one, bytes that are not UTF-8, or a file without a line is refused naming the
    file and line."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(str(path), "a readable file", type(exc).__name__) from None
    lines: list[Line] = []
    for number, chunk in enumerate(raw.split(b"\n"), start=1):
        if not chunk.strip():
            continue
        try:
            text = chunk.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(where(path, number), "UTF-8 text", f"byte {exc.start + 1}") from None
        try:
            data = json.loads(text, parse_constant=_no_constant)
        except (json.JSONDecodeError, ValueError) as exc:
            why = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
            at = f" at column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
            raise InputError(where(path, number), "one JSON object", f"{why}{at}") from None
        if not isinstance(data, dict):
            raise InputError(where(path, number), "one JSON object", type(data).__name__)
        lines.append(Line(path, number, data))
    if not lines:
        raise InputError(str(path), "at least one JSON line", "an empty file")
    return lines


__all__ = ["Line", "read_json_lines", "shown", "where"]
