"""Every fit of a study happens in a unit of work on its executor; reading the results
back (the records the report reads) fits nothing."""

from __future__ import annotations

import dataclasses
import logging
import os
from pathlib import Path

import pytest

from calibkit.core.errors import InputError
from calibkit.study import load_study_config, make_executor, run_study
from calibkit.study.store.record import read_record
from calibkit.study.store.run_folder import RunFolder
from tests.study.conftest import tree

DRIVER = "calibkit.study.run.driver"


def test_a_resumed_study_refits_its_calibrators_in_a_worker(
    tiny_config: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Rows cached for another calibrator list, and a run made before its temperature
    scaling was saved: both are fitted again by a unit in a worker process, not by the
    process that reads the results."""
    cfg = load_study_config(tiny_config).select(models=["mlp"], seeds=[0])
    out = tmp_path / "out"
    run_study(cfg, out, progress=False)
    run = RunFolder.of(out, "mlp", 0)
    saved = run.file(RunFolder.TEMPERATURE).read_bytes()
    run.file(RunFolder.TEMPERATURE).unlink()
    wider = dataclasses.replace(cfg, calibrators=("temperature", "isotonic"))
    with caplog.at_level(logging.INFO, logger=DRIVER):
        runs = run_study(wider, out, progress=False, executor=make_executor("processes", workers=1))
    lines = [r.getMessage() for r in caplog.records if r.name == DRIVER]
    assert len(lines) == 1
    assert lines[0].startswith("(1/1) fitted the calibration of mlp seed 0")
    assert f" pid {os.getpid()} " not in lines[0]  # a worker fitted them
    assert run.file(RunFolder.TEMPERATURE).read_bytes() == saved
    assert [r["calibrator"] for r in runs.records[0].rows] == ["none", "temperature", "isotonic"]


def test_reading_a_record_fits_nothing(tiny_config: Path, tmp_path: Path) -> None:
    """Rows cached for other settings are refused by the reader, which writes nothing."""
    cfg = load_study_config(tiny_config).select(models=["mlp"], seeds=[0])
    out = tmp_path / "out"
    run_study(cfg, out, progress=False)
    run = RunFolder.of(out, "mlp", 0)
    record = read_record(cfg, cfg.models[0], 0, run)
    assert [r["calibrator"] for r in record.rows] == ["none", "temperature", "histogram"]
    before = tree(out)
    wider = dataclasses.replace(cfg, calibrators=("temperature", "isotonic"))
    with pytest.raises(InputError, match="the rows of this study's calibrators"):
        read_record(wider, cfg.models[0], 0, run)
    assert tree(out) == before
