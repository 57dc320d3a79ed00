"""The driver of a study: it submits the units of work and alone writes what they return.

For each run, :meth:`Driver.submit_run` submits what is left of it: its training (a
:class:`~calibkit.study.units.RunUnit`, after writing the run's ``identity.json``) and, once
it is trained, the fit of each input calibrator not cached yet (a
:class:`~calibkit.study.units.ClampUnit`). Finished units are written as they arrive, one at
a time (every file atomically, ``train.json`` last among a training's), so that the driver
holds one unit's artefacts at a time besides the data, and a study killed at any moment
resumes with what was written. Each finished unit is logged on one line: what it was,
where it ran, how long it took, and an estimate of the time left. A unit that fails is
logged and kept in :attr:`Driver.failed`, nothing of it written; the others go on.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Hashable, Mapping
from pathlib import Path
from typing import Any

from calibkit.io.atomic import atomic_write_bytes
from calibkit.study.artifacts import cached_rows, save_temperature, write_json
from calibkit.study.clamping import clamp_settings
from calibkit.study.config import ModelSpec, StudyConfig
from calibkit.study.executors import Executor, UnitFailed
from calibkit.study.identity import IDENTITY_FILE, run_identity
from calibkit.study.prepare import StudyData
from calibkit.study.units import ClampUnit, Finished, RunArtefacts, RunUnit

log = logging.getLogger(__name__)


def _duration(seconds: float) -> str:
    """``seconds`` as ``1h02m``, ``3m05s`` or ``12s``."""
    s = round(seconds)
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


class Driver:
    """Submits a study's units to ``executor`` and writes their artefacts (see above)."""

    def __init__(self, cfg: StudyConfig, executor: Executor, progress: bool) -> None:
        self.cfg, self.executor, self.progress = cfg, executor, progress
        self.keys: dict[str, Hashable] = {}  # a run folder -> the key of its data
        self.total = 0
        self.finished = 0
        self.start = time.perf_counter()
        self.failed: list[UnitFailed] = []  # the units that failed, in order

    def _missing_fits(self, rdir: Path, trained: bool) -> list[str]:
        """The input calibrators of a run whose rows are not cached yet."""
        return [
            name
            for name in self.cfg.input_calibrators
            if not trained
            or cached_rows(rdir / f"clamping-{name}.json", clamp_settings(self.cfg, name)) is None
        ]

    def submit_run(
        self, spec: ModelSpec, seed: int, rdir: Path, key: Hashable, data: StudyData
    ) -> None:
        """Submit what is left of the run ``(spec, seed)`` in ``rdir`` on ``data``."""
        trained = (rdir / "train.json").exists()
        fits = self._missing_fits(rdir, trained)
        self.total += len(fits) + (not trained)
        self.keys[str(rdir)] = key
        if trained:
            weights = (rdir / "model.safetensors").read_bytes() if fits else b""
            self._submit_fits(spec, seed, rdir, weights, fits, data)
            return
        if not (rdir / IDENTITY_FILE).exists():
            rdir.mkdir(parents=True, exist_ok=True)
            write_json(rdir / IDENTITY_FILE, run_identity(self.cfg, spec, seed, data))
        unit = RunUnit(self.cfg, spec, seed, str(rdir), self.progress)
        self.executor.submit(unit, key, data)

    def _submit_fits(
        self,
        spec: ModelSpec,
        seed: int,
        rdir: Path,
        weights: bytes,
        names: list[str],
        data: StudyData | None,
    ) -> None:
        for name in names:
            unit = ClampUnit(self.cfg, spec, seed, str(rdir), name, weights, self.progress)
            self.executor.submit(unit, self.keys[str(rdir)], data)

    def store_ready(self, prepared: Mapping[Any, StudyData]) -> None:
        """Write every unit finished so far, without waiting for others."""
        while True:
            try:
                finished = self.executor.poll()
            except UnitFailed as exc:
                self._failed(exc)
                continue
            if finished is None:
                return
            self._store(finished, prepared)

    def store_all(self, prepared: Mapping[Any, StudyData]) -> None:
        """Wait for every unit submitted and write each as it finishes."""
        while self.executor.pending():
            try:
                finished = self.executor.wait()
            except UnitFailed as exc:
                self._failed(exc)
                continue
            self._store(finished, prepared)

    def _failed(self, exc: UnitFailed) -> None:
        """A unit failed: nothing of it is written; the others go on (see ``failed``)."""
        self.failed.append(exc)
        log.error("%s failed: %s", exc.unit.what, exc.why)

    def _store(self, finished: Finished, prepared: Mapping[Any, StudyData]) -> None:
        unit, rdir = finished.unit, Path(finished.unit.rdir)
        if isinstance(unit, RunUnit):
            art = finished.artefacts
            assert isinstance(art, RunArtefacts)
            atomic_write_bytes(rdir / "logits.npz", art.logits)
            atomic_write_bytes(rdir / "model.safetensors", art.weights)
            write_json(rdir / "train.json", art.info)
            (rdir / "checkpoint.pt").unlink(missing_ok=True)
            save_temperature(rdir)
            write_json(rdir / "calibration.json", art.calibration)
            fits = list(self.cfg.input_calibrators)
            data = prepared.get(self.keys[str(rdir)])
            self._submit_fits(unit.spec, unit.seed, rdir, art.weights, fits, data)
            what = f"trained {unit.what}"
        else:
            write_json(rdir / f"clamping-{unit.name}.json", finished.artefacts)
            what = f"fitted {unit.what}"
        self.finished += 1
        self._log(what, finished)

    def _log(self, what: str, finished: Finished) -> None:
        elapsed = time.perf_counter() - self.start
        left = elapsed / self.finished * (self.total - self.finished)
        log.info(
            "(%d/%d) %s on %s in %s; about %s left",
            self.finished,
            self.total,
            what,
            finished.where,
            _duration(finished.seconds),
            _duration(left),
        )
