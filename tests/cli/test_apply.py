"""``calibkit apply`` with a hostile or broken calibrator file: exit 2, one line naming the
file and the field, no traceback, no numpy warning, and the folder tree (names and bytes)
exactly as it was."""

from __future__ import annotations

import functools
import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from calibkit.calibrators import create_calibrator
from calibkit.cli import main

METHODS = ["temperature", "matrix", "histogram", "isotonic", "auto"]


def _problem() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.normal(size=(200, 3)) * 4, rng.integers(0, 3, 200)


@functools.cache
def _saved(method: str) -> str:
    """The JSON of ``method`` fitted on :func:`_problem` (cached: "auto" fits everything)."""
    return json.dumps(create_calibrator(method).fit(*_problem()).to_json(), indent=1)


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    z, y = _problem()
    np.savez(tmp_path / "preds.npz", logits=z, labels=y)
    for method in METHODS:
        (tmp_path / f"{method}.json").write_text(_saved(method))
    return tmp_path


def tree(root: Path) -> dict[str, bytes | None]:
    return {
        p.relative_to(root).as_posix(): None if p.is_dir() else p.read_bytes()
        for p in sorted(root.rglob("*"))
    }


def _first_state_field(doc: dict[str, Any]) -> str:
    return next(key for key in doc["state"] if key != "n_classes_")


CORRUPTIONS = {
    "negative": lambda d: d["state"].__setitem__(_first_state_field(d), -1.0),
    "nan": lambda d: d["state"].__setitem__(_first_state_field(d), float("nan")),
    "string": lambda d: d["state"].__setitem__(_first_state_field(d), "abc"),
    "missing": lambda d: d["state"].pop(_first_state_field(d)),
    "dunder": lambda d: d["state"].__setitem__("__dict__", {}),
    "classes": lambda d: d["state"].__setitem__("n_classes_", "3"),
}


@pytest.mark.parametrize("corruption", [*CORRUPTIONS, "deep", "truncated"])
@pytest.mark.parametrize("method", METHODS)
def test_a_bad_calibrator_file_is_refused_cleanly(
    work: Path, capsys: pytest.CaptureFixture[str], method: str, corruption: str
) -> None:
    text = (work / f"{method}.json").read_text()
    doc = json.loads(text)
    if corruption == "deep":
        text = text.replace('"state": {', '"state": {"x_": ' + "[" * 200_000 + "]" * 200_000 + ",")
    elif corruption == "truncated":
        text = text[: len(text) // 2]
    else:
        CORRUPTIONS[corruption](doc)
        text = json.dumps(doc)
    (work / "bad.json").write_text(text)
    capsys.readouterr()
    before = tree(work)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        code = main(["apply", "bad.json", "preds.npz", "-o", "out.npz"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1, err
    assert err.startswith("calibkit: error: calibkit file bad.json: "), err
    assert "Traceback" not in err
    assert "logits" not in err
    if corruption not in ("deep", "truncated", "dunder"):
        assert "state." in err, err
    assert tree(work) == before


def test_a_good_file_still_applies(work: Path) -> None:
    assert main(["apply", "temperature.json", "preds.npz", "-o", "out.npz"]) == 0
    assert (work / "out.npz").is_file()
