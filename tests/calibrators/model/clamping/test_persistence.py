"""Tests of saving and loading a fitted Neural Clamping (the model kind's document and a tensor
file beside it)."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pytest
import safetensors.torch
import torch

import calibkit
from calibkit.calibrators.fitted import load_document
from calibkit.calibrators.model.clamping import (
    NeuralClamping,
    NeuralClampingCE,
    NeuralClampingFocal,
    SGDSettings,
)
from calibkit.calibrators.model.clamping.settings import SGD_FIELDS
from calibkit.core.errors import InputError
from tests.calibrators.model.clamping.problems import problem

pytestmark = pytest.mark.usefixtures("one_thread")

QUICK = SGDSettings(epochs=1, batch_size=64, progress=False)


def _write(path: Path, doc: dict[str, object]) -> None:
    path.write_text(json.dumps(doc), encoding="utf-8")


def _tensors(path: Path, data: bytes) -> dict[str, object]:
    """Write ``data`` as the tensor file of the document at ``path``, the document's checksum
    updated to match (a tamperer who knows the format)."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    (path.parent / doc["tensors_file"]).write_bytes(data)
    doc["tensors_sha256"] = hashlib.sha256(data).hexdigest()
    _write(path, doc)
    return doc


def test_save_load_round_trip(tmp_path: Path) -> None:
    model, x, y = problem()
    nc = NeuralClamping(
        model, gamma=(0.0, 1.0), init="random", sgd=SGDSettings(epochs=2, progress=False)
    )
    nc.fit(x, y)
    nc.save(tmp_path / "nc")
    doc = json.loads((tmp_path / "nc.json").read_text())
    # the base class is not registered: saved as nc_fl, which fixes no parameter
    assert {k: doc[k] for k in ("calibkit", "kind", "method", "tensors_file")} == {
        "calibkit": 3,
        "kind": "model",
        "method": "nc_fl",
        "tensors_file": "nc.safetensors",
    }
    data = (tmp_path / "nc.safetensors").read_bytes()
    assert doc["tensors_sha256"] == hashlib.sha256(data).hexdigest()
    assert "delta_" not in doc["state"]
    assert set(doc["state"]) == set(nc.fitted_state()) - {"delta_"}
    back = NeuralClamping.load(tmp_path / "nc", model)
    assert type(back) is NeuralClampingFocal
    assert torch.equal(back.delta_, nc.delta_)
    assert back.temperature_ == nc.temperature_
    assert back.fitted_state().keys() == nc.fitted_state().keys()
    assert back.history_ == nc.history_
    assert back.ece_by_gamma_ == nc.ece_by_gamma_
    assert back.sgd_log_temperature_ == nc.sgd_log_temperature_
    assert back.delta_kept_
    assert back.holdout_losses_ == []
    assert (back.guard_, back.holdout_ts_loss_) == ("no hold-out", None)
    held = NeuralClamping(
        model, init="random", holdout=0.2, sgd=SGDSettings(epochs=2, progress=False)
    ).fit(x, y)
    held.save(tmp_path / "held.json")
    again = calibkit.load(tmp_path / "held.json", model=model)
    assert isinstance(again, NeuralClamping)
    assert (again.delta_kept_, again.holdout_losses_) == (held.delta_kept_, held.holdout_losses_)
    assert held.guard_ in ("delta kept", "delta dropped", "temperature scaling")
    assert (again.guard_, again.holdout_ts_loss_) == (held.guard_, held.holdout_ts_loss_)
    assert again.guard == held.guard
    assert back.get_params() == nc.get_params()
    assert np.array_equal(back.predict_proba(x), nc.predict_proba(x))
    fast = NeuralClamping.fast(model, sgd=SGDSettings(progress=False)).fit(x, y)
    fast.save(tmp_path / "fast")  # no SGD temperature: null in the JSON, NaN again on load
    assert json.loads((tmp_path / "fast.json").read_text())["state"]["sgd_log_temperature_"] is None
    assert math.isnan(NeuralClamping.load(tmp_path / "fast", model).sgd_log_temperature_)


