"""The one contract of every fitted object (:class:`calibkit.calibrators.fitted.PostHoc`).

Parametrised from the registry over every kind but Neural Clamping (``model``, which takes
the model: ``tests/calibrators/model/clamping``): calibrators of logits, group calibrators,
conformal predictors and prior adapters, each a small fitted instance of
``tests/calibrators/kinds.py``. Each one:

- round-trips bit for bit: ``save`` then :func:`calibkit.calibrators.load`, ``cls.load``,
  ``cls.from_json`` and :func:`load_document` give the same document text and the same
  answers, exactly;
- is refused, with one InputError naming the file and the field, as a file of another
  kind given to ``cls.load``, a foreign JSON, a newer format version, an unknown field, a
  missing state field, a kind its method does not have, or NaN in its state;
- clones, gets and sets its parameters as a scikit-learn estimator (an undeclared one
  refused by name), raises NotFittedError unfitted, and refuses per-row inputs it does
  not declare (``fit(z, y, colour=...)``), naming them;
- exports with ``to_module()`` a module that gives its Python answer (probabilities;
  sets for a conformal predictor) in eager mode, TorchScript, ``torch.export`` and ONNX
  Runtime (the ways of ``test_modules.PATHS``, which checks the calibrators of logits;
  here the group calibrators, given group codes, conformal sets and prior adapters).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sklearn.base import clone

from calibkit.calibrators import CALIBRATORS, load
from calibkit.calibrators.fitted import PostHoc, load_document
from calibkit.core.errors import InputError, NotFittedError
from calibkit.core.fitted_state import Array, ArrayList
from tests.calibrators import kinds
from tests.calibrators.test_modules import CASES as LOGIT_MODULE_CASES
from tests.calibrators.test_modules import PATHS

pytestmark = [
    pytest.mark.usefixtures("one_thread"),
    pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning"),
    # two inputs (logits, group codes) share the batch dimension, as they should
    pytest.mark.filterwarnings("ignore:# The axis name. batch will not be used:UserWarning"),
]

NAMES = kinds.NAMES
#: The kinds whose module parity is checked here (the calibrators of logits: test_modules).
MODULE_NAMES = CALIBRATORS.names(kind=("groups", "sets", "priors"))


def _text(obj: PostHoc) -> str:
    return json.dumps(obj.to_json())


def _answers(obj: PostHoc, name: str) -> list[np.ndarray]:
    """Everything ``obj`` predicts on ``kinds.rows(name)``: its kind's answer, and a
    conformal predictor's probabilities besides its sets."""
    z, metadata = kinds.rows(name)
    answers = [kinds.answer(obj, z, metadata)]
    if obj.kind == "sets":
        answers.append(obj.predict_proba(z))  # type: ignore[attr-defined]
    return answers


# ----- persistence ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_the_document_is_format_3_of_the_kind(name: str) -> None:
    doc = json.loads(_text(kinds.fitted(name)))
    assert list(doc) == ["calibkit", "kind", "method", "params", "state"]
    assert (doc["calibkit"], doc["kind"], doc["method"]) == (3, CALIBRATORS.kind_of(name), name)
    assert list(doc["state"]) == list(CALIBRATORS.get(name).fitted_constraints())


@pytest.mark.parametrize("name", NAMES)
def test_the_round_trip_is_bit_exact(name: str, tmp_path: Path) -> None:
    obj = kinds.fitted(name)
    text, cls = _text(obj), type(obj)
    path = tmp_path / f"{name}.json"
    obj.save(path)
    assert json.loads(path.read_text(encoding="utf-8")) == json.loads(text)
    expected = _answers(obj, name)
    doc = json.loads(text)
    for back in (load(path), cls.load(path), cls.from_json(doc), load_document(doc)):
        assert type(back) is cls
        assert _text(back) == text
        assert back.get_params() == obj.get_params()
        for got, want in zip(_answers(back, name), expected, strict=True):
            np.testing.assert_array_equal(got, want, strict=True)


def _of_another_kind(name: str) -> str:
    return "temperature" if CALIBRATORS.kind_of(name) != "logits" else "conformal"


@pytest.mark.parametrize("name", NAMES)
def test_a_file_of_another_kind_is_refused_by_cls_load(name: str, tmp_path: Path) -> None:
    cls, other = type(kinds.fitted(name)), kinds.fitted(_of_another_kind(name))
    path = tmp_path / "other.json"
    other.save(path)
    with pytest.raises(InputError) as info:
        cls.load(path)
    assert str(info.value) == (
        f"file {path}: expected a saved {cls.__name__} (calibkit.load reads any kind), got a "
        f"saved {type(other).__name__} ({other.name!r}, kind {other.kind!r})"
    )
    with pytest.raises(InputError, match=rf"^calibkit document: expected a saved {cls.__name__}"):
        cls.from_json(other.to_json())


def _foreign(doc: dict[str, Any], name: str) -> str:
    doc.clear()
    doc.update({"model": "resnet18", "weights": [0.5, 1.5]})
    return "document: expected a calibkit document of format version 3, got something else"


