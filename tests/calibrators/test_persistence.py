"""Loaded files are checked against the declared fitted state (the family).

Parametrised over every registered fitted object but Neural Clamping (calibrators, group
calibrators, conformal sets, prior adapters: ``tests/calibrators/kinds.py``) and every
declared field: a file with a field missing, unknown, of the wrong type, shape or range,
non-finite, too deeply nested or truncated is refused by :func:`calibkit.calibrators.load`
with one InputError naming the file and the field; good files still round-trip (see
``test_contract.py``).
"""

from __future__ import annotations

import copy
import functools
import json
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from calibkit.calibrators import CALIBRATORS, load, persistence
from calibkit.calibrators.fitted import load_document
from calibkit.cli import main
from calibkit.core.errors import InputError
from calibkit.core.fitted_state import Array, ArrayList, Param
from tests.calibrators import kinds

#: Every kind saved as one JSON document; Neural Clamping's (beside a tensor file) is
#: checked field by field in ``clamping/test_persistence.py``.
NAMES = kinds.NAMES
NAN = float("nan")


@functools.cache
def _document(name: str) -> str:
    """The JSON text of ``name`` fitted as its kind needs (``kinds.fitted``)."""
    return json.dumps(kinds.fitted(name).to_json())


def _refused(tmp_path: Path, doc: Any, *fields: str) -> str:
    """Write ``doc`` (JSON-encoded unless text), load it: one InputError naming ``fields``."""
    path = tmp_path / "bad.json"
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
    with pytest.raises(InputError) as info:
        load(path)
    message = str(info.value)
    assert message.startswith(f"calibkit file {path}: "), message
    assert "\n" not in message
    for field in fields:
        assert field in message, (field, message)
    return message


def _fields(name: str) -> list[str]:
    return list(CALIBRATORS.get(name).fitted_constraints())


CASES = [(name, field) for name in NAMES for field in _fields(name)]


@pytest.mark.parametrize("name", NAMES)
def test_the_declaration_is_the_fitted_state_in_fit_order(name: str) -> None:
    state = json.loads(_document(name))["state"]
    assert list(state) == _fields(name)


@pytest.mark.parametrize(("name", "field"), CASES)
def test_a_missing_field_is_named(name: str, field: str, tmp_path: Path) -> None:
    doc = json.loads(_document(name))
    del doc["state"][field]
    message = _refused(tmp_path, doc, f"state.{field}: expected", "the field is missing")
    assert "fit()" not in message


#: Values refused for every declared field: a string, NaN, null, an object, a 1 x 1 array.
BAD_VALUES = {
    "string": "abc",
    "nan": NAN,
    "null": None,
    "object": {"__dict__": {}},
    "array": {"__ndarray__": [[1.0]], "dtype": "float64", "shape": [1, 1]},
    "object_array": {"__ndarray__": [[1.0]], "dtype": "object", "shape": [1, 1]},
}


#: Numbers, each refused wherever the field's declared constraint refuses it.
NUMBERS = [-1.0, 0.0, 1e400, -1e400, True, 2.5, 10**30]


@pytest.mark.parametrize(("name", "field"), CASES)
def test_a_wrong_value_is_named(name: str, field: str, tmp_path: Path) -> None:
    # bound to the fitted object's parameters (a temperature within its [t_min, t_max])
    constraint = CALIBRATORS.get(name).fitted_constraints()[field]
    constraint = constraint.bind(kinds.fitted(name).get_params())
    for value in [*BAD_VALUES.values(), *NUMBERS]:
        if value in NUMBERS:
            try:
                constraint.check(field, value)
                continue  # a number the field accepts
            except InputError:
                pass
        doc = json.loads(_document(name))
        doc["state"][field] = value
        _refused(tmp_path, doc, f"state.{field}")


def _arrays(name: str) -> list[str]:
    declared = CALIBRATORS.get(name).fitted_constraints()
    return [f for f, c in declared.items() if isinstance(c, Array | ArrayList)]


ARRAY_CASES = [(name, field) for name in NAMES for field in _arrays(name)]


def _first_encoded(value: Any) -> dict[str, Any]:
    return value[0] if isinstance(value, list) else value


