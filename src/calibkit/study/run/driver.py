"""The driver of a study: it submits the units of work and alone writes what they return.

For each run, :meth:`Driver.submit_run` submits what is left of it: its training (a
:class:`~calibkit.study.run.units.RunUnit`, after writing the run's identity) and, once it is
trained, the fit again of its post-hoc calibrators when their cached rows are for other
settings or its temperature scaling is missing (a
:class:`~calibkit.study.run.units.CalibrateUnit`), and the fit of each input calibrator not
cached yet (a :class:`~calibkit.study.run.units.ClampUnit`). Finished units are written to
the run's :class:`~calibkit.study.store.run_folder.RunFolder` as they arrive, one at a time
(every file atomically, ``train.json`` last among a training's), so that the driver
holds one unit's artefacts at a time besides the data, and a study killed at any moment
resumes with what was written. Each finished unit is logged on one line: what it was,
where it ran, how long it took, and an estimate of the time left (:class:`TimeLeft`: each
kind of unit priced by the units of that kind finished so far). A unit that fails is
logged and kept in :attr:`Driver.failed`, nothing of it written; the others go on.
"""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path
from typing import Any

from calibkit.core.progress import duration
from calibkit.study.definition.config import ModelSpec, StudyConfig
from calibkit.study.definition.prepare import StudyData
from calibkit.study.run.executors import Executor, UnitFailed
from calibkit.study.run.units import (
    Calibrated,
    CalibrateUnit,
    ClampUnit,
    Finished,
    RunArtefacts,
    RunUnit,
    Unit,
    here,
)
from calibkit.study.store.identity import run_identity
from calibkit.study.store.record import calibration_settings, clamp_settings
from calibkit.study.store.run_folder import RunFolder

log = logging.getLogger(__name__)


#: The kinds of unit that are not an input calibrator's fit (see :func:`unit_kind`).
OWN_KINDS = ("training", "calibration")


def unit_kind(unit: Unit) -> tuple[str, str]:
    """What prices a unit: its model's training, its model's calibration again, or one
    input calibrator of its model."""
    if isinstance(unit, RunUnit):
        return ("training", unit.spec.label)
    if isinstance(unit, CalibrateUnit):
        return ("calibration", unit.spec.label)
    return (unit.name, unit.spec.label)


class TimeLeft:
    """The time a study has left, from the units finished so far, kind by kind.

    A kind of unit (:func:`unit_kind`: a model's training, or one input calibrator of a
    model) is priced at the mean time of its finished units; a kind none of whose units has
    finished yet is priced like the other input calibrators of the same model when some have
    finished, and otherwise not at all: the estimate then says how many units are not timed
    yet rather than guessing. The total is divided by the units that run at once.

    >>> left = TimeLeft(slots=1)
    >>> left.add(("training", "mlp"), 2)
    >>> left.add(("nc_ce", "mlp"), 2)
    >>> left.done(("training", "mlp"), 300.0)
    >>> left.describe()
    'about 5m00s left, and 2 nc_ce fits not timed yet'
    >>> left.done(("nc_ce", "mlp"), 8.0)
    >>> left.describe()
    'about 5m08s left'
    """

    def __init__(self, slots: int = 1) -> None:
        self.slots = max(1, slots)
        self.remaining: Counter[tuple[str, str]] = Counter()
        self.seconds: defaultdict[tuple[str, str], list[float]] = defaultdict(list)

    def add(self, kind: tuple[str, str], count: int = 1) -> None:
        """``count`` more units of ``kind`` to run (fewer, when negative: units that failed)."""
        self.remaining[kind] += count

    def done(self, kind: tuple[str, str], seconds: float) -> None:
        """A unit of ``kind`` finished in ``seconds``."""
        self.remaining[kind] -= 1
        self.seconds[kind].append(seconds)

    def _price(self, kind: tuple[str, str]) -> float | None:
        if self.seconds[kind]:
            return sum(self.seconds[kind]) / len(self.seconds[kind])
        name, label = kind
        alike = [
            t
            for (n, m), ts in self.seconds.items()
            if m == label and n not in OWN_KINDS
            for t in ts
        ]
        return sum(alike) / len(alike) if name not in OWN_KINDS and alike else None

    def describe(self) -> str:
        """``about 3m05s left`` (and how many units are not timed yet)."""
        total, untimed = 0.0, Counter[str]()
        for kind, count in self.remaining.items():
            if count <= 0:
                continue
            price = self._price(kind)
            if price is None:
                untimed[kind[0] if kind[0] in OWN_KINDS else f"{kind[0]} fit"] += count
            else:
                total += price * count
        if not untimed:
            return f"about {duration(total / self.slots)} left"
        rest = ", ".join(f"{n} {w}{'s' * (n > 1)}" for w, n in untimed.items()) + " not timed yet"
        if total == 0:
            return f"time left unknown ({rest})"
        return f"about {duration(total / self.slots)} left, and {rest}"


