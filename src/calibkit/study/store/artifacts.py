"""The files of a study's runs: saved logits, the fitted temperature, result rows (JSON
through :mod:`calibkit.io.jsonfile`)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from calibkit.calibrators import TemperatureScaling
from calibkit.core.errors import InputError
from calibkit.io.jsonfile import read_json, write_json

__all__ = [
    "COLUMNS",
    "TEMPERATURE_FILE",
    "cached_rows",
    "load_logits",
    "load_temperature",
    "make_row",
    "read_json",
    "save_temperature",
    "write_json",
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
#: The run's temperature scaling (default bounds, fitted by NLL on its calibration part),
#: saved by the runner; the report draws the before/after-TS figures from it.
TEMPERATURE_FILE = "temperature.json"


def load_logits(rdir: Path) -> dict[str, np.ndarray]:
    try:
        with np.load(rdir / "logits.npz", allow_pickle=False) as f:
            return {k: f[k] for k in f.files}
    except (OSError, ValueError) as exc:
        raise InputError(
            str(rdir / "logits.npz"), "the logits of a finished run", str(exc)
        ) from None


def save_temperature(rdir: Path) -> None:
    """Fit temperature scaling on the run's calibration logits and save it in
    :data:`TEMPERATURE_FILE` (atomically), unless the run has it already."""
    path = rdir / TEMPERATURE_FILE
    if path.exists():
        return
    z = load_logits(rdir)
    TemperatureScaling().fit(z["cal_logits"], z["cal_labels"]).save(path)


def load_temperature(rdir: Path) -> TemperatureScaling:
    """The temperature scaling saved by :func:`save_temperature` for the run ``rdir``."""
    ts = TemperatureScaling.load(rdir / TEMPERATURE_FILE)
    if not isinstance(ts, TemperatureScaling):
        raise InputError(str(rdir / TEMPERATURE_FILE), "a saved temperature scaling", ts.name)
    return ts


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


def cached_rows(path: Path, settings: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The rows cached in ``path`` if they were computed with ``settings``, else None.

    NaN was written as null; it becomes NaN again.
    """
    if not path.exists():
        return None
    cached = read_json(path)
    if cached.get("settings") != settings:
        return None
    rows = cached["rows"]
    return [{k: (math.nan if v is None else v) for k, v in row.items()} for row in rows]
