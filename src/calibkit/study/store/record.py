"""The record of a finished run, as the report reads it: its history and its result rows,
read back from its :class:`~calibkit.study.store.run_folder.RunFolder`; the columns of a
row, and the settings that key the rows a run caches.

Reading a record fits nothing: the rows were fitted by the study's units of work
(:mod:`calibkit.study.run.units`) and written by its driver.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from calibkit.core.errors import InputError
from calibkit.study.definition.config import ModelSpec, StudyConfig
from calibkit.study.store.run_folder import CALIBRATION_VERSION, CLAMPING_VERSION, RunFolder
from calibkit.workflows.methods import resolve_methods

__all__ = [
    "COLUMNS",
    "RunRecord",
    "calibration_settings",
    "clamp_settings",
    "make_row",
    "read_record",
]

#: Columns of ``results.csv``, in order (metric values are fractions).
COLUMNS = (
    "model",
    "seed",
    "calibrator",
    "accuracy",
    "nll",
    "ece",
    "aece",
    "mce",
    "brier",
    "temperature",
)


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
    recommended: str | None = None  # the calibrator to use, by auto's rule (cal part alone)

    @property
    def folder(self) -> RunFolder:
        """The run's folder, to read its files (logits, temperature scaling)."""
        return RunFolder(self.directory)


def make_row(
    label: str,
    seed: int,
    method: str,
    values: dict[str, float],
    temperature: float,
    fit_seconds: float,
) -> dict[str, Any]:
    """One result row: the :data:`COLUMNS`, then every other metric, floors, fit time."""
    row: dict[str, Any] = {"model": label, "seed": seed, "calibrator": method}
    row.update({k: float(values[k]) for k in COLUMNS[3:-1]})
    row["temperature"] = float(temperature)
    row.update({k: float(v) for k, v in values.items() if k not in row})
    row["fit_seconds"] = float(fit_seconds)
    return row


def calibration_settings(cfg: StudyConfig, z: dict[str, np.ndarray]) -> dict[str, Any]:
    """The settings that key a run's cached calibrator rows (``calibration.json``), for its
    saved logits ``z``.

    ``calibrators`` is the list :func:`~calibkit.workflows.compare.compare` fits for this
    run: the study's list, or (for ``[]``) every calibrator that applies, resolved now, so
    that a calibrator registered since the rows were cached reaches a resumed study.
    ``rows`` is the version of what the calibrators compute
    (:data:`~calibkit.study.store.run_folder.CALIBRATION_VERSION`), so rows cached by an
    older version are computed again rather than reused."""
    n_cal, n_classes = z["cal_logits"].shape
    return {
        "rows": CALIBRATION_VERSION,
        "calibrators": resolve_methods(list(cfg.calibrators) or None, n_classes, n_cal),
        "params": cfg.calibrator_params,
        "n_bins": cfg.n_bins,
        "n_floor_draws": cfg.n_floor_draws,
    }


def clamp_settings(cfg: StudyConfig, name: str) -> dict[str, Any]:
    """The settings that key the cached rows of the input calibrator ``name`` (its
    ``fit_version``: :data:`~calibkit.study.store.run_folder.CLAMPING_VERSION`)."""
    return {
        "fit_version": CLAMPING_VERSION,
        "name": name,
        "params": dict(cfg.input_calibrator_params.get(name, {})),
        "n_bins": cfg.n_bins,
        "n_floor_draws": cfg.n_floor_draws,
    }


def read_record(cfg: StudyConfig, spec: ModelSpec, seed: int, run: RunFolder) -> RunRecord:
    """A finished run's record: its history read back from ``train.json``, its rows from
    ``calibration.json`` and the input calibrators fitted so far. Reads only: rows cached
    for other settings are refused (the study's units refit them before it reads)."""
    calibration = run.calibration(calibration_settings(cfg, run.logits()))
    if calibration is None:
        raise InputError(
            str(run.file(RunFolder.CALIBRATION)),
            "the rows of this study's calibrators",
            "rows of other settings (another study is writing this folder)",
        )
    rows, recommended = calibration
    for name in cfg.input_calibrators:
        rows += run.clamping_rows(name, clamp_settings(cfg, name)) or []
    info = run.train_info()
    return RunRecord(
        spec.label,
        seed,
        info["history"],
        rows,
        float(info["train_seconds"]),
        int(info["n_parameters"]),
        run.path,
        recommended,
    )