class Driver:
    """Submits a study's units to ``executor`` and writes their artefacts (see above)."""

    def __init__(self, cfg: StudyConfig, executor: Executor, progress: bool) -> None:
        self.cfg, self.executor, self.progress = cfg, executor, progress
        self.keys: dict[str, Hashable] = {}  # a run folder -> the key of its data
        self.total = 0
        self.planned = False  # whether total counts every unit of the study (plan)
        self.finished = 0
        self.left = TimeLeft(executor.slots)
        self.failed: list[UnitFailed] = []  # the units that failed, in order

    def _missing_fits(self, run: RunFolder, trained: bool) -> list[str]:
        """The input calibrators of a run whose rows are not cached yet."""
        return [
            name
            for name in self.cfg.input_calibrators
            if not trained or run.clamping_rows(name, clamp_settings(self.cfg, name)) is None
        ]

    def _needs_calibration(self, run: RunFolder) -> bool:
        """Whether a trained run's calibrators must be fitted again (see submit_calibration)."""
        rows = run.calibration(calibration_settings(self.cfg, run.logits())) is None
        return rows or not run.has_temperature

    def _count_run(self, spec: ModelSpec, run: RunFolder, calibration: bool = True) -> None:
        """Count what is left of a run: its training (or, with ``calibration``, its
        calibration again) and the fits of its input calibrators not cached yet."""
        trained = run.finished
        fits = self._missing_fits(run, trained)
        again = calibration and trained and self._needs_calibration(run)
        self.total += len(fits) + (not trained) + again
        self.left.add(("training", spec.label), int(not trained))
        self.left.add(("calibration", spec.label), int(again))
        for name in fits:
            self.left.add((name, spec.label))

    def plan(self, runs: Sequence[tuple[ModelSpec, RunFolder]], report_only: bool = False) -> None:
        """Count every unit of the study before the first is submitted, so that each
        finished unit is logged as ``(k/N)`` over all of them and the time left prices
        them all (without it, units are counted as they are submitted). ``report_only``:
        only the calibrations again of the runs already trained."""
        for spec, run in runs:
            if not report_only:
                self._count_run(spec, run)
            elif run.finished and self._needs_calibration(run):
                self.total += 1
                self.left.add(("calibration", spec.label))
        self.planned = True

    def submit_run(
        self, spec: ModelSpec, seed: int, rdir: Path, key: Hashable, data: StudyData
    ) -> None:
        """Submit what is left of the run ``(spec, seed)`` in ``rdir`` on ``data``."""
        run = RunFolder(rdir)
        trained = run.finished
        fits = self._missing_fits(run, trained)
        if not self.planned:  # its calibration again is counted by submit_calibration
            self._count_run(spec, run, calibration=False)
        self.keys[str(rdir)] = key
        if trained:
            self.submit_calibration(spec, seed, rdir, key, data)
            weights = run.weights_bytes() if fits else b""
            self._submit_fits(spec, seed, rdir, weights, fits, data)
            return
        if not run.has_identity:
            run.write_identity(run_identity(self.cfg, spec, seed, data))
        unit = RunUnit(self.cfg, spec, seed, str(rdir), progress=self.progress)
        self.executor.submit(unit, key, data)

    def submit_calibration(
        self, spec: ModelSpec, seed: int, rdir: Path, key: Hashable, data: StudyData
    ) -> None:
        """Submit the fit again of a trained run's post-hoc calibrators (rows cached for
        other settings) and temperature scaling (missing), if either is needed."""
        run = RunFolder(rdir)
        rows = run.calibration(calibration_settings(self.cfg, run.logits())) is None
        temperature = not run.has_temperature
        if not (rows or temperature):
            return
        self.keys[str(rdir)] = key
        if not self.planned:
            self.total += 1
            self.left.add(("calibration", spec.label))
        logits = run.logits_bytes()
        unit = CalibrateUnit(self.cfg, spec, seed, str(rdir), logits, rows, temperature)
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
            unit = ClampUnit(self.cfg, spec, seed, str(rdir), name, weights, progress=self.progress)
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
        self.left.add(unit_kind(exc.unit), -1)
        if isinstance(exc.unit, RunUnit):  # its fits will not be submitted either
            for name in self.cfg.input_calibrators:
                self.left.add((name, exc.unit.spec.label), -1)
        log.error("%s failed: %s", exc.unit.what, exc.why)

    def _store(self, finished: Finished, prepared: Mapping[Any, StudyData]) -> None:
        unit, run = finished.unit, RunFolder(Path(finished.unit.rdir))
        art = finished.artefacts
        if isinstance(unit, RunUnit):
            assert isinstance(art, RunArtefacts)
            run.write_trained(art.logits, art.weights, art.info)
            self._write_calibrated(run, art.calibrated)
            fits = list(self.cfg.input_calibrators)
            data = prepared.get(self.keys[str(run.path)])
            self._submit_fits(unit.spec, unit.seed, run.path, art.weights, fits, data)
            what = f"trained {unit.what}"
        elif isinstance(unit, CalibrateUnit):
            assert isinstance(art, Calibrated)
            self._write_calibrated(run, art)
            what = f"fitted the {unit.what}"
        else:
            assert isinstance(art, dict)
            run.write_clamping(unit.name, art)
            what = f"fitted {unit.what}"
        self.finished += 1
        self._log(what, finished)

    @staticmethod
    def _write_calibrated(run: RunFolder, calibrated: Calibrated) -> None:
        """The temperature scaling, then the calibrator rows (the order of the files)."""
        if calibrated.temperature is not None and not run.has_temperature:
            run.write_temperature(calibrated.temperature)
        if calibrated.calibration is not None:
            run.write_calibration(calibrated.calibration)

    def _log(self, what: str, finished: Finished) -> None:
        self.left.done(unit_kind(finished.unit), finished.seconds)
        # where a unit ran is news only when it ran elsewhere (a worker process, a Ray node)
        where = "" if finished.where == here() else f" on {finished.where}"
        log.info(
            "(%d/%d) %s%s in %s; %s",
            self.finished,
            self.total,
            what,
            where,
            duration(finished.seconds),
            self.left.describe(),
        )
