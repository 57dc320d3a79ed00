"""Run a study: train every (model, seed), calibrate, evaluate, aggregate; resumable.

Layout of the output folder::

    config.toml                    the resolved configuration of the last invocation
    runs/<model>/seed-<s>/
        identity.json              what this run is (data, model, training, seed)
        checkpoint.pt              while training: the state after the last epoch
        logits.npz                 calibration and test logits and labels (and, with
                                   track_learning, the training set's and its learned epochs)
        model.safetensors          the trained weights
        train.json                 per-epoch history; written last: the run is finished
        calibration.json           one row per calibrator, for the current calibrator list
        temperature.json           temperature scaling fitted on the calibration part
    results.csv, results.json, report.md, report.html, figures/   (see study.report)

Every file is written atomically. A run is done when ``train.json`` exists; killed
midway (even by SIGKILL), a study started again skips finished runs, resumes an
interrupted one from its last finished epoch, and ends with the same table. A folder
holding a run made with different settings is refused rather than mixed.

Progress (which run, which dataset, each epoch's summary) is logged, not printed (see
:mod:`calibkit.core.progress`).
"""

from __future__ import annotations

import dataclasses
import io
import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import save as safetensors_bytes

from calibkit.core.errors import InputError
from calibkit.core.outputs import as_outputs
from calibkit.io.atomic import atomic_write_bytes
from calibkit.io.toml import to_toml
from calibkit.study.artifacts import (
    cached_rows,
    load_logits,
    make_row,
    read_json,
    save_temperature,
    write_json,
)
from calibkit.study.clamping import clamp_run
from calibkit.study.components import build_model, resolve_device
from calibkit.study.config import DataConfig, ModelSpec, StudyConfig
from calibkit.study.prepare import StudyData, prepare_data
from calibkit.training import TrainConfig, train
from calibkit.workflows.compare import compare

FORMAT_VERSION = 1

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunRecord:
    """A finished run: its history and its per-calibrator rows on the test part."""

    model: str
    seed: int
    history: list[dict[str, float]]
    rows: list[dict[str, Any]]
    train_seconds: float
    n_parameters: int
    directory: Path


def run_identity(cfg: StudyConfig, spec: ModelSpec, seed: int, data: StudyData) -> dict[str, Any]:
    """What makes two runs the same (the data folder is left out: data may move)."""
    data_cfg = dataclasses.asdict(cfg.model_data(spec))
    data_cfg.pop("data_dir")
    return {
        "format": FORMAT_VERSION,
        "data": data_cfg,
        "classes": list(data.classes),
        "n": {k: len(v[1]) for k, v in data.splits.items()},
        "model": {
            "name": spec.name,
            "params": spec.params,
            "init": None if spec.init is None else Path(spec.init).name,
            "init_rows": list(spec.init_rows),
        },
        "training": dataclasses.asdict(cfg.model_training(spec)),
        "seed": seed,
    }


def _with_new_defaults(found: dict[str, Any], identity: dict[str, Any]) -> dict[str, Any]:
    """A stored identity with settings added to calibkit since then set to their defaults.

    A setting that did not exist when a run was made cannot have changed it; filling in the
    default keeps runs made by an older calibkit resumable.
    """
    for key, cls in (("data", DataConfig), ("training", TrainConfig)):
        stored, now = found.get(key), identity.get(key, {})
        if isinstance(stored, dict):
            defaults = {
                f.name: json.loads(json.dumps(f.default))
                for f in dataclasses.fields(cls)
                if f.default is not dataclasses.MISSING and f.name in now
            }
            found[key] = {**{k: v for k, v in defaults.items() if k not in stored}, **stored}
    return found


def _check_identity(rdir: Path, identity: dict[str, Any]) -> None:
    path = rdir / "identity.json"
    identity = json.loads(json.dumps(identity))
    if path.exists():
        found = _with_new_defaults(read_json(path), identity)
        if found != identity:
            diff = sorted(k for k in set(found) | set(identity) if found.get(k) != identity.get(k))
            raise InputError(
                "out",
                f"a folder whose run {rdir.name} of {rdir.parent.name} has this study's settings "
                "(use another --out, or delete that run)",
                "different " + ", ".join(diff),
            )
    else:
        rdir.mkdir(parents=True, exist_ok=True)
        write_json(path, identity)


