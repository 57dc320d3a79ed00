"""Calibrators that need the model and its inputs (Neural Clamping) inside a study.

The logit calibrators of a study work from the saved logits. The methods named here refit
on the run's calibration *inputs* with the run's trained (or loaded) weights. Each one's
rows are cached in the run folder (``clamping-<name>.json``), keyed by its own
settings, so adding a logit calibrator never refits Neural Clamping, and a study killed
during one fit keeps the fits finished before it.

Names (``input_calibrators`` in a study config; parameters in ``input_calibrator_params``)
are the calibrators that take the model (kind ``model``: ``nc_ce``, ``nc_fl``,
``nc_fast``, ``ts_focal``), or ``<name>@<label>``: a second copy of a method with its own
parameters, e.g. ``nc_ce@holdout`` with
``input_calibrator_params = { "nc_ce@holdout" = { holdout = 0.2 } }``; its rows are named
``nc_ce@holdout``. ``ablation = true`` among a method's parameters adds rows
``<name>:delta_only`` / ``<name>:temperature_only`` (the halves of a fitted pair, the
paper's Table 4) and ``<name>:sgd`` (the pair where SGD left it, before the exact final
temperature step), listed after their method.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

from torch import nn

from calibkit.calibrators.model.clamping import ABLATIONS
from calibkit.calibrators.model.clamping.registry import create_input_calibrator
from calibkit.core.errors import InputError
from calibkit.core.options import Binning, Resampling
from calibkit.metrics import evaluate
from calibkit.metrics.intervals import ece_interval
from calibkit.study.definition.components import build_model
from calibkit.study.definition.config import ModelSpec, StudyConfig
from calibkit.study.definition.prepare import StudyData
from calibkit.study.store.record import make_row
from calibkit.study.store.run_folder import RunFolder


def load_run_model(spec: ModelSpec, data: StudyData, rdir: Path) -> nn.Module:
    """The run's model with its saved weights, in eval mode."""
    return load_weights(build_model(spec, data), RunFolder(rdir))


def load_weights(model: nn.Module, run: RunFolder, weights: bytes | None = None) -> nn.Module:
    """``model`` with the run's trained weights (``weights``: the bytes of its weights file,
    when the unit was given them), in eval mode."""
    try:
        model.load_state_dict(run.weights(weights))
    except RuntimeError as exc:
        where = str(run.file(RunFolder.WEIGHTS))
        raise InputError(where, "the weights of this run", str(exc)) from None
    return model.eval()


def fit_rows(
    cfg: StudyConfig,
    label: str,
    seed: int,
    data: StudyData,
    model: nn.Module,
    name: str,
    options: dict[str, Any],
    progress: bool,
) -> list[dict[str, Any]]:
    """Fit the input calibrator ``name`` on the run's calibration part; rows on its test part."""
    (x_cal, y_cal), (x_test, y_test) = data.splits["cal"], data.splits["test"]
    options = dict(options)
    ablation = bool(options.pop("ablation", False))
    options.setdefault("seed", seed)
    options.setdefault("progress", progress)
    start = time.perf_counter()
    nc = create_input_calibrator(name, model, **options).fit(x_cal, y_cal.numpy())
    seconds = time.perf_counter() - start
    variants = [(name, nc)]
    if ablation:
        views = [v for v in ABLATIONS if v != "sgd" or math.isfinite(nc.sgd_log_temperature_)]
        variants += [(f"{name}:{view}", nc.ablation(view)) for view in views]  # type: ignore[arg-type]
    rows = []
    for method, fitted in variants:
        probs = fitted.predict_proba(x_test)
        values = evaluate(
            y_test.numpy(),
            probs,
            binning=Binning(n_bins=cfg.n_bins),
            resampling=Resampling(n_boot=0, seed=seed),
            n_floor_draws=cfg.n_floor_draws,
        ).values
        true = ece_interval(y_test.numpy(), probs, n_bins=cfg.n_bins)
        values |= {"ece_low": true.low, "ece_high": true.high}
        fit = seconds if method == name else 0.0
        rows.append(make_row(label, seed, method, values, fitted.temperature_, fit))
    return rows