def _newer(doc: dict[str, Any], name: str) -> str:
    doc["calibkit"] = 4
    return "document: expected a calibkit document of format version 3, got version 4"


def _unknown(doc: dict[str, Any], name: str) -> str:
    doc["colour"] = "red"
    fields = "calibkit, kind, method, params, state"
    return f"document: expected the fields {fields}, got unknown 'colour'"


def _missing(doc: dict[str, Any], name: str) -> str:
    cls = CALIBRATORS.get(name)
    field = [f for f in cls.fitted_constraints() if f not in cls.optional_state][-1]
    del doc["state"][field]
    return f"state.{field}: expected "


def _wrong_kind(doc: dict[str, Any], name: str) -> str:
    kind = "sets" if doc["kind"] != "sets" else "logits"
    doc["kind"] = kind
    return f"kind: expected {CALIBRATORS.kind_of(name)!r}, the kind of {name!r}, got {kind!r}"


def _nan(encoded: bool) -> Any:
    """NaN in place of the first float of the first fitted field holding one, a float array's
    if the state has one (a literal NaN, as a foreign writer puts it, or encoded)."""

    def tamper(doc: dict[str, Any], name: str) -> str:
        nan = {"__float__": "nan"} if encoded else float("nan")
        field = _first_float_field(doc["state"], name)
        held = {field: doc["state"][field]}  # a float field is replaced in its holder
        assert _put_nan(held, nan)
        doc["state"][field] = held[field]
        return f"state.{field}"

    return tamper


def _first_float_field(state: dict[str, Any], name: str) -> str:
    declared = CALIBRATORS.get(name).fitted_constraints()
    arrays = [f for f, c in declared.items() if isinstance(c, Array | ArrayList)]
    for field in [*arrays, *declared]:
        if field in state and _put_nan({field: copy.deepcopy(state[field])}, None):
            return field
    raise AssertionError(f"no float in {name}'s state")


def _put_nan(value: Any, nan: Any) -> bool:
    """Replace the first float in ``value`` (nested lists and mappings; a float64 array's
    entries, never its shape) by ``nan``; whether there was one."""
    if isinstance(value, dict) and "__ndarray__" in value:
        return value["dtype"] == "float64" and _put_nan(value["__ndarray__"], nan)
    if not isinstance(value, dict | list):
        return False
    for key in list(value) if isinstance(value, dict) else range(len(value)):
        if isinstance(value[key], float):
            value[key] = nan
            return True
        if _put_nan(value[key], nan):
            return True
    return False


BAD_DOCUMENTS = {
    "foreign": _foreign,
    "newer": _newer,
    "unknown_field": _unknown,
    "missing_state_field": _missing,
    "wrong_kind": _wrong_kind,
    "nan": _nan(encoded=False),
    "encoded_nan": _nan(encoded=True),
}


@pytest.mark.parametrize("bad", BAD_DOCUMENTS)
@pytest.mark.parametrize("name", NAMES)
def test_a_bad_file_is_refused_naming_the_field(name: str, bad: str, tmp_path: Path) -> None:
    obj = kinds.fitted(name)
    doc = json.loads(_text(obj))
    start = BAD_DOCUMENTS[bad](doc, name)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    for read in (load, type(obj).load):
        with pytest.raises(InputError) as info:
            read(path)
        message = str(info.value)
        assert message.startswith(f"calibkit file {path}: {start}"), message
        assert "\n" not in message


def test_nan_goes_into_an_array_where_the_state_has_one() -> None:
    """The NaN cases tamper a float array, not a scalar, wherever the state has one."""
    in_arrays = set()
    for name in NAMES:
        state = json.loads(_text(kinds.fitted(name)))["state"]
        value = state[_first_float_field(state, name)]
        first = value[0] if isinstance(value, list) else value
        if isinstance(first, dict) and "__ndarray__" in first:
            in_arrays.add(name)
    assert {"dirichlet", "temperature_groupwise", "conformal", "prior_shift"} <= in_arrays


# ----- the estimator --------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_clone_get_and_set_params(name: str) -> None:
    obj = kinds.fitted(name)
    twin = clone(obj)
    assert type(twin) is type(obj)
    assert not twin.is_fitted
    assert twin.get_params() == obj.get_params()
    fresh = kinds.new(name)
    before = fresh.get_params()
    with pytest.raises(InputError) as info:
        fresh.set_params(colour="red")
    declared = ", ".join(CALIBRATORS.get(name).param_constraints)
    expected = f"parameters among {declared}" if declared else "no parameters"
    assert str(info.value) == f"{name}: expected {expected}, got 'colour'"
    assert fresh.get_params() == before
    assert fresh.set_params(**obj.get_params()) is fresh
    assert fresh.get_params() == obj.get_params()


@pytest.mark.parametrize("name", NAMES)
def test_unfitted_use_raises_not_fitted(name: str, tmp_path: Path) -> None:
    obj = kinds.new(name)
    z, metadata = kinds.rows(name)
    uses = {
        "answer": lambda: kinds.answer(obj, z, metadata),
        "to_json": obj.to_json,
        "to_module": obj.to_module,
        "save": lambda: obj.save(tmp_path / "unfitted.json"),
    }
    for use in uses.values():
        with pytest.raises(NotFittedError):
            use()
    assert not (tmp_path / "unfitted.json").exists()


