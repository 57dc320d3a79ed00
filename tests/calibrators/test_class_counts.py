"""Every array of a loaded state agrees with the state's number of classes (issue 32).

Found from the fits themselves, not from the declarations: each registered kind (but the
binary-only ones and Neural Clamping) is fitted on 3 classes and on 4; a field whose
length along some axis (or list length, or nested calibrator's class count) is 3 in the
one and 4 in the other holds one entry per class. A 3-class file with such a field taken
from the 4-class fit, or with ``n_classes_`` changed, is refused at load naming the file
and a field, never loaded to fail later at ``predict_proba`` or ``apply``.

A kind with no such field (:data:`NO_CLASS_FIELDS`: one map shared by every class) has
``n_classes_`` as its only witness: a file that says 4 classes is a valid 4-class map of
that kind; ``calibkit apply`` then refuses 3-column predictions, naming both files.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from calibkit.calibrators import CALIBRATORS, load
from calibkit.cli import main
from calibkit.core.errors import InputError
from tests.calibrators import kinds

#: Every kind fitted on a predictions file with any number of classes.
NAMES = [name for name in kinds.NAMES if not CALIBRATORS.get(name).binary_only]
#: The kinds whose fitted state holds nothing per class (one temperature, one top-label
#: map, one map per group): the state alone cannot tell its number of classes.
NO_CLASS_FIELDS = {
    "temperature",
    "temperature_ece",
    "temperature_smoothed",
    "histogram",
    "scaling_binning",
    "spline",
    "temperature_groupwise",
    "multicalibration",
}


@functools.cache
def _state(name: str, k: int) -> dict[str, Any]:
    obj = kinds.fitted(name) if k == 3 else kinds.fit(kinds.new(name), name, k=k)
    state: dict[str, Any] = json.loads(json.dumps(obj.to_json()))["state"]
    return state


def _lengths(value: Any) -> list[int]:
    """The lengths that may count classes: an array's shape, a list's length (and its first
    item's), a nested document's ``n_classes_``."""
    if isinstance(value, dict) and "__ndarray__" in value:
        return list(value["shape"])
    if isinstance(value, dict) and "state" in value:
        return [value["state"].get("n_classes_", -1)]
    if isinstance(value, list):
        return [len(value), *(_lengths(value[0]) if value else [])]
    return []


def _class_fields(name: str) -> list[str]:
    three, four = _state(name, 3), _state(name, 4)
    found = []
    for field in three:
        a, b = _lengths(three[field]), _lengths(four[field])
        if field != "n_classes_" and any(x == 3 and y == 4 for x, y in zip(a, b, strict=False)):
            found.append(field)
    return found


CASES = [(name, field) for name in NAMES for field in _class_fields(name)]


def _refused(tmp_path: Path, state: dict[str, Any], name: str) -> str:
    doc = json.loads(json.dumps(kinds.fitted(name).to_json()))
    doc["state"] = state
    path = tmp_path / "classes.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(InputError) as info:
        load(path)
    message = str(info.value)
    assert message.startswith(f"calibkit file {path}: state."), message
    return message


def test_the_kinds_without_class_fields_are_the_listed_ones() -> None:
    assert {name for name in NAMES if not _class_fields(name)} == NO_CLASS_FIELDS


@pytest.mark.parametrize(("name", "field"), CASES)
def test_a_field_of_another_class_count_is_refused_at_load(
    name: str, field: str, tmp_path: Path
) -> None:
    state = {**_state(name, 3), field: _state(name, 4)[field]}
    message = _refused(tmp_path, state, name)
    assert "expected" in message


@pytest.mark.parametrize("name", sorted(set(NAMES) - NO_CLASS_FIELDS))
@pytest.mark.parametrize("k", [2, 4])
def test_a_changed_class_count_is_refused_at_load(name: str, k: int, tmp_path: Path) -> None:
    message = _refused(tmp_path, {**_state(name, 3), "n_classes_": k}, name)
    assert "expected" in message


@pytest.mark.parametrize(
    "name", sorted(NO_CLASS_FIELDS - {"temperature_groupwise", "multicalibration"})
)
def test_apply_names_both_files_when_only_n_classes_can_tell(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    z, y = kinds.data(name)
    np.savez(tmp_path / "preds.npz", logits=z, labels=y)
    doc = kinds.fitted(name).to_json()
    doc["state"]["n_classes_"] = 4  # a valid 4-class map of this kind
    (tmp_path / "fitted.json").write_text(json.dumps(doc), encoding="utf-8")
    before = sorted(p.name for p in tmp_path.iterdir())
    capsys.readouterr()
    assert main(["apply", "fitted.json", "preds.npz", "--out", "out.npz"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "calibkit: error: FILE preds.npz: expected 4 columns, as fitted.json was fitted on, "
        "got 3 columns\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == before
