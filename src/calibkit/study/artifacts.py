"""The files of a study's runs: JSON written atomically, saved logits, result rows."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from calibkit.core.errors import InputError
from calibkit.io.atomic import atomic_write_bytes

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


def write_json(path: Path, obj: Any) -> None:
    """Write ``obj`` as JSON atomically (no NaN: they become null)."""
    text = json.dumps(_finite(obj), indent=1, allow_nan=False)
    atomic_write_bytes(path, (text + "\n").encode("utf-8"))


def _finite(obj: Any) -> Any:
    if isinstance(obj, float):
        return obj if np.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite(v) for v in obj]
    return obj


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(str(path), "a readable JSON file written by calibkit", str(exc)) from None


def load_logits(rdir: Path) -> dict[str, np.ndarray]:
    try:
        with np.load(rdir / "logits.npz", allow_pickle=False) as f:
            return {k: f[k] for k in f.files}
    except (OSError, ValueError) as exc:
        raise InputError(
            str(rdir / "logits.npz"), "the logits of a finished run", str(exc)
        ) from None


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