CHANGES = ["nan", "string", "bool", "object", "longer", "dtype", "shape", "extra_key"]


@pytest.mark.parametrize(("name", "field"), ARRAY_CASES)
def test_a_corrupt_array_is_named(name: str, field: str, tmp_path: Path) -> None:
    if not _first_encoded(json.loads(_document(name))["state"][field])["__ndarray__"]:
        pytest.skip(f"{name}'s {field} is empty on this problem (no multicalibration patch)")
    for change in CHANGES:
        _refused(tmp_path, _corrupt_array(json.loads(_document(name)), field, change), field)


def _corrupt_array(doc: dict[str, Any], field: str, change: str) -> dict[str, Any]:
    enc = _first_encoded(doc["state"][field])
    data = enc["__ndarray__"]
    row = data if not isinstance(data[0], list) else data[0]
    if change in ("nan", "string", "bool", "object"):
        row[0] = {"nan": NAN, "string": "0.5", "bool": True, "object": {"a": 1}}[change]
    elif change == "longer":  # the data no longer has the stated shape
        row.append(row[-1])
    elif change == "dtype":
        enc["dtype"] = "object"
    elif change == "shape":
        enc["shape"] = [2**40]
    else:
        enc["__class__"] = "os.system"
    return doc


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("where", ["document", "state", "params"])
def test_an_unknown_field_is_refused_by_name(name: str, where: str, tmp_path: Path) -> None:
    doc = json.loads(_document(name))
    (doc if where == "document" else doc[where])["__dict__"] = {"temperature_": -1.0}
    _refused(tmp_path, doc, "'__dict__'")


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("depth", [100, 200_000])
def test_deep_nesting_is_refused(name: str, depth: int, tmp_path: Path) -> None:
    text = _document(name).replace(
        '"state": {', '"state": {"x_": ' + "[" * depth + "]" * depth + ", "
    )
    _refused(tmp_path, text, "nested at most")


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("cut", [0.3, 0.6, 0.9])
def test_a_truncated_file_is_refused(name: str, cut: float, tmp_path: Path) -> None:
    text = _document(name)
    _refused(tmp_path, text[: int(len(text) * cut)], "valid JSON")


@pytest.mark.parametrize("name", NAMES)
def test_a_wrong_parameter_is_named(name: str, tmp_path: Path) -> None:
    doc = json.loads(_document(name))
    for param in doc["params"]:
        bad = copy.deepcopy(doc)
        bad["params"][param] = "nope"
        _refused(tmp_path, bad, f"params.{param}: expected")


@pytest.mark.parametrize("value", [-1.5, 0.0, NAN, "abc"])
def test_a_bad_temperature_is_blamed_on_the_file(value: object, tmp_path: Path) -> None:
    """A negative temperature would flip every prediction; NaN or 0 would blame the logits."""
    doc = json.loads(_document("temperature"))
    doc["state"]["temperature_"] = value
    message = _refused(tmp_path, doc, "state.temperature_: expected a finite number > 0")
    assert "logits" not in message


def test_inconsistent_temperatures_are_refused(tmp_path: Path) -> None:
    doc = json.loads(_document("temperature"))
    doc["state"]["log_temperature_"] += 1.0
    _refused(tmp_path, doc, "state.log_temperature_")


def test_a_nested_chosen_state_is_checked_too(tmp_path: Path) -> None:
    doc = json.loads(_document("auto"))
    first = next(iter(doc["state"]["chosen_state_"]["state"]))
    del doc["state"]["chosen_state_"]["state"][first]
    _refused(tmp_path, doc, f"state.chosen_state_: state.{first}")
    doc = json.loads(_document("auto"))
    doc["state"]["chosen_"] = "isotonic" if doc["state"]["chosen_"] != "isotonic" else "vector"
    _refused(tmp_path, doc, "state.chosen_")


def test_a_huge_or_special_file_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t.json"
    path.write_text(_document("temperature"), encoding="utf-8")
    monkeypatch.setattr(persistence, "MAX_FILE_BYTES", 100)
    with pytest.raises(InputError, match=re.escape("expected a file of at most")):
        load(path)
    with pytest.raises(InputError, match="a regular file"):
        load(tmp_path)