def test_to_json_is_the_saved_document_without_its_tensor_file(tmp_path: Path) -> None:
    model, x, y = problem()
    nc = NeuralClampingCE(model, sgd=QUICK).fit(x, y)
    nc.save(tmp_path / "nc")
    saved = json.loads((tmp_path / "nc.json").read_text())
    assert nc.to_json() == {**saved, "tensors_file": None}
    with pytest.raises(InputError, match=r"calibkit\.load\(path, model=\.\.\.\)") as info:
        load_document(nc.to_json())
    assert info.value.argument.endswith("document")
    _write(tmp_path / "alone.json", nc.to_json())  # a document without a tensor file
    with pytest.raises(InputError, match="tensors_file"):
        calibkit.load(tmp_path / "alone.json", model=model)


def test_a_model_is_needed(tmp_path: Path) -> None:
    model, x, y = problem()
    NeuralClampingCE(model, sgd=QUICK).fit(x, y).save(tmp_path / "nc")
    for load in (
        lambda: calibkit.load(tmp_path / "nc.json"),
        lambda: NeuralClampingCE.load(tmp_path / "nc"),
        lambda: calibkit.PostHoc.load(tmp_path / "nc.json"),
    ):
        with pytest.raises(InputError, match=r"model: expected the torch\.nn\.Module"):
            load()
    with pytest.raises(InputError, match=r"model: expected a torch\.nn\.Module"):
        calibkit.load(tmp_path / "nc.json", model="a model")  # type: ignore[arg-type]


def test_tampered_tensor_files_are_refused_naming_the_file(tmp_path: Path) -> None:
    model, x, y = problem()
    nc = NeuralClampingCE(model, sgd=QUICK).fit(x, y)
    nc.save(tmp_path / "nc")
    path, tensors = tmp_path / "nc.json", tmp_path / "nc.safetensors"
    original = path.read_text()
    tensors.write_bytes(b"garbage")
    with pytest.raises(InputError, match="checksum") as info:
        NeuralClampingCE.load(path, model)
    assert str(tensors) in info.value.argument
    # a checksum that matches, over contents that are not what a fit writes
    delta = nc.delta_
    wrong = {
        "not safetensors": b"\x00" * 64,
        "truncated": safetensors.torch.save({"delta": delta})[:-4],
        "another name": safetensors.torch.save({"weights": delta}),
        "an extra tensor": safetensors.torch.save({"delta": delta, "x": delta.clone()}),
        "integers": safetensors.torch.save({"delta": delta.to(torch.int32)}),
        "float8": safetensors.torch.save({"delta": delta.to(torch.float8_e4m3fn)}),
        "non-finite": safetensors.torch.save({"delta": torch.full_like(delta, math.inf)}),
        "a scalar": safetensors.torch.save({"delta": torch.tensor(0.5)}),
    }
    for what, data in wrong.items():
        path.write_text(original)
        _tensors(path, data)
        with pytest.raises(InputError) as info:
            NeuralClampingCE.load(path, model)
        assert str(tensors) in info.value.argument, what
    path.write_text(original)
    tensors.unlink()
    with pytest.raises(InputError, match=r"nc\.safetensors") as info:
        NeuralClampingCE.load(path, model)
    assert info.value.argument.endswith("tensors_file")
    with pytest.raises(InputError, match="an existing file"):
        NeuralClamping.load(tmp_path / "absent", model)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("tensors_file", "../nc.safetensors"),
        ("tensors_file", "/etc/passwd"),
        ("tensors_file", "nc.json"),
        ("tensors_file", 3),
        ("tensors_sha256", "not hex"),
        ("tensors_sha256", None),
    ],
)
def test_a_bad_tensor_field_is_refused(field: str, value: object, tmp_path: Path) -> None:
    model, x, y = problem()
    NeuralClampingCE(model, sgd=QUICK).fit(x, y).save(tmp_path / "nc")
    doc = json.loads((tmp_path / "nc.json").read_text())
    _write(tmp_path / "nc.json", {**doc, field: value})
    with pytest.raises(InputError) as info:
        calibkit.load(tmp_path / "nc.json", model=model)
    assert info.value.argument.endswith(field)


def _without(fields: dict[str, object], key: str) -> dict[str, object]:
    return {k: v for k, v in fields.items() if k != key}