@pytest.mark.parametrize("name", NAMES)
def test_a_fit_stopped_midway_leaves_the_object_as_it_was(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fit stopped after it began to set state (here: by a BaseException, as Ctrl-C is,
    right after it records ``n_classes_`` and its parameters) leaves an unfitted object
    unfitted, and a fitted one with its earlier fit, whole (before, ``is_fitted`` was True
    and ``predict_proba`` an AttributeError)."""
    real = PostHoc._record_params

    class Stopped(BaseException):
        pass

    def interrupted(self: PostHoc) -> None:
        real(self)
        raise Stopped

    unfitted, fitted = kinds.new(name), kinds.fit(kinds.new(name), name)
    before = {"unfitted": dict(vars(unfitted)), "fitted": _text(fitted)}
    z, metadata = kinds.rows(name)
    answer = kinds.answer(fitted, z, metadata)
    monkeypatch.setattr(PostHoc, "_record_params", interrupted)
    for obj in (unfitted, fitted):
        with pytest.raises(Stopped):
            kinds.fit(obj, name)
    assert vars(unfitted) == before["unfitted"]
    assert not unfitted.is_fitted
    assert _text(fitted) == before["fitted"]
    np.testing.assert_array_equal(kinds.answer(fitted, z, metadata), answer)


@pytest.mark.parametrize("name", CALIBRATORS.names(kind="priors"))
def test_an_unadapted_prior_adapter_saves_but_predicts_nothing(name: str, tmp_path: Path) -> None:
    z, y = kinds.data(name)
    obj = kinds.new(name).fit(z, y)  # type: ignore[attr-defined]
    obj.save(tmp_path / "unadapted.json")
    back = load(tmp_path / "unadapted.json")
    assert _text(back) == _text(obj)
    for adapter in (obj, back):
        with pytest.raises(NotFittedError, match="adapt"):
            adapter.predict_proba(z)
        with pytest.raises(NotFittedError, match="adapt"):
            adapter.to_module()


@pytest.mark.parametrize("name", NAMES)
def test_undeclared_metadata_is_refused_by_name(name: str) -> None:
    z, y = kinds.data(name)
    declared = ", ".join(CALIBRATORS.get(name).fit_metadata) or "none"
    expected = f"colour: expected only the inputs {name!r} declares ({declared}), got a value"
    with pytest.raises(InputError) as info:
        kinds.new(name).fit(z, y, colour=np.zeros(y.shape[0]))  # type: ignore[attr-defined]
    assert str(info.value) == expected
    with pytest.raises(InputError) as info:
        kinds.fitted(name).predict_proba(z, colour=np.zeros(y.shape[0]))  # type: ignore[attr-defined]
    assert str(info.value) == expected


# ----- the module -----------------------------------------------------------------------------
def test_every_kind_has_its_module_parity_checked() -> None:
    assert set(NAMES) == set(MODULE_NAMES) | (set(NAMES) & set(LOGIT_MODULE_CASES))


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("name", MODULE_NAMES)
def test_the_module_gives_the_python_answer(name: str, path: str, tmp_path: Path) -> None:
    """Probabilities to 1e-9 relative (torch's, ONNX Runtime's and numpy's exp and log
    differ in the last bits), sets exactly where no score is within 1e-9 of a threshold."""
    obj = kinds.fitted(name)
    z, metadata = kinds.rows(name)
    inputs = kinds.module_inputs(obj, z, metadata)
    got = PATHS[path](obj.to_module(), inputs if len(inputs) > 1 else inputs[0], tmp_path)
    expected = kinds.answer(obj, z, metadata)
    assert (got.dtype, got.shape) == (expected.dtype, expected.shape)
    if obj.kind == "sets":
        scores = obj.predict_scores(z)  # type: ignore[attr-defined]
        near = np.abs(scores - obj.thresholds_) <= 1e-9  # type: ignore[attr-defined]
        assert near.mean() < 0.05
        assert (got == expected)[~near].all()
        assert 0 < expected.sum() < expected.size  # neither empty nor full: a real check
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=0)


@pytest.mark.parametrize("name", CALIBRATORS.names(kind="groups"))
def test_a_group_module_takes_the_codes(name: str) -> None:
    """Codes change the answer (the rows of each group get their own map), and no codes
    give the global map, as ``groups=None`` does."""
    obj = kinds.fitted(name)
    z, metadata = kinds.rows(name)
    logits, codes = kinds.module_inputs(obj, z, metadata)
    assert set(codes.tolist()) == {-1, 0, 1}  # g2 was not seen at fit
    module = obj.to_module()
    with_codes, without = module(logits, codes).numpy(), module(logits).numpy()
    np.testing.assert_allclose(without, obj.predict_proba(z), rtol=1e-9, atol=0)  # type: ignore[attr-defined]
    seen = codes.numpy() >= 0
    assert not np.allclose(with_codes[seen], without[seen], rtol=1e-6, atol=0)
    np.testing.assert_array_equal(with_codes[~seen], without[~seen])