def test_a_long_value_is_shortened_in_the_message(tmp_path: Path) -> None:
    doc = json.loads(_document("temperature"))
    doc["state"]["temperature_"] = "x" * 10_000
    assert len(_refused(tmp_path, doc, "state.temperature_")) < 300


# ----- values of the right type and range that no fit gives ---------------------------------------
def _array(doc: dict[str, Any], field: str) -> list[Any]:
    return doc["state"][field]["__ndarray__"]  # type: ignore[no-any-return]


def _p0_above_p1(doc: dict[str, Any]) -> None:
    """p0 just above p1: still non-decreasing and below 1, but above p1 (mostly)."""
    state = doc["state"]
    state["p0_"][0]["__ndarray__"] = [min(v + 1e-3, 0.9995) for v in state["p1_"][0]["__ndarray__"]]


def _decreasing_p1(doc: dict[str, Any]) -> None:
    values = doc["state"]["p1_"][0]["__ndarray__"]
    values[0] = values[-1]  # above the next places: a decrease


def _set(field: str, value: object) -> Any:
    def tamper(doc: dict[str, Any]) -> None:
        doc["state"][field] = value

    return tamper


def _set_entry(field: str, value: float) -> Any:
    def tamper(doc: dict[str, Any]) -> None:
        flat = _array(doc, field)
        if isinstance(flat[0], list):
            flat[0][0] = value
        else:
            flat[0] = value

    return tamper


TAMPERED = [
    ("venn_abers", _p0_above_p1, "state.p0_[0]: expected p0_ <= p1_"),
    ("venn_abers", _decreasing_p1, "state.p1_[0]: expected values non-decreasing"),
    ("scaling_binning", _set("slope_", -1.0), "state.slope_"),
    ("scaling_binning", _set("temperature_", 1e300), "state.temperature_"),
    ("platt", _set("intercept_", 1e300), "state.intercept_"),
    ("beta", _set("c_", -1e300), "state.c_"),
    ("beta", _set("a_", 1e300), "state.a_"),
    *((name, _set_entry("bias_", 1e300), "state.bias_") for name in ("svs", "vector", "matrix")),
    *((name, _set_entry("weights_", -1e300), "state.weights_") for name in ("sms", "dirichlet")),
    ("sms_cv", _set_entry("bias_", 1e300), "state.bias_"),
    ("ms_odir", _set_entry("weights_", 1e300), "state.weights_"),
    # log_temperature_ is declared first: its range [log t_min, log t_max] refuses it first
    *(
        (name, _set("temperature_", 1e300), "state.log_temperature_")
        for name in ("temperature", "temperature_smoothed", "svs")
    ),
    ("temperature_ece", _set("temperature_", 1e300), "state.temperature_"),
]


def _with_log(doc: dict[str, Any]) -> None:
    """Keep ``log_temperature_`` consistent with a tampered ``temperature_``."""
    state = doc["state"]
    if "log_temperature_" in state and isinstance(state.get("temperature_"), float):
        state["log_temperature_"] = float(np.log(state["temperature_"]))


@pytest.mark.parametrize(("name", "tamper", "field"), TAMPERED)
def test_a_state_no_fit_gives_is_refused(
    name: str, tamper: Any, field: str, tmp_path: Path
) -> None:
    """Monotonicity, p0 <= p1, a positive slope, coefficients within 1e6 and temperatures in
    the searched range: a file breaking one is refused, naming the file and the field."""
    doc = json.loads(_document(name))
    tamper(doc)
    _with_log(doc)
    _refused(tmp_path, doc, field)


# ----- values outside the range their parameters give the fit (issue #42) -----------------------
def _param_bounded(name: str) -> list[tuple[str, Param]]:
    """``name``'s fitted fields whose upper end is a parameter (``[t_min, t_max]``)."""
    out = []
    for field, constraint in CALIBRATORS.get(name).fitted_constraints().items():
        inner = getattr(constraint, "inner", constraint)  # NoneOr(...)
        high = getattr(inner, "high", None)
        if isinstance(high, Param):
            out.append((field, high))
    return out


BOUNDED = [(name, field, end) for name in NAMES for field, end in _param_bounded(name)]