def test_tampered_documents_are_refused_naming_the_field(tmp_path: Path) -> None:
    model, x, y = problem()
    NeuralClampingCE(model, sgd=QUICK).fit(x, y).save(tmp_path / "nc")
    doc = json.loads((tmp_path / "nc.json").read_text())
    cases = {
        "params.gamma": {**doc, "params": {**doc["params"], "gamma": [1.0]}},  # nc_ce fixes 0
        "params.lr": {**doc, "params": {**doc["params"], "lr": -1.0}},
        "params.device": {**doc, "params": {**doc["params"], "device": 3}},
        "params.epochs": {**doc, "params": _without(doc["params"], "epochs")},
        "params": {**doc, "params": {**doc["params"], "sgd": None}},
        "state.temperature_": {**doc, "state": {**doc["state"], "temperature_": -1.0}},
        "state.log_temperature_": {**doc, "state": {**doc["state"], "log_temperature_": 9.0}},
        "state.gamma_": {**doc, "state": {**doc["state"], "gamma_": 1.0}},
        "state.ece_by_gamma_": {**doc, "state": {**doc["state"], "ece_by_gamma_": [[0.0]]}},
        "state.guard_": {**doc, "state": _without(doc["state"], "guard_")},
        "state": {**doc, "state": {**doc["state"], "delta_": [0.0]}},
        "kind": {**doc, "method": "temperature"},  # a logit calibrator, not a model kind
        "method": {**doc, "method": "nc_nope"},
    }
    for field, bad in cases.items():
        _write(tmp_path / "nc.json", bad)
        with pytest.raises(InputError) as info:
            calibkit.load(tmp_path / "nc.json", model=model)
        assert info.value.argument == f"calibkit file {tmp_path / 'nc.json'}: {field}", field


def test_a_sidecar_of_before_0_1_0_is_refused_as_unsupported(tmp_path: Path) -> None:
    """Issue #45, item 4: the ``calibkit_neural_clamping`` sidecar and format 2 were written
    only before 0.1.0, the first release: one InputError naming the file, no upgrade."""
    model, x, y = problem()
    NeuralClamping(model, sgd=QUICK).fit(x, y).save(tmp_path / "nc")
    doc = json.loads((tmp_path / "nc.json").read_text())
    sidecar = {
        "calibkit_neural_clamping": 1,
        "params": doc["params"],
        "state": doc["state"],
        "delta_file": doc["tensors_file"],
        "delta_sha256": doc["tensors_sha256"],
    }
    unsupported = "(unsupported: written before calibkit 0.1.0)"
    for old, got in [
        (sidecar, f"a calibkit_neural_clamping document {unsupported}"),
        ({**doc, "calibkit": 2}, f"format version 2 {unsupported}"),
    ]:
        _write(tmp_path / "nc.json", old)
        with pytest.raises(InputError) as info:
            calibkit.load(tmp_path / "nc.json", model=model)
        assert info.value.argument == f"calibkit file {tmp_path / 'nc.json'}: document"
        assert info.value.got == got


def test_a_guard_that_disagrees_with_the_fit_is_refused(tmp_path: Path) -> None:
    model, x, y = problem()
    NeuralClamping(model, holdout=0.2, sgd=QUICK).fit(x, y).save(tmp_path / "nc")
    doc = json.loads((tmp_path / "nc.json").read_text())
    for guard, kept in [
        ("temperature scaling", True),
        ("delta kept", False),
        ("no hold-out", True),
    ]:
        doc["state"].update(guard_=guard, delta_kept_=kept)
        _write(tmp_path / "nc.json", doc)
        with pytest.raises(InputError, match=r"state\.guard_"):
            NeuralClamping.load(tmp_path / "nc", model)
    doc["state"]["guard_"] = "trust me"
    _write(tmp_path / "nc.json", doc)
    with pytest.raises(InputError, match=r"state\.guard_"):
        NeuralClamping.load(tmp_path / "nc", model)


def test_the_document_keeps_the_settings_flat(tmp_path: Path) -> None:
    model, x, y = problem()
    NeuralClamping(model, sgd=QUICK).fit(x, y).save(tmp_path / "nc")
    params = json.loads((tmp_path / "nc.json").read_text())["params"]
    assert "sgd" not in params
    assert set(SGD_FIELDS) <= set(params)
    assert (params["epochs"], params["batch_size"]) == (1, 64)


# ----- issue #42: values no fit gives, and a model of another class count -----------------------
def _saved_fit(tmp_path: Path, **params: object) -> tuple[torch.nn.Module, dict[str, object]]:
    model, x, y = problem()
    NeuralClamping(model, sgd=QUICK, **params).fit(x, y).save(tmp_path / "nc")  # type: ignore[arg-type]
    return model, json.loads((tmp_path / "nc.json").read_text())


