"""JSON files: non-finite floats become null, atomic writes, clear errors on bad files."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from calibkit.core.errors import InputError
from calibkit.io.jsonfile import json_ready, json_text, read_json, write_json


def test_json_ready_replaces_every_non_finite_float() -> None:
    obj = {"a": math.nan, "b": [1.5, math.inf, (-math.inf, 2)], "c": {"d": np.float64("nan")}}
    assert json_ready(obj) == {"a": None, "b": [1.5, None, [None, 2]], "c": {"d": None}}


def test_json_ready_keeps_everything_else() -> None:
    obj = {"n": 3, "s": "nan", "t": True, "x": None, "f": np.float64(0.25)}
    assert json_ready(obj) == obj


def test_json_text_is_standard_json_with_one_space_indent() -> None:
    text = json_text({"ece": math.nan, "v": [0.1]})
    assert text == '{\n "ece": null,\n "v": [\n  0.1\n ]\n}'
    assert json.loads(text) == {"ece": None, "v": [0.1]}


def test_write_then_read(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    write_json(path, {"x": 1 / 3, "y": math.nan})
    assert path.read_text(encoding="utf-8").endswith("}\n")
    assert read_json(path) == {"x": 1 / 3, "y": None}
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]  # no temporary file left


def test_read_json_errors_name_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(InputError, match=r"bad\.json: expected a readable JSON file"):
        read_json(bad)
    with pytest.raises(InputError, match=r"missing\.json"):
        read_json(tmp_path / "missing.json")
