"""Files written by calibkit 0.x (the version-1 documents) still load and predict as before.

``data/v1_*.json`` were written by the code of commit 3b6d706 (``data/write_v1_files.py``
says how), with what that code predicted on a small fixed input beside each
(``v1_*.expected.json``). :func:`calibkit.calibrators.load` reads each one as the class it
names; its probabilities equal the old ones to 1e-9 relative (the same numpy code, but
not the same computation path guaranteed: never 1e-12 across versions), its sets exactly
(the script checked no score lies within 1e-6 of a threshold).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from calibkit.calibrators import CALIBRATORS, load
from calibkit.calibrators.fitted import PostHoc, load_document
from calibkit.core.errors import InputError

DATA = Path(__file__).parent / "data"
#: Each file's case, the method it holds, its kind, and its version-1 header.
CASES = {
    "temperature": ("temperature", "logits", "calibkit_calibrator"),
    "dirichlet": ("dirichlet", "logits", "calibkit_calibrator"),
    "auto": ("auto", "logits", "calibkit_calibrator"),
    "temperature_groupwise": ("temperature_groupwise", "groups", "calibkit_calibrator"),
    "conformal": ("conformal", "sets", "calibkit_conformal"),
    "conformal_full_sets": ("conformal", "sets", "calibkit_conformal"),
    "prior_shift": ("prior_shift", "priors", "calibkit_label_shift"),
}


def test_every_file_is_a_case() -> None:
    files = {p.name.removeprefix("v1_").removesuffix(".json") for p in DATA.glob("v1_*.json")}
    assert files == set(CASES) | {f"{case}.expected" for case in CASES}


@pytest.mark.parametrize("case", CASES)
def test_a_version_1_file_loads_and_predicts_as_before(case: str) -> None:
    method, kind, header = CASES[case]
    path = DATA / f"v1_{case}.json"
    assert json.loads(path.read_text(encoding="utf-8"))[header] == 1  # the old document
    expected = json.loads((DATA / f"v1_{case}.expected.json").read_text(encoding="utf-8"))
    obj = load(path)
    assert isinstance(obj, CALIBRATORS.get(method))
    assert (obj.name, obj.kind) == (method, kind)
    assert type(obj).load(path).get_params() == obj.get_params()
    logits = np.array(expected["logits"])
    metadata = {"groups": expected["groups"]} if "groups" in expected else {}
    probs = obj.predict_proba(logits, **metadata)
    np.testing.assert_allclose(probs, np.array(expected["probs"]), rtol=1e-9, atol=0)
    if "sets" in expected:
        sets = obj.predict_set(logits)  # type: ignore[attr-defined]
        assert sets.tolist() == expected["sets"]


def test_an_infinite_threshold_of_an_old_file_stays_infinite() -> None:
    obj = load(DATA / "v1_conformal_full_sets.json")
    assert np.isposinf(obj.thresholds_).all()  # type: ignore[attr-defined]
    assert obj.predict_set(np.zeros((2, 3))).all()  # type: ignore[attr-defined]


@pytest.mark.parametrize("case", CASES)
def test_an_old_file_saves_as_format_3_and_reads_back_the_same(case: str, tmp_path: Path) -> None:
    old = load(DATA / f"v1_{case}.json")
    old.save(tmp_path / "new.json")
    data = json.loads((tmp_path / "new.json").read_text(encoding="utf-8"))
    assert (data["calibkit"], data["kind"], data["method"]) == (3, old.kind, old.name)
    new: PostHoc = load(tmp_path / "new.json")
    assert json.dumps(new.to_json()) == json.dumps(old.to_json())


def test_a_version_1_calibrator_file_holds_only_calibrators(tmp_path: Path) -> None:
    """calibkit 0.x wrote calibrators of logits and group calibrators with one header; a
    file with that header naming a conformal predictor is not one it wrote."""
    doc = json.loads((DATA / "v1_temperature.json").read_text(encoding="utf-8"))
    doc["method"] = "conformal"
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(InputError) as info:
        load(path)
    assert str(info.value) == (
        f"calibkit file {path}: method: expected a method of kind logits or groups in a "
        "calibkit_calibrator file, got 'conformal', of kind 'sets'"
    )


# ----- format 2 (before the records of format 3) -------------------------------------------------
#: ``data/v2_*.json``, written by the last code writing format 2 (``data/write_v2_files.py``):
#: each case's method and kind.
V2_CASES = {
    "temperature": ("temperature", "logits"),
    "vector": ("vector", "logits"),
    "matrix_on_probs": ("matrix", "logits"),
    "conformal_raps": ("conformal", "sets"),
    "prior_shift": ("prior_shift", "priors"),
}


def test_every_format_2_file_is_a_case() -> None:
    files = {p.name.removeprefix("v2_").removesuffix(".json") for p in DATA.glob("v2_*.json")}
    assert files == set(V2_CASES) | {f"{case}.expected" for case in V2_CASES}


@pytest.mark.parametrize("case", V2_CASES)
def test_a_format_2_file_loads_and_predicts_as_before(case: str, tmp_path: Path) -> None:
    """No record of what it was fitted with: its parameters are taken as the fit's, the
    input kind as unknown (a map of logits takes what it took before); saved again, it
    is a format-3 file with those records, which reads back the same."""
    method, kind = V2_CASES[case]
    path = DATA / f"v2_{case}.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["calibkit"] == 2
    assert not {"fitted_with_", "input_kind_"} & set(doc["state"])
    expected = json.loads((DATA / f"v2_{case}.expected.json").read_text(encoding="utf-8"))
    obj = load(path)
    assert (obj.name, obj.kind) == (method, kind)
    logits = np.array(expected["logits"])
    probs = obj.predict_proba(logits)  # type: ignore[attr-defined]
    np.testing.assert_allclose(probs, np.array(expected["probs"]), rtol=1e-9, atol=0)
    if "sets" in expected:
        assert obj.predict_set(logits).tolist() == expected["sets"]  # type: ignore[attr-defined]
    if obj.fitted_with:
        assert obj.fitted_with_ == {p: getattr(obj, p) for p in obj.fitted_with}  # type: ignore[attr-defined]
    if not obj.shift_invariant:
        assert obj.input_kind_ == "unknown"  # type: ignore[attr-defined]
    obj.save(tmp_path / "new.json")
    new = json.loads((tmp_path / "new.json").read_text(encoding="utf-8"))
    assert new["calibkit"] == 3
    assert list(new["state"]) == list(type(obj).fitted_constraints())
    again = load(tmp_path / "new.json")
    assert json.dumps(again.to_json()) == json.dumps(obj.to_json())
    np.testing.assert_array_equal(again.predict_proba(logits), probs)  # type: ignore[attr-defined]


def test_a_format_2_file_holds_no_record_to_check_its_parameters_against() -> None:
    """What format 3 adds cannot be checked in a file written before it: a format-2 RAPS
    predictor's k_reg edited loads, as it did (its score parameters are trusted, as those
    of a hostile file edited consistently would be); the same edit of a format-3 file is
    refused (tests/calibrators/sets/test_conformal_state.py)."""
    doc = json.loads((DATA / "v2_conformal_raps.json").read_text(encoding="utf-8"))
    doc["params"]["k_reg"] = 0
    assert load_document(doc).k_reg == 0  # type: ignore[attr-defined]
    doc["calibkit"] = 3
    with pytest.raises(InputError, match=r"state\.fitted_with_: expected .*the field is missing"):
        load_document(doc)