def test_every_fitted_temperature_is_bounded_by_its_parameters() -> None:
    """The declarations this suite covers: every temperature a fit keeps in [t_min, t_max]."""
    assert {(name, field) for name, field, _ in BOUNDED} == {
        *(
            (n, f)
            for n in ("temperature", "temperature_smoothed", "svs", "sms", "sms_cv")
            for f in ("log_temperature_", "temperature_")
        ),
        ("temperature_ece", "temperature_"),
        ("temperature_ece", "log_temperature_"),
        ("bias_corrected_temperature", "temperature_"),
        ("temperature_groupwise", "temperature_"),
        ("temperature_groupwise", "group_temperatures_"),
        ("multicalibration", "temperature_"),
    }


def _beyond(value: float, end: Param, params: dict[str, Any]) -> float:
    """A value 1% (of the range, on its own scale) past the upper end ``end``."""
    top = end.value(params)
    return top + 0.01 * max(1.0, abs(top))


@pytest.mark.parametrize(("name", "field", "end"), BOUNDED)
def test_a_value_past_its_parameters_range_is_refused_by_name(
    name: str, field: str, end: Param, tmp_path: Path
) -> None:
    """A temperature past t_max (1e308 for BCTS made every prediction nearly uniform) or a
    log temperature past log t_max (past 709, exp overflowed: OverflowError from load) is
    refused naming the field and the range, whatever the other fields say."""
    doc = json.loads(_document(name))
    params = kinds.fitted(name).get_params()
    for value in (_beyond(0.0, end, params), 1e308 if not end.log else 1000.0):
        bad = copy.deepcopy(doc)
        if isinstance(bad["state"][field], dict):  # an array: its first entry
            _array(bad, field)[0] = value
        else:
            bad["state"][field] = value
        message = _refused(tmp_path, bad, f"state.{field}: expected")
        assert f"{end} = {end.value(params):g}" in message, message
    assert load_document(doc).to_json() == doc  # the fitted values are in range


@pytest.mark.parametrize("log_t", [709.0, 710.0, 1000.0, -1000.0])
def test_a_huge_log_temperature_is_an_input_error_not_an_overflow(
    log_t: float, tmp_path: Path
) -> None:
    doc = json.loads(_document("temperature"))
    doc["state"]["log_temperature_"] = log_t
    message = _refused(tmp_path, doc, "state.log_temperature_: expected a finite number in")
    assert message.endswith(f"got {log_t!r}"), message


def _nested_temperature(name: str) -> tuple[dict[str, Any], list[str]]:
    """A document of ``name`` holding a fitted temperature scaling, and where it is."""
    if name == "auto":
        obj = kinds.fit(kinds.new("auto", methods=["temperature"]), "auto")
        return obj.to_json(), ["chosen_state_"]
    obj = kinds.fit(kinds.new(name, calibrator="temperature"), name)
    return obj.to_json(), ["calibrator_"]


@pytest.mark.parametrize("name", ["auto", "conformal", "prior_shift"])
def test_a_huge_log_temperature_underneath_is_refused_by_name(name: str, tmp_path: Path) -> None:
    """auto, a conformal predictor and a prior adapter over temperature scaling: the edit
    in the nested document raised OverflowError from load (a traceback from calibkit
    apply); now one InputError naming the nested field."""
    doc, where = _nested_temperature(name)
    doc["state"][where[0]]["state"]["log_temperature_"] = 1000.0
    _refused(tmp_path, doc, f"state.{where[0]}: state.log_temperature_: expected")


# ----- what the fitted values were computed with (fitted_with_) ----------------------------------
#: Another accepted value of each recorded parameter.
OTHER_VALUE: dict[str, Any] = {
    "conformity_score": {"name": "aps"},  # the kinds' conformal predictor uses raps
    "randomized": True,
    "estimator": {"name": "bbse", "soft": False},  # the kinds' prior adapter uses EM
}
RECORDED = [(name, param) for name in NAMES for param in CALIBRATORS.get(name).fitted_with]


def test_the_recorded_parameters() -> None:
    expected = [
        *(("conformal", p) for p in ("conformity_score", "randomized")),
        ("prior_shift", "estimator"),
    ]
    assert expected == RECORDED


