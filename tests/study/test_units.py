"""A unit of work runs on the device its config resolves, every part of it.

No GPU here: the tests resolve the study's device to PyTorch's ``meta`` device, a stand-in
on which a tensor has a device and a shape but no values. A part of a unit that ignores the
resolved device then meets a model or tensor on the CPU, and the spies below see it (and a
host round trip on ``meta`` fails outright). The ``gpu`` tests check the same on CUDA.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from safetensors.torch import save as safetensors_bytes
from torch import nn

from calibkit.study import load_study_config, run_study
from calibkit.study.definition.components import build_model
from calibkit.study.definition.prepare import prepare_data
from calibkit.study.run import units as units_module
from calibkit.study.run.units import ClampUnit, RunUnit, clamp_unit, train_unit
from tests.study.test_clamping import CLAMPED

pytestmark = pytest.mark.usefixtures("one_thread")

META = torch.device("meta")


class _Stop(Exception):
    """Raised by a spy once it has seen what it looks for."""


def _devices(model: nn.Module) -> set[str]:
    return {str(t.device) for t in [*model.parameters(), *model.buffers()]}


@pytest.fixture
def clamped(tmp_path: Path) -> Any:
    path = tmp_path / "c.toml"
    path.write_text(CLAMPED, encoding="utf-8")
    cfg = load_study_config(path).select(models=["mlp"])
    spec = cfg.models[0]
    return cfg, spec, prepare_data(cfg.model_data(spec))


def test_a_training_unit_trains_on_the_resolved_device(
    clamped: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cfg, spec, data = clamped
    seen: dict[str, set[str]] = {}

    def spy(model: nn.Module, *args: Any, **kwargs: Any) -> None:
        seen["model"] = _devices(model)
        raise _Stop

    monkeypatch.setattr(units_module, "resolve_device", lambda name: META)
    monkeypatch.setattr(units_module, "train", spy)
    with pytest.raises(_Stop):
        train_unit(RunUnit(cfg, spec, 0, str(tmp_path)), data)
    assert seen["model"] == {"meta"}


def test_an_input_calibrator_fits_on_the_resolved_device(
    clamped: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Neural Clamping used to fit on the CPU whatever the study's device (the model was
    never moved): on a GPU machine, 6 s an epoch instead of 0.17 s."""
    cfg, spec, data = clamped
    weights = safetensors_bytes(build_model(spec, data).state_dict())
    seen: dict[str, set[str]] = {}

    def spy(cfg: Any, label: str, seed: int, data: Any, model: nn.Module, *rest: Any) -> list[Any]:
        seen["model"] = _devices(model)
        return []

    monkeypatch.setattr(units_module, "resolve_device", lambda name: META)
    monkeypatch.setattr(units_module, "fit_rows", spy)
    unit = ClampUnit(cfg, spec, 0, str(tmp_path), "nc_fast", weights)
    artefacts = clamp_unit(unit, data)
    assert seen["model"] == {"meta"}
    assert artefacts["device"] == "meta"


def test_every_unit_records_the_device_it_ran_on(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(CLAMPED.replace('name = "tiny"', 'name = "tiny"\ndevice = "cpu"'), "utf-8")
    cfg = load_study_config(path).select(models=["mlp"], epochs=1)
    out = tmp_path / "out"
    run_study(cfg, out, progress=False)
    rdir = out / "runs" / "mlp" / "seed-0"
    assert json.loads((rdir / "train.json").read_text())["device"] == "cpu"
    for name in ("nc_fast", "nc_fl"):
        assert json.loads((rdir / f"clamping-{name}.json").read_text())["device"] == "cpu"


@pytest.mark.gpu
def test_a_smoke_study_runs_every_unit_on_the_gpu(tmp_path: Path) -> None:
    """On CUDA: training, the input calibrators and their predictions all on the GPU."""
    path = tmp_path / "c.toml"
    path.write_text(CLAMPED.replace('name = "tiny"', 'name = "tiny"\ndevice = "cuda"'), "utf-8")
    cfg = load_study_config(path).select(models=["mlp"], epochs=2)
    out = tmp_path / "out"
    seen: list[str] = []
    real = units_module.fit_rows

    def spy(cfg: Any, label: str, seed: int, data: Any, model: nn.Module, *rest: Any) -> Any:
        seen.extend(_devices(model))
        return real(cfg, label, seed, data, model, *rest)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(units_module, "fit_rows", spy)
        run_study(cfg, out, progress=False)
    rdir = out / "runs" / "mlp" / "seed-0"
    assert json.loads((rdir / "train.json").read_text())["device"].startswith("cuda")
    for name in ("nc_fast", "nc_fl"):
        found = json.loads((rdir / f"clamping-{name}.json").read_text())["device"]
        assert found.startswith("cuda")
    assert seen
    assert all(d.startswith("cuda") for d in seen)
    with np.load(io.BytesIO((rdir / "logits.npz").read_bytes())) as z:
        assert np.isfinite(z["test_logits"]).all()