def _refused_nc(tmp_path: Path, doc: dict[str, object], model: torch.nn.Module) -> str:
    _write(tmp_path / "nc.json", doc)
    with pytest.raises(InputError) as info:
        calibkit.load(tmp_path / "nc.json", model=model)
    message = str(info.value)
    assert message.startswith(f"calibkit file {tmp_path / 'nc.json'}: "), message
    return message


@pytest.mark.parametrize("log_t", [709.0, 1000.0, -1000.0])
def test_a_huge_log_temperature_is_an_input_error_not_an_overflow(
    log_t: float, tmp_path: Path
) -> None:
    """Past about 709, exp overflowed: OverflowError from load (a traceback from apply)."""
    model, doc = _saved_fit(tmp_path)
    state = doc["state"]
    assert isinstance(state, dict)
    for field in ("log_temperature_", "sgd_log_temperature_"):
        bad = {**doc, "state": {**state, field: log_t}}
        assert f"state.{field}: expected" in _refused_nc(tmp_path, bad, model)


def test_the_exact_temperature_step_keeps_its_range(tmp_path: Path) -> None:
    """A joint SGD refined by the exact step (the default) ends in T_BOUNDS = [0.01, 100]:
    a consistent pair (log T, T) of T = e^6 (403) does not."""
    model, doc = _saved_fit(tmp_path)
    state = doc["state"]
    assert isinstance(state, dict)
    bad = {**doc, "state": {**state, "log_temperature_": 6.0, "temperature_": math.exp(6.0)}}
    message = _refused_nc(tmp_path, bad, model)
    assert "state.log_temperature_: expected a log temperature in [log 0.01, log 100]" in message


def test_without_the_exact_step_the_temperature_is_where_sgd_left_it(tmp_path: Path) -> None:
    model, doc = _saved_fit(tmp_path, refine_temperature=False)
    state = doc["state"]
    assert isinstance(state, dict)
    assert state["log_temperature_"] == state["sgd_log_temperature_"]
    log_t = state["sgd_log_temperature_"] + 0.5
    bad = {**doc, "state": {**state, "log_temperature_": log_t, "temperature_": math.exp(log_t)}}
    assert "state.log_temperature_: expected state.sgd_log_temperature_" in _refused_nc(
        tmp_path, bad, model
    )


def test_a_model_of_another_class_count_is_refused(tmp_path: Path) -> None:
    """A file fitted for a 4-class model loaded with a 3-class one (or a 5-class one) and
    predicted that model's columns; the model is now checked on load, by one pass over the
    saved delta, and again at prediction."""
    model, doc = _saved_fit(tmp_path)
    _, x, _ = problem()
    assert doc["state"]["n_classes_"] == 4  # type: ignore[index]
    for k in (3, 5):
        other, _, _ = problem(k=k)
        message = _refused_nc(tmp_path, doc, other)
        assert message.endswith(
            f"model: expected a classifier of 4 classes, as state.n_classes_ says, got one of "
            f"{k} classes"
        ), message
    wrong_inputs = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3, 4))
    assert "model: expected a classifier of inputs of shape (2, 2, 2)" in _refused_nc(
        tmp_path, doc, wrong_inputs
    )
    nc = calibkit.load(tmp_path / "nc.json", model=model)
    nc.model = problem(k=3)[0]  # swapped after loading
    with pytest.raises(InputError, match=r"model: expected a model of 4 classes"):
        nc.predict_proba(x)


def test_an_edited_normalisation_is_refused(tmp_path: Path) -> None:
    """``delta_`` is added to images normalised by ``mean`` and ``std``: recorded by the fit."""
    model, doc = _saved_fit(tmp_path, mean=(0.5, 0.5), std=(0.25, 0.25))
    state, params = doc["state"], doc["params"]
    assert isinstance(state, dict)
    assert isinstance(params, dict)
    assert state["fitted_with_"] == {"mean": [0.5, 0.5], "std": [0.25, 0.25]}
    bad = {**doc, "params": {**params, "std": [1.0, 1.0]}}
    assert "params.std: expected (0.25, 0.25), the value the fit used" in _refused_nc(
        tmp_path, bad, model
    )
