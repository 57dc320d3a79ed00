"""A study's units of work, as pure functions: prepared data and a unit in, artefacts out.

Every fit of a study happens in a unit. Three kinds: a :class:`RunUnit` trains one
(model, seed), fits its post-hoc calibrators on the saved logits and its temperature
scaling (for the report's figures); a :class:`CalibrateUnit` fits them again on a trained
run's logits (its rows were cached for other settings, or it was made before a file
existed); a :class:`ClampUnit` fits one input calibrator (Neural Clamping) on a trained
run's weights. :func:`execute` runs any of them anywhere (in the driver, a worker process,
a Ray task) and returns bytes and rows: the driver alone writes them to the study folder
(:mod:`calibkit.study.run.driver`), so a cluster needs no shared file system, and reading
the results back (:mod:`calibkit.study.store.record`) fits nothing. When the run's folder
is visible where a run trains (the same machine, a shared file system), the trainer
checkpoints there after each epoch, so that a retried unit resumes from its last finished
epoch.
"""

from __future__ import annotations

import contextlib
import io
import os
import socket
import time
from dataclasses import KW_ONLY, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import save as safetensors_bytes

from calibkit.calibrators.logit.temperature import TemperatureScaling
from calibkit.core.options import Binning, Resampling
from calibkit.core.outputs import as_outputs
from calibkit.core.threads import using_threads
from calibkit.study.definition.components import build_model, resolve_device
from calibkit.study.definition.config import ModelSpec, Resources, StudyConfig
from calibkit.study.definition.prepare import StudyData
from calibkit.study.run.clamping import fit_rows, load_weights
from calibkit.study.store.record import calibration_settings, clamp_settings, make_row
from calibkit.study.store.run_folder import RunFolder
from calibkit.training import train
from calibkit.workflows.compare import compare


@dataclass(frozen=True)
class _OfRun:
    """What every unit names: the study (``cfg``), the model (``spec``) and ``seed`` of its
    run, the run's folder on the driver (``rdir``), and, by keyword, whether it prints its
    progress."""

    cfg: StudyConfig
    spec: ModelSpec
    seed: int
    rdir: str
    _: KW_ONLY
    progress: bool = False


@dataclass(frozen=True)
class RunUnit(_OfRun):
    """Train ``spec`` with ``seed`` and calibrate it."""

    @property
    def what(self) -> str:
        return f"{self.spec.label} seed {self.seed}"


@dataclass(frozen=True)
class ClampUnit(_OfRun):
    """Fit the input calibrator ``name`` on the run's trained ``weights`` (safetensors)."""

    name: str
    weights: bytes

    @property
    def what(self) -> str:
        return f"{self.name} of {self.spec.label} seed {self.seed}"


@dataclass(frozen=True)
class CalibrateUnit(_OfRun):
    """Fit again, on a trained run's saved ``logits`` (the bytes of its logits file), its
    post-hoc calibrators (``rows``) and its temperature scaling (``temperature``)."""

    logits: bytes
    rows: bool
    temperature: bool

    @property
    def what(self) -> str:
        return f"calibration of {self.spec.label} seed {self.seed}"


Unit = RunUnit | CalibrateUnit | ClampUnit


def resources(unit: Unit) -> Resources:
    """What ``unit`` asks of the executor (its model's ``resources``, default one CPU)."""
    return unit.spec.resources or Resources()


@dataclass(frozen=True)
class Calibrated:
    """A run's post-hoc calibration: the content of its ``calibration.json``
    (``calibration``) and its temperature scaling's ``to_json()`` (``temperature``); None
    for what was not asked."""

    calibration: dict[str, Any] | None
    temperature: dict[str, Any] | None


@dataclass(frozen=True)
class RunArtefacts:
    """A trained run: ``logits.npz`` and ``model.safetensors`` as bytes, the content of
    ``train.json`` (``info``), and its calibration."""

    logits: bytes
    weights: bytes
    info: dict[str, Any]
    calibrated: Calibrated


@dataclass(frozen=True)
class Finished:
    """A unit done: its artefacts (a :class:`RunArtefacts`, a :class:`Calibrated`, or for a
    :class:`ClampUnit` the content of ``clamping-<name>.json``), where it ran and how long
    it took."""

    unit: Unit
    artefacts: RunArtefacts | Calibrated | dict[str, Any]
    where: str
    seconds: float


def execute(unit: Unit, data: StudyData, threads: int | None = None) -> Finished:
    """Run ``unit`` on ``data`` (with ``threads``: under that many torch and BLAS threads)."""
    start = time.perf_counter()
    limit = using_threads(threads) if threads is not None else contextlib.nullcontext()
    with limit:
        if isinstance(unit, RunUnit):
            out: RunArtefacts | Calibrated | dict[str, Any] = train_unit(unit, data)
        elif isinstance(unit, CalibrateUnit):
            out = calibrate_unit(unit)
        else:
            out = clamp_unit(unit, data)
    return Finished(unit, out, here(), time.perf_counter() - start)


def here() -> str:
    """Where this process runs (``host pid N``): a unit's :attr:`Finished.where`."""
    return f"{socket.gethostname()} pid {os.getpid()}"


