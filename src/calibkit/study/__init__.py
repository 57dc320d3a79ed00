"""Config-driven studies: models x seeds, trained, calibrated by every method, reported.

:func:`run_study` reads nothing but its :class:`StudyConfig`; it trains (or resumes) every
(model, seed) into ``out/runs``, fits every calibrator on the calibration logits, and
writes ``results.csv``, ``results.json``, ``report.md``, ``report.html`` and ``figures/``
(see :mod:`calibkit.study.store.folder` for the layout).

Nothing is written before everything is checked (:func:`calibkit.study.run.runner.check_study`),
and a study holds its folder's lock while it runs: a second study on the same folder is
refused, not waited for (:mod:`calibkit.study.store.folder`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from calibkit.core.errors import InputError
from calibkit.study.definition.config import DataConfig, ModelSpec, StudyConfig, load_study_config
from calibkit.study.definition.prepare import StudyData, prepare_data
from calibkit.study.report import ReportSection, SectionBuilder, report_sections, write_study_report
from calibkit.study.run import runner
from calibkit.study.run.executor_factory import make_executor
from calibkit.study.run.executors import Executor, SerialExecutor
from calibkit.study.run.runner import StudyRuns
from calibkit.study.store.folder import locked_study_folder
from calibkit.study.store.record import COLUMNS, RunRecord

__all__ = [
    "COLUMNS",
    "DataConfig",
    "ModelSpec",
    "ReportSection",
    "RunRecord",
    "SectionBuilder",
    "StudyConfig",
    "StudyData",
    "StudyRuns",
    "load_study_config",
    "make_executor",
    "prepare_data",
    "report_sections",
    "run_study",
    "write_study_report",
]


def run_study(
    cfg: StudyConfig,
    out: Path,
    *,
    progress: bool = True,
    report_only: bool = False,
    executor: Executor | None = None,
    sections: Sequence[SectionBuilder] = (),
) -> StudyRuns:
    """Run (or resume) the study ``cfg`` into ``out`` and write its report there.

    ``report_only``: the report from what is finished, training and fitting nothing. The
    units of work run on ``executor`` (default: one after another in this process; see
    :mod:`calibkit.study.run.executors`), which it starts and closes. ``sections``: extra
    report sections a reproduction adds (:data:`calibkit.study.report.SectionBuilder`).

    Everything is checked before anything is written (the executor's resources too); a
    refused study changes no file."""
    out = Path(out)
    cache = runner.check_study(cfg, out, report_only=report_only)
    executor = executor or SerialExecutor()
    try:
        executor.start(cfg)
        with locked_study_folder(out):
            runs = runner._run_unlocked(
                cfg, out, progress=progress, report_only=report_only, cache=cache, executor=executor
            )
            if not runs.records:  # every finished run was removed since the check
                raise InputError("out", "a study folder with at least one trained run", str(out))
            logging.getLogger(__name__).info("writing the report")
            write_study_report(cfg, runs.records, out, runs.classes, runs.sizes, sections)
    except BaseException:  # failed or interrupted: the units still running are stopped
        executor.close(stop=True)
        raise
    executor.close()
    return runs