@pytest.mark.parametrize(("name", "param"), RECORDED)
def test_an_edited_parameter_the_fit_used_is_refused(name: str, param: str, tmp_path: Path) -> None:
    """A RAPS predictor whose k_reg, penalty or randomized was edited loaded and gave other
    sets from the stored quantile (tests/calibrators/sets/test_conformal_state.py has the
    coverage); the parameter is now checked against the fit's record."""
    doc = json.loads(_document(name))
    assert doc["state"]["fitted_with_"][param] == doc["params"][param]
    assert doc["params"][param] != OTHER_VALUE[param]
    edited = copy.deepcopy(doc)
    edited["params"][param] = OTHER_VALUE[param]
    message = _refused(tmp_path, edited, f"params.{param}: expected")
    assert "state.fitted_with_" in message, message
    record = copy.deepcopy(doc)  # the record edited instead: the two disagree too
    record["state"]["fitted_with_"][param] = OTHER_VALUE[param]
    _refused(tmp_path, record, f"params.{param}: expected")
    record["state"]["fitted_with_"][param] = "nope"
    _refused(tmp_path, record, f"state.fitted_with_.{param}: expected")


def _format_2(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` as the code before format 3 wrote it: no records (nested documents too)."""
    old = copy.deepcopy(doc)
    old["calibkit"] = 2
    for key in ("fitted_with_", "input_kind_"):
        old["state"].pop(key, None)
    for value in old["state"].values():
        if isinstance(value, dict) and "calibkit" in value:
            value.update(_format_2(value))
    return old


@pytest.mark.parametrize("name", NAMES)
def test_a_document_of_before_0_1_0_is_refused_as_unsupported(name: str, tmp_path: Path) -> None:
    """Issue #45, item 4: format 2 and the version-1 headers were written only by the
    development versions before 0.1.0, the first release: no upgrade keeps them, and
    loading one is one InputError naming the file and saying its format is unsupported."""
    old = _format_2(kinds.fitted(name).to_json())
    unsupported = "(unsupported: written before calibkit 0.1.0)"
    message = _refused(tmp_path, old, f"got format version 2 {unsupported}")
    assert message.startswith(f"calibkit file {tmp_path / 'bad.json'}: document: expected ")
    header = {"calibkit_calibrator": 1, "method": name, "params": {}, "state": {}}
    _refused(tmp_path, header, f"got a calibkit_calibrator document {unsupported}")


@pytest.mark.parametrize("name", [n for n in NAMES if CALIBRATORS.get(n).fitted_with])
def test_saving_after_set_params_changed_a_recorded_parameter_is_refused(name: str) -> None:
    obj = kinds.fit(kinds.new(name), name)
    param = obj.fitted_with[-1]
    obj.set_params(**{param: OTHER_VALUE[param]})
    with pytest.raises(InputError, match=f"^{param}: expected .*fit again before saving"):
        obj.to_json()


@pytest.mark.parametrize(
    ("name", "where"),
    [("temperature", ()), ("auto", ("chosen_state_",)), ("conformal", ("calibrator_",))],
)
def test_calibkit_apply_refuses_a_huge_log_temperature_in_one_line(
    name: str,
    where: tuple[str, ...],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The issue's edit through the command line: OverflowError, a traceback and exit 1
    before; now exit 2 with one line naming the file and the field, and nothing written."""
    monkeypatch.chdir(tmp_path)
    doc = _nested_temperature(name)[0] if where else json.loads(_document(name))
    state = doc["state"][where[0]]["state"] if where else doc["state"]
    state["log_temperature_"] = 1000.0
    Path("bad.json").write_text(json.dumps(doc), encoding="utf-8")
    z, _ = kinds.data(name)
    np.savez("preds.npz", logits=z)
    capsys.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        code = main(["apply", "bad.json", "preds.npz", "-o", "out.npz"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1, err
    assert "Traceback" not in err
    field = "".join(f"state.{w}: " for w in where) + "state.log_temperature_: expected"
    assert err.startswith(f"calibkit: error: calibkit file bad.json: {field}"), err
    assert not Path("out.npz").exists()