def calibration_record(
    cfg: StudyConfig, label: str, seed: int, z: dict[str, np.ndarray]
) -> dict[str, Any]:
    """What ``calibration.json`` holds for a run: its ``settings``, one row per post-hoc
    calibrator of ``cfg`` fitted on the saved logits ``z`` (``rows``), and the calibrator
    to use (``recommended``: ``{"method", "reason"}``), chosen on the calibration part
    alone by the rule of ``auto`` (cross-fitted NLL; temperature scaling unless a richer
    method beats it by more than
    :data:`~calibkit.calibrators.logit.auto.MARGIN_SE` standard errors)."""
    cal = as_outputs(z["cal_labels"], logits=z["cal_logits"])
    test = as_outputs(z["test_labels"], logits=z["test_logits"])
    comp = compare(
        cal,
        test,
        list(cfg.calibrators) or None,
        binning=Binning(n_bins=cfg.n_bins),
        resampling=Resampling(n_boot=0, seed=seed),
        params=cfg.calibrator_params,
        recommend=True,
    )
    rows = []
    for r in comp.rows:
        temperature = 1.0 if r.method == "none" else r.params.get("temperature", float("nan"))
        values = dict(r.evaluation.values)
        if r.true_ece is not None:  # the interval of its true ECE (analytic, no bootstrap)
            values |= {"ece_low": r.true_ece.low, "ece_high": r.true_ece.high}
        rows.append(make_row(label, seed, r.method, values, temperature, r.fit_seconds))
    rec = comp.recommendation
    assert rec is not None
    recommended = {"method": rec.method, "reason": rec.reason}
    return {"settings": calibration_settings(cfg, z), "rows": rows, "recommended": recommended}


def fit_temperature(z: dict[str, np.ndarray]) -> dict[str, Any]:
    """The run's temperature scaling (default bounds, fitted by NLL on its calibration
    part), as its ``to_json()``: the report draws the before/after-TS figures from it."""
    return TemperatureScaling().fit(z["cal_logits"], z["cal_labels"]).to_json()


def _load_logits(data: bytes) -> dict[str, np.ndarray]:
    with np.load(io.BytesIO(data), allow_pickle=False) as f:
        return {k: f[k] for k in f.files}  # as the saved file holds them


def calibrate_unit(unit: CalibrateUnit) -> Calibrated:
    """Fit what the unit asks on the run's logits."""
    z = _load_logits(unit.logits)
    temperature = fit_temperature(z) if unit.temperature else None
    rows = calibration_record(unit.cfg, unit.spec.label, unit.seed, z) if unit.rows else None
    return Calibrated(rows, temperature)


def _checkpoint(rdir: str) -> Path | None:
    """The run's checkpoint file when its folder is visible here (it holds the identity
    the driver wrote before submitting the run), else None."""
    run = RunFolder(Path(rdir))
    return run.file(RunFolder.CHECKPOINT) if run.has_identity else None


def train_unit(unit: RunUnit, data: StudyData) -> RunArtefacts:
    """Train the run (resuming from its checkpoint if one is visible) and calibrate it."""
    cfg, spec, seed = unit.cfg, unit.spec, unit.seed
    device = resolve_device(cfg.device)
    torch.manual_seed(seed)
    model = build_model(spec, data).to(device)
    result = train(
        model,
        data.splits["train"],
        cfg.model_training(spec),
        seed=seed,
        held_out={"cal": data.splits["cal"], "test": data.splits["test"]},
        checkpoint=_checkpoint(unit.rdir),
        label=f"{spec.label} seed {seed} ",
    )
    arrays = {
        f"{split}_{kind}": d[split]
        for kind, d in (("logits", result.logits), ("labels", result.labels))
        for split in d
    }
    if result.learned_epoch is not None:
        arrays["train_learned_epoch"] = result.learned_epoch
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)  # type: ignore[arg-type]
    weights = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    info = {
        "history": result.history,
        "train_seconds": result.seconds,
        "n_parameters": sum(p.numel() for p in model.parameters()),
        "threads": torch.get_num_threads(),
        "device": str(device),
    }
    z = _load_logits(buf.getvalue())
    calibrated = Calibrated(calibration_record(cfg, spec.label, seed, z), fit_temperature(z))
    return RunArtefacts(buf.getvalue(), safetensors_bytes(weights), info, calibrated)


def clamp_unit(unit: ClampUnit, data: StudyData) -> dict[str, Any]:
    """Fit the input calibrator on the run's weights, on the study's device:
    ``{"settings", "rows", "device"}``."""
    device = resolve_device(unit.cfg.device)
    model = load_weights(build_model(unit.spec, data), RunFolder(Path(unit.rdir)), unit.weights)
    model = model.to(device).eval()
    options = dict(unit.cfg.input_calibrator_params.get(unit.name, {}))
    label, seed = unit.spec.label, unit.seed
    rows = fit_rows(unit.cfg, label, seed, data, model, unit.name, options, unit.progress)
    return {"settings": clamp_settings(unit.cfg, unit.name), "rows": rows, "device": str(device)}
