"""Run a study: train every (model, seed), calibrate, evaluate, aggregate; resumable.

The output folder, what it may hold and its lock (one study at a time, refused, not waited
for): :mod:`calibkit.study.store.folder`. Every file is written atomically. A run is done
when ``train.json`` exists; killed midway (even by SIGKILL), a study started again skips
finished runs, resumes an interrupted one from its last finished epoch, and ends with the
same table.

Nothing is written before everything is checked (:func:`check_study`); ``config.toml`` is
written only when the study starts for real, and a run's ``identity.json`` once its model
is built. A refused study leaves the folder as it was, so the corrected config runs on the
same ``--out``.

Where the work runs: each run's training (with its post-hoc calibrators) and each input
calibrator's fit is a unit of work (:mod:`calibkit.study.run.units`), run by an executor
(:mod:`calibkit.study.run.executors`: in this process, in worker processes, or on Ray); only this
process writes the folder (:mod:`calibkit.study.run.driver`), so the table is the same whatever
ran the units. A unit that fails (its error, or out of memory even running alone) fails
alone: the others finish and are written, then :class:`~calibkit.study.run.executors.StudyFailed`
names each failed unit; the study started again runs only what is left.

Progress (which run, which dataset, each finished unit with where it ran and the time left,
each epoch's summary when the units run here) is logged, not printed (see
:mod:`calibkit.core.progress`).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path

from calibkit.core.errors import InputError
from calibkit.io.toml import to_toml
from calibkit.study.definition.components import build_model, resolve_device
from calibkit.study.definition.config import (
    DataConfig,
    ModelSpec,
    StudyConfig,
    check_input_calibrators,
)
from calibkit.study.definition.prepare import StudyData, prepare_data
from calibkit.study.run.driver import Driver
from calibkit.study.run.executors import Executor, SerialExecutor, StudyFailed
from calibkit.study.store.folder import (
    CONFIG,
    check_study_folder,
    record_written,
    write_study_file,
)
from calibkit.study.store.identity import check_identity, run_identity
from calibkit.study.store.record import RunRecord, read_record
from calibkit.study.store.run_folder import RUNS, RunFolder
from calibkit.workflows.methods import resolve_methods

log = logging.getLogger(__name__)


#: The data of a study's runs, loaded once: ``(data settings, seed or 0) -> data``.
DataCache = dict[tuple[DataConfig, int], StudyData]


def _runs(cfg: StudyConfig, out: Path, report_only: bool) -> list[tuple[ModelSpec, int, Path]]:
    """Every (model, seed, run folder) of ``cfg`` (``report_only``: the finished ones)."""
    runs = [
        (spec, seed, RunFolder.of(out, spec.label, seed).path)
        for spec in cfg.models
        for seed in cfg.seeds
    ]
    return [r for r in runs if not report_only or RunFolder(r[2]).finished]


def check_study(cfg: StudyConfig, out: Path, *, report_only: bool = False) -> DataCache:
    """Check everything a study needs before it writes a file; it reads, and writes nothing.

    The folder ``out`` must follow the study folder rule (:mod:`calibkit.study.store.folder`); the
    device must exist; every run's data must load, its model build for that data, every
    calibrator and input calibrator apply to it; a run already in ``out`` must have this
    study's settings; with ``report_only``, at least one run must be finished. Returns the
    data loaded (the first run's, kept for the study).
    """
    inputs = [spec.init for spec in cfg.models]
    inputs += [cfg.model_data(spec).data_dir for spec in cfg.models]
    check_study_folder(out, inputs=inputs)
    resolve_device(cfg.device)
    runs = _runs(cfg, out, report_only)
    if not runs:
        raise InputError("out", "a study folder with at least one trained run", str(out))
    cache: DataCache = {}
    built: set[tuple[str, DataConfig]] = set()
    for spec, seed, rdir in reversed(runs):  # the cache ends on the first run's data
        data_cfg = cfg.model_data(spec)
        _, data = _prepared(cache, data_cfg, seed, announce=None)
        if (spec.label, data_cfg) not in built:
            built.add((spec.label, data_cfg))
            check_calibrators(cfg, spec, data)
        check_identity(rdir, run_identity(cfg, spec, seed, data))
    return cache


def check_calibrators(cfg: StudyConfig, spec: ModelSpec, data: StudyData) -> None:
    """Refuse a model that cannot be built for ``data``, or a calibrator that cannot
    calibrate it (a binary-only method for more classes, an input calibrator's options)."""
    try:
        resolve_methods(list(cfg.calibrators) or None, data.n_classes)
    except InputError as exc:
        raise InputError("calibrators", exc.expected, exc.got) from None
    model = build_model(spec, data)
    check_input_calibrators(cfg.input_calibrators, cfg.input_calibrator_params, model)


@dataclass(frozen=True)
class StudyRuns:
    """Every finished run of a study, with the class names and each model's split sizes."""

    records: list[RunRecord]
    classes: tuple[str, ...]
    sizes: dict[str, dict[str, int]]
    seconds: float


def finished_runs(cfg: StudyConfig, out: Path) -> StudyRuns:
    """The runs of ``cfg`` already finished in ``out``, read without taking the folder's
    lock (a study may be writing it): nothing is trained, no input calibrator fitted."""
    return _run_unlocked(cfg, out, progress=False, report_only=True)


def _run_unlocked(
    cfg: StudyConfig,
    out: Path,
    *,
    progress: bool = True,
    report_only: bool = False,
    cache: DataCache | None = None,
    executor: Executor | None = None,
) -> StudyRuns:
    """Run (or resume) every (model, seed) of ``cfg`` into ``out``, checked by
    :func:`check_study` (``cache``: the data it loaded) and locked by the caller.

    The units of work (a run's training and calibration, each input calibrator's fit) run
    on ``executor`` (default: in this process, one after another, started by the caller);
    their artefacts are written here as they arrive, one at a time.
    With ``report_only``, nothing is trained and no input calibrator is fitted: the
    records are the runs already trained, with the input calibrators already fitted
    (while another process is still running the study, or when it was stopped early);
    a run whose post-hoc calibrators' rows were cached for other settings (or made before
    its temperature scaling was saved) is calibrated again, in a unit, before it is read.
    Reading the records back fits nothing (:func:`~calibkit.study.store.record.read_record`).
    ``progress=False`` silences the calibrators that report their own epochs.
    """
    out = Path(out)
    if not report_only:
        record_written(out, CONFIG, RUNS)
        write_study_file(out, CONFIG, to_toml(cfg).encode("utf-8"))
    elif (out / RUNS).is_dir():
        record_written(out, RUNS)
    start = time.perf_counter()
    driver = Driver(cfg, executor or SerialExecutor(), progress)
    prepared: DataCache = {} if cache is None else cache
    sizes: dict[str, dict[str, int]] = {}
    classes: tuple[str, ...] = ()
    runs = _runs(cfg, out, False)
    driver.plan([(spec, RunFolder(rdir)) for spec, _, rdir in runs], report_only)
    n = len(runs)
    shown: list[tuple[DataConfig, int]] = []
    for i, (spec, seed, rdir) in enumerate(runs, start=1):
        done = RunFolder(rdir).finished
        if report_only and not done:
            log.info("[%d/%d] %s seed %d: not trained yet, left out", i, n, spec.label, seed)
            continue
        again = " (finished before)" if done else ""
        log.info("[%d/%d] %s seed %d%s", i, n, spec.label, seed, again)
        key, data = _prepared(prepared, cfg.model_data(spec), seed, announce=shown)
        classes = data.classes
        sizes[spec.label] = {k: len(v[1]) for k, v in data.splits.items()}
        if report_only:
            driver.submit_calibration(spec, seed, rdir, key, data)
        else:
            driver.submit_run(spec, seed, rdir, key, data)
        driver.store_ready(prepared)
    driver.store_all(prepared)
    if driver.failed:
        raise StudyFailed(
            [(f.unit.what, f.why) for f in driver.failed],
            2 if all(isinstance(f.error, InputError) for f in driver.failed) else 1,
        )
    records = [
        read_record(cfg, spec, seed, RunFolder(rdir))
        for spec, seed, rdir in runs
        if RunFolder(rdir).finished
    ]
    seconds = time.perf_counter() - start
    log.info("all %d runs done in %.0fs", len(runs), seconds)
    return StudyRuns(records, classes, sizes, seconds)


def _prepared(
    cache: DataCache,
    data_cfg: DataConfig,
    seed: int,
    announce: list[tuple[DataConfig, int]] | None,
) -> tuple[tuple[DataConfig, int], StudyData]:
    """The data of a run, loaded once (one dataset in memory: runs come grouped by model).

    With ``announce`` (the data used so far), a change of data is logged and appended."""
    key = (data_cfg, seed if data_cfg.split_by_seed else 0)
    if key not in cache:
        cache.clear()
        cache[key] = prepare_data(data_cfg, seed)
    data = cache[key]
    if announce is not None and announce[-1:] != [key]:
        announce.append(key)
        log.info("loading %s", data_cfg.dataset)
        counts = ", ".join(f"{k} {len(v[1]):,}" for k, v in data.splits.items())
        log.info("%d classes (%s); %s", data.n_classes, ", ".join(data.classes), counts)
    return key, data
