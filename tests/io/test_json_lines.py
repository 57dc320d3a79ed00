"""JSON Lines files (calibkit.io.json_lines): whole files or nothing, every line named."""

from __future__ import annotations

from pathlib import Path

import pytest

from calibkit.core.errors import InputError
from calibkit.io.json_lines import read_json_lines


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('{"a": 1}\n{"a": NaN}\n', "line 2: expected one JSON object, got NaN (not JSON)"),
        ('{"a": 1}\n[1, 2]\n', "line 2: expected one JSON object, got list"),
        ('{"a": 1}\n{"a": \n', "line 2: expected one JSON object, got Expecting value"),
        ("\n\n", "expected at least one JSON line, got an empty file"),
    ],
)
def test_refused_naming_the_line(tmp_path: Path, text: str, said: str) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text(text, "utf-8")
    with pytest.raises(InputError) as err:
        read_json_lines(path)
    assert said in str(err.value)
    assert str(path) in str(err.value)


def test_bytes_that_are_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(b'{"a": 1}\n{"a": "\xff"}\n')
    with pytest.raises(InputError, match="line 2: expected UTF-8 text"):
        read_json_lines(path)


def test_fields_by_path_and_type(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text('{"a": {"b": true}}\n', "utf-8")
    (line,) = read_json_lines(path)
    assert line.field(("a", "b"), bool, "a flag") is True
    with pytest.raises(InputError, match=r"line 1, field a.b: expected a count, got True"):
        line.field(("a", "b"), int, "a count")  # a bool is not an int here
    with pytest.raises(InputError, match=r"field a.c: expected x, got no such field"):
        line.field(("a", "c"), int, "x")
