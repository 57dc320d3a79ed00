"""The one contract of a fitted object (:class:`~calibkit.calibrators.fitted.PostHoc`) for the
``model`` kind: every calibrator that takes the model (``CALIBRATORS.names(kind="model")``,
the Neural Clamping variants), parametrised from the registry.

Each is fitted quickly on ``problem()`` (one epoch: the tests read the contract, not the
quality), then: the save -> load round trip is bit-exact (the same two files again, the
same predictions), through ``calibkit.load``, ``PostHoc.load`` and the class's ``load``;
``to_json`` is the saved document without its tensor file, which ``load_document`` refuses;
``clone`` / ``get_params`` / ``set_params``; a tampered or foreign file is refused with one
InputError naming the file; ``to_module()`` (a ``CalibratedModel``) gives ``predict_proba``
eager, scripted, exported and in ONNX (the paths of ``tests/calibrators/test_modules.py``).
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
import safetensors.torch
import torch
from sklearn.base import clone

import calibkit
from calibkit.calibrators import CALIBRATORS, CalibratedModel, create_calibrator
from calibkit.calibrators.fitted import PostHoc, load_document
from calibkit.calibrators.logit.temperature import TemperatureScaling
from calibkit.calibrators.model.clamping import NeuralClamping
from calibkit.calibrators.model.model_calibrator import ModelCalibrator
from calibkit.core.errors import InputError, NotFittedError
from tests.calibrators.model.clamping.problems import problem
from tests.calibrators.test_modules import PATHS, TOLERANCE

pytestmark = [
    pytest.mark.usefixtures("one_thread"),
    pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning"),
]

NAMES = CALIBRATORS.names(kind="model")
QUICK = {"epochs": 1, "batch_size": 64, "progress": False}


@functools.cache
def fitted(name: str) -> tuple[ModelCalibrator, torch.Tensor, torch.Tensor]:
    """``name`` fitted on ``problem()`` (not to be changed by a test), its inputs and labels."""
    model, x, y = problem()
    cal = create_calibrator(name, model=model, **QUICK)
    assert isinstance(cal, ModelCalibrator)
    return cal.fit(x, y), x, y


def _saved(name: str, folder: Path) -> Path:
    folder.mkdir(exist_ok=True)
    fitted(name)[0].save(folder / "cal")
    return folder / "cal.json"


def test_the_model_kind_is_registered() -> None:
    assert NAMES == ["nc_ce", "nc_fl", "nc_fast", "ts_focal"]
    assert all(issubclass(CALIBRATORS.get(n), NeuralClamping) for n in NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_save_load_round_trip_is_bit_exact(name: str, tmp_path: Path) -> None:
    cal, x, _ = fitted(name)
    path = _saved(name, tmp_path / "a")
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert (doc["calibkit"], doc["kind"], doc["method"]) == (3, "model", name)
    for load in (
        lambda: calibkit.load(path, model=cal.model),
        lambda: PostHoc.load(path, cal.model),
        lambda: type(cal).load(tmp_path / "a" / "cal", cal.model),  # any suffix, or none
        lambda: NeuralClamping.load(path.with_suffix(".safetensors"), cal.model),
    ):
        back = load()
        assert type(back) is type(cal)
        assert back.model is cal.model
        assert back.get_params() == cal.get_params()
        assert back.fitted_state().keys() == cal.fitted_state().keys()
        assert back.to_json() == cal.to_json()
        assert np.array_equal(back.predict_proba(x), cal.predict_proba(x))
    (tmp_path / "b").mkdir()
    back.save(tmp_path / "b" / "cal")
    for suffix in (".json", ".safetensors"):  # the same two files again, byte for byte
        again = (tmp_path / "b" / "cal").with_suffix(suffix).read_bytes()
        assert again == path.with_suffix(suffix).read_bytes()


@pytest.mark.parametrize("name", NAMES)
def test_to_json_is_the_document_without_its_tensor_file(name: str, tmp_path: Path) -> None:
    cal, _, _ = fitted(name)
    saved = json.loads(_saved(name, tmp_path).read_text(encoding="utf-8"))
    assert cal.to_json() == {**saved, "tensors_file": None}
    with pytest.raises(InputError, match="tensors of a model calibrator"):
        load_document(cal.to_json())
    with pytest.raises(NotFittedError):
        create_calibrator(name, model=cal.model).to_json()


@pytest.mark.parametrize("name", NAMES)
def test_clone_get_and_set_params(name: str) -> None:
    cal, x, y = fitted(name)
    params = cal.get_params()
    assert list(params) == list(type(cal).param_constraints)
    copy = clone(cal)
    assert type(copy) is type(cal)
    assert copy is not cal
    assert copy.model is cal.model  # the model is calibrated, not a parameter: shared
    assert copy.get_params() == params
    assert not copy.is_fitted
    assert np.array_equal(copy.fit(x, y).predict_proba(x), cal.predict_proba(x))  # seeded
    copy.set_params(seed=3, lam=0.5)
    assert (copy.seed, copy.lam) == (3, 0.5)
    with pytest.raises(InputError, match="lam"):
        copy.set_params(seed=4, lam=-1.0)
    assert copy.seed == 3  # all or nothing
    with pytest.raises(InputError):
        copy.set_params(model=cal.model)  # not a parameter
    assert cal.get_params() == params


@pytest.mark.parametrize("name", NAMES)
def test_tampered_and_foreign_files_are_refused(name: str, tmp_path: Path) -> None:
    cal, _, _ = fitted(name)
    path = _saved(name, tmp_path / "a")
    tensors = path.with_suffix(".safetensors")
    original = tensors.read_bytes()
    # another fit's tensors (a valid file: the checksum tells)
    tensors.write_bytes(safetensors.torch.save({"delta": cal.delta_ + 1.0}))
    with pytest.raises(InputError, match="checksum") as info:
        calibkit.load(path, model=cal.model)
    assert str(tensors) in info.value.argument
    tensors.write_bytes(original)
    doc = json.loads(path.read_text(encoding="utf-8"))
    foreign = {
        "newer": {**doc, "calibkit": 4},
        "no kind": {k: v for k, v in doc.items() if k != "kind"},
        "not calibkit": {"format": "something", "params": {}},
        "another method's kind": {**doc, "method": "conformal"},
        "a checksum of nothing": {**doc, "tensors_sha256": hashlib.sha256(b"").hexdigest()},
    }
    for what, bad in foreign.items():
        path.write_text(json.dumps(bad), encoding="utf-8")
        with pytest.raises(InputError) as info:
            calibkit.load(path, model=cal.model)
        assert info.value.argument.startswith(f"calibkit file {path}"), what
    # a file of another kind through this kind's load, and this kind's through another's
    TemperatureScaling().fit(np.eye(3) * 2, [0, 1, 2]).save(tmp_path / "ts.json")
    with pytest.raises(InputError, match=r"no model for 'temperature'"):
        type(cal).load(tmp_path / "ts.json", cal.model)
    with pytest.raises(InputError, match="a saved TemperatureScaling"):
        type(cal).load(tmp_path / "ts.json")
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(InputError, match=f"a saved {type(cal).__name__}"):
        TemperatureScaling.load(path, cal.model)
    other = next(n for n in NAMES if n != name)
    with pytest.raises(InputError, match=f"a saved {type(cal).__name__}"):
        CALIBRATORS.get(other).load(path, cal.model)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("name", NAMES)
def test_module_gives_predict_proba(name: str, path: str, tmp_path: Path) -> None:
    cal, x, _ = fitted(name)
    module = cal.to_module().eval()
    assert isinstance(module, CalibratedModel)
    probs = PATHS[path](module, x, tmp_path)
    expected = cal.predict_proba(x)
    assert probs.dtype == np.float64
    assert probs.shape == expected.shape
    assert np.abs(probs - expected).max() <= TOLERANCE
    if path == "eager":  # the loaded fit deploys the same module
        loaded = calibkit.load(_saved(name, tmp_path / "saved"), model=cal.model)
        assert np.array_equal(PATHS[path](loaded.to_module().eval(), x, tmp_path), probs)
