"""A run's folder, ``runs/<label>/seed-<N>/`` in a study folder: the one place that names
its files, declares the versions of what they hold, reads them and writes them.

Every file is written atomically (JSON through :mod:`calibkit.io.jsonfile`). A run's files::

    identity.json          what this run is (data, model, training, seed): RunFolder.IDENTITY
    checkpoint.pt          while training: the state after the last epoch
    logits.npz             calibration and test logits and labels (and, with
                           track_learning, the training set's and its learned epochs)
    model.safetensors      the trained weights
    train.json             per-epoch history; written last of a training: the run is finished
    calibration.json       one row per calibrator, for the current calibrator list
    temperature.json       temperature scaling fitted on the calibration part
    clamping-<name>.json   the rows of the input calibrator <name> (Neural Clamping)

>>> run = RunFolder.of(Path("out"), "mlp", 3)
>>> run.path.as_posix(), run.finished
('out/runs/mlp/seed-3', False)
>>> run.clamping_file("nc_ce@holdout").name
'clamping-nc_ce@holdout.json'
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
from safetensors.torch import load as safetensors_load
from torch import Tensor

from calibkit.calibrators.logit.temperature import TemperatureScaling
from calibkit.core.errors import InputError
from calibkit.io.atomic import atomic_write_bytes, atomic_write_text
from calibkit.io.jsonfile import read_json, write_json

__all__ = [
    "CALIBRATION_VERSION",
    "CLAMPING_VERSION",
    "FORMAT_VERSION",
    "RUNS",
    "RunFolder",
]

# The versions of what a study stores, declared here only. Bumping one makes what was
# stored under the older version be computed again (or, for the format, be refused).
#: The layout of a run's files (``identity.json``'s ``format``).
FORMAT_VERSION = 1
#: What the post-hoc calibrators of ``calibration.json`` compute (its settings' ``rows``):
#: 2 when histogram binning and isotonic regression began to smooth toward the uniform
#: distribution by default, 3 when the run's recommended calibrator joined its rows, 4 when
#: each row gained the interval of its true ECE (``ece_low``, ``ece_high``).
CALIBRATION_VERSION = 4
#: The fits of the input calibrators of ``clamping-<name>.json`` (its ``fit_version``; 3:
#: the rows hold the interval of the true ECE too).
CLAMPING_VERSION = 3

#: The folder of a study folder holding its runs.
RUNS = "runs"


class RunFolder:
    """The folder ``path`` of one run (see the module docstring); it reads and writes the
    run's files, and fits nothing."""

    IDENTITY = "identity.json"
    CHECKPOINT = "checkpoint.pt"
    LOGITS = "logits.npz"
    WEIGHTS = "model.safetensors"
    TRAIN = "train.json"
    CALIBRATION = "calibration.json"
    TEMPERATURE = "temperature.json"
    #: The files of a run, besides each input calibrator's (:meth:`clamping_file`).
    FILES = (IDENTITY, CHECKPOINT, LOGITS, WEIGHTS, TRAIN, CALIBRATION, TEMPERATURE)
    #: Every file name of a run, as a regular expression (the input calibrators' included).
    NAME_PATTERN = re.compile(r"clamping-[^/]+\.json|" + "|".join(re.escape(n) for n in FILES))
    #: The glob of a run's folder in a study folder, from the study folder.
    GLOB = f"{RUNS}/*/seed-*"

    @classmethod
    def holds_rows(cls, name: str) -> bool:
        """Whether the run's file ``name`` caches result rows (its calibrators', or an
        input calibrator's).

        >>> RunFolder.holds_rows("calibration.json"), RunFolder.holds_rows("train.json")
        (True, False)
        """
        return name == cls.CALIBRATION or re.fullmatch(r"clamping-[^/]+\.json", name) is not None

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    @classmethod
    def of(cls, out: Path, label: str, seed: int) -> RunFolder:
        """The folder of the run of model ``label`` with ``seed`` in the study folder ``out``."""
        return cls(Path(out) / RUNS / label / f"seed-{seed}")

    def __repr__(self) -> str:
        return f"RunFolder({str(self.path)!r})"

    def file(self, name: str) -> Path:
        """The path of the run's file ``name`` (one of :data:`FILES`)."""
        return self.path / name

    def clamping_file(self, name: str) -> Path:
        """The file of the rows of the input calibrator ``name``."""
        return self.path / f"clamping-{name}.json"

    @property
    def finished(self) -> bool:
        """Whether the run is trained (``train.json`` is written last)."""
        return (self.path / self.TRAIN).exists()

    @property
    def has_identity(self) -> bool:
        return (self.path / self.IDENTITY).is_file()

    @property
    def has_temperature(self) -> bool:
        return (self.path / self.TEMPERATURE).exists()

    # reading

    def identity(self) -> Any | None:
        """The stored identity (None: none yet)."""
        path = self.path / self.IDENTITY
        return read_json(path) if path.exists() else None

    def logits_bytes(self) -> bytes:
        return self._bytes(self.LOGITS, "the logits of a finished run")

    def logits(self) -> dict[str, np.ndarray]:
        """The arrays of ``logits.npz``."""
        path = self.path / self.LOGITS
        try:
            with np.load(path, allow_pickle=False) as f:
                return {k: f[k] for k in f.files}
        except (OSError, ValueError) as exc:
            raise InputError(str(path), "the logits of a finished run", str(exc)) from None

    def weights_bytes(self) -> bytes:
        return self._bytes(self.WEIGHTS, "the weights of this run")

    def weights(self, data: bytes | None = None) -> dict[str, Tensor]:
        """The trained weights (from ``data``, the bytes of the run's weights file, when given)."""
        try:
            return safetensors_load(self.weights_bytes() if data is None else data)
        except (OSError, RuntimeError) as exc:
            raise InputError(
                str(self.file(self.WEIGHTS)), "the weights of this run", str(exc)
            ) from None

    def train_info(self) -> dict[str, Any]:
        """The content of ``train.json``: ``history``, ``train_seconds``, ``n_parameters``..."""
        info: dict[str, Any] = read_json(self.path / self.TRAIN)
        return info

    def temperature(self) -> TemperatureScaling:
        """The temperature scaling saved for the run."""
        path = self.path / self.TEMPERATURE
        ts = TemperatureScaling.load(path)
        if not isinstance(ts, TemperatureScaling):
            raise InputError(str(path), "a saved temperature scaling", ts.name)
        return ts

    def calibration(
        self, settings: dict[str, Any]
    ) -> tuple[list[dict[str, Any]], str | None] | None:
        """The calibrator rows and recommended method cached for ``settings``, else None."""
        path = self.path / self.CALIBRATION
        rows = _cached_rows(path, settings)
        if rows is None:
            return None
        recommended = read_json(path).get("recommended") or {}
        return rows, recommended.get("method")

    def clamping_rows(self, name: str, settings: dict[str, Any]) -> list[dict[str, Any]] | None:
        """The rows of the input calibrator ``name`` cached for ``settings``, else None."""
        return _cached_rows(self.clamping_file(name), settings)

    def _bytes(self, name: str, what: str) -> bytes:
        try:
            return (self.path / name).read_bytes()
        except OSError as exc:
            raise InputError(str(self.path / name), what, str(exc)) from None

    # writing, each file atomically

    def write_identity(self, identity: dict[str, Any]) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        write_json(self.path / self.IDENTITY, identity)

    def write_trained(self, logits: bytes, weights: bytes, info: dict[str, Any]) -> None:
        """A training's files, ``train.json`` last; the checkpoint is then removed."""
        atomic_write_bytes(self.path / self.LOGITS, logits)
        atomic_write_bytes(self.path / self.WEIGHTS, weights)
        write_json(self.path / self.TRAIN, info)
        (self.path / self.CHECKPOINT).unlink(missing_ok=True)

    def write_temperature(self, state: dict[str, Any]) -> None:
        """The fitted temperature scaling's ``to_json()``, as its ``save`` writes it."""
        text = json.dumps(state, indent=1, allow_nan=False)
        atomic_write_text(self.path / self.TEMPERATURE, text)

    def write_calibration(self, record: dict[str, Any]) -> None:
        write_json(self.path / self.CALIBRATION, record)

    def write_clamping(self, name: str, record: dict[str, Any]) -> None:
        write_json(self.clamping_file(name), record)


def _cached_rows(path: Path, settings: dict[str, Any]) -> list[dict[str, Any]] | None:
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