def train_run(cfg: StudyConfig, spec: ModelSpec, seed: int, data: StudyData, rdir: Path) -> None:
    """Train one (model, seed) into ``rdir`` unless it is finished; resume a partial one."""
    _check_identity(rdir, run_identity(cfg, spec, seed, data))
    if (rdir / "train.json").exists():
        return
    tcfg = cfg.model_training(spec)
    device = resolve_device(cfg.device)
    torch.manual_seed(seed)
    model = build_model(spec, data).to(device)
    result = train(
        model,
        data.splits["train"],
        tcfg,
        seed=seed,
        held_out={"cal": data.splits["cal"], "test": data.splits["test"]},
        checkpoint=rdir / "checkpoint.pt",
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
    atomic_write_bytes(rdir / "logits.npz", buf.getvalue())
    weights = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    atomic_write_bytes(rdir / "model.safetensors", safetensors_bytes(weights))
    write_json(
        rdir / "train.json",
        {
            "history": result.history,
            "train_seconds": result.seconds,
            "n_parameters": sum(p.numel() for p in model.parameters()),
            "threads": torch.get_num_threads(),
            "device": str(device),
        },
    )
    (rdir / "checkpoint.pt").unlink(missing_ok=True)


def calibrate_run(cfg: StudyConfig, label: str, seed: int, rdir: Path) -> list[dict[str, Any]]:
    """Rows of every calibrator for one run (cached in ``calibration.json``); saves the
    run's temperature scaling (``temperature.json``) for the report's figures."""
    save_temperature(rdir)
    settings = {
        "calibrators": list(cfg.calibrators),
        "params": cfg.calibrator_params,
        "n_bins": cfg.n_bins,
        "n_floor_draws": cfg.n_floor_draws,
    }
    path = rdir / "calibration.json"
    cached = cached_rows(path, settings)
    if cached is not None:
        return cached
    z = load_logits(rdir)
    cal = as_outputs(z["cal_labels"], logits=z["cal_logits"])
    test = as_outputs(z["test_labels"], logits=z["test_logits"])
    comp = compare(
        cal,
        test,
        list(cfg.calibrators) or None,
        n_bins=cfg.n_bins,
        n_boot=0,
        seed=seed,
        params=cfg.calibrator_params,
    )
    rows = []
    for r in comp.rows:
        temperature = 1.0 if r.method == "none" else r.params.get("temperature", float("nan"))
        rows.append(
            make_row(label, seed, r.method, r.evaluation.values, temperature, r.fit_seconds)
        )
    write_json(path, {"settings": settings, "rows": rows})
    return rows


@dataclass(frozen=True)
class StudyRuns:
    """Every finished run of a study, with the class names and each model's split sizes."""

    records: list[RunRecord]
    classes: tuple[str, ...]
    sizes: dict[str, dict[str, int]]
    seconds: float


def run_study(
    cfg: StudyConfig, out: Path, *, progress: bool = True, report_only: bool = False
) -> StudyRuns:
    """Run (or resume) every (model, seed) of ``cfg`` into ``out``.

    With ``report_only``, nothing is trained and no input calibrator is fitted: the
    records are the runs already trained, with the input calibrators already fitted
    (while another process is still running the study, or when it was stopped early).
    ``progress=False`` silences the calibrators that report their own epochs.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if not report_only:
        atomic_write_bytes(out / "config.toml", to_toml(cfg).encode("utf-8"))
    start = time.perf_counter()
    prepared: dict[tuple[DataConfig, int], StudyData] = {}
    sizes: dict[str, dict[str, int]] = {}
    records = []
    classes: tuple[str, ...] = ()
    total = len(cfg.models) * len(cfg.seeds)
    for i, (spec, seed) in enumerate(((m, s) for m in cfg.models for s in cfg.seeds), start=1):
        rdir = out / "runs" / spec.label / f"seed-{seed}"
        done = (rdir / "train.json").exists()
        if report_only and not done:
            log.info("[%d/%d] %s seed %d: not trained yet, left out", i, total, spec.label, seed)
            continue
        again = " (finished before)" if done else ""
        log.info("[%d/%d] %s seed %d%s", i, total, spec.label, seed, again)
        data = _prepared(prepared, cfg.model_data(spec), seed)
        classes = data.classes
        sizes[spec.label] = {k: len(v[1]) for k, v in data.splits.items()}
        train_run(cfg, spec, seed, data, rdir)
        rows = calibrate_run(cfg, spec.label, seed, rdir)
        rows = rows + clamp_run(cfg, spec, seed, data, rdir, progress, fit=not report_only)
        records.append(_record(spec.label, seed, rows, rdir))
    seconds = time.perf_counter() - start
    log.info("all %d runs done in %.0fs", total, seconds)
    return StudyRuns(records, classes, sizes, seconds)


def _prepared(
    cache: dict[tuple[DataConfig, int], StudyData], data_cfg: DataConfig, seed: int
) -> StudyData:
    """The data of a run, loaded once (one dataset in memory: runs come grouped by model)."""
    key = (data_cfg, seed if data_cfg.split_by_seed else 0)
    if key not in cache:
        cache.clear()
        log.info("loading %s", data_cfg.dataset)
        cache[key] = data = prepare_data(data_cfg, seed)
        counts = ", ".join(f"{k} {len(v[1]):,}" for k, v in data.splits.items())
        log.info("%d classes (%s); %s", data.n_classes, ", ".join(data.classes), counts)
    return cache[key]


def _record(label: str, seed: int, rows: list[dict[str, Any]], rdir: Path) -> RunRecord:
    """A finished run's record, its history read back from ``train.json``."""
    info = read_json(rdir / "train.json")
    return RunRecord(
        label,
        seed,
        info["history"],
        rows,
        float(info["train_seconds"]),
        int(info["n_parameters"]),
        rdir,
    )
