"""``load`` and ``save`` given something that is no file path (issue 42): None, a file
object, bytes, a dict (a document already read), an empty string. Each is one InputError
naming ``path`` and what came, never a TypeError from ``pathlib``; a document in memory is
sent to ``calibkit.PostHoc.from_json``, which rebuilds it."""

from __future__ import annotations

import io
import json
import warnings
from pathlib import Path

import numpy as np
import pytest

import calibkit as ck
from calibkit.calibrators import Calibrator, PostHoc, load
from calibkit.core.errors import InputError

EXPECTED = "path: expected a file path (str or os.PathLike), got "


@pytest.fixture(scope="module")
def fitted() -> Calibrator:
    rng = np.random.default_rng(0)
    z = rng.normal(size=(200, 3)) * 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ck.TemperatureScaling().fit(z, z.argmax(1))


@pytest.mark.parametrize(
    ("value", "got"),
    [
        (None, "None"),
        ("", "'' (an empty string)"),
        (
            io.BytesIO(b"{}"),
            "a file object (BytesIO): pass its path, or"
            " calibkit.PostHoc.from_json(json.load(file))",
        ),
        (
            b"{}",
            "bytes (2 of them): pass the file's path, or"
            " calibkit.PostHoc.from_json(json.loads(data))",
        ),
        (
            {"kind": "logits"},
            "a dict: a document already read goes to calibkit.PostHoc.from_json(doc)",
        ),
        (3, "3 (of type int)"),
    ],
)
@pytest.mark.parametrize("loader", [load, ck.load, Calibrator.load, ck.TemperatureScaling.load])
def test_load_of_no_path_is_one_input_error(value: object, got: str, loader: object) -> None:
    with pytest.raises(InputError) as info:
        loader(value)  # type: ignore[operator]
    assert str(info.value) == EXPECTED + got
    assert info.value.argument == "path"


def test_the_suggested_call_rebuilds_a_document_in_memory(fitted: Calibrator) -> None:
    text = json.dumps(fitted.to_json())
    back = ck.PostHoc.from_json(json.loads(text))
    assert PostHoc is ck.PostHoc
    assert type(back) is type(fitted)
    assert back.temperature_ == fitted.temperature_


@pytest.mark.parametrize(
    ("value", "got"),
    [
        ("", "'' (an empty string)"),  # was "output: ... got '.'": Path('') is '.'
        (None, "None"),
        (b"ts.json", "bytes (7 of them)"),
        (io.StringIO(), "a file object (StringIO)"),
    ],
)
def test_save_to_no_path_is_one_input_error_and_writes_nothing(
    fitted: Calibrator,
    value: object,
    got: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError) as info:
        fitted.save(value)  # type: ignore[arg-type]
    assert str(info.value) == EXPECTED + got
    assert list(tmp_path.iterdir()) == []
