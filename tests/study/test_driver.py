"""The driver's estimate of the time left: each kind of unit priced by its own kind."""

from __future__ import annotations

import dataclasses
import logging
import re
from pathlib import Path

import pytest

from calibkit.study import load_study_config, run_study
from calibkit.study.run.driver import TimeLeft
from tests.study.test_clamping import CLAMPED


def test_fits_left_after_a_training_are_not_priced_as_trainings() -> None:
    """On a GPU, a 313 s training unit then three Neural Clamping fits of 6-8 s each: the
    estimate used to be the mean unit time (313 s) times the units left, "about 17m05s"."""
    left = TimeLeft(slots=1)
    left.add(("training", "resnet50_28"))
    for name in ("nc_ce", "nc_fl", "ts_focal"):
        left.add((name, "resnet50_28"))
    left.done(("training", "resnet50_28"), 313.0)
    assert left.describe() == (
        "time left unknown (1 nc_ce fit, 1 nc_fl fit, 1 ts_focal fit not timed yet)"
    )
    left.done(("nc_ce", "resnet50_28"), 8.0)
    assert left.describe() == "about 16s left"  # the other fits of that model: priced alike
    left.done(("nc_fl", "resnet50_28"), 8.0)
    left.done(("ts_focal", "resnet50_28"), 6.0)
    assert left.describe() == "about 0s left"


def test_the_units_left_are_shared_among_the_slots() -> None:
    left = TimeLeft(slots=4)
    left.add(("training", "a"), 9)
    left.done(("training", "a"), 100.0)
    assert left.describe() == "about 3m20s left"  # 8 x 100 s on 4 slots


def test_a_model_not_trained_yet_is_not_priced_like_another() -> None:
    left = TimeLeft(slots=1)
    left.add(("training", "small"), 2)
    left.add(("training", "big"), 1)
    left.done(("training", "small"), 10.0)
    assert left.describe() == "about 10s left, and 1 training not timed yet"


def test_the_study_logs_the_estimate_per_kind(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "c.toml"
    path.write_text(CLAMPED, encoding="utf-8")
    cfg = load_study_config(path).select(models=["mlp"], epochs=1)
    with caplog.at_level(logging.INFO, logger="calibkit.study.run.driver"):
        run_study(cfg, tmp_path / "out", progress=False)
    lines = [r.getMessage() for r in caplog.records if r.name == "calibkit.study.run.driver"]
    assert len(lines) == 3
    # the serial executor runs every unit here: no host or pid in its lines (#30)
    assert lines[0].startswith("(1/3) trained mlp seed 0 in ")
    assert not any(" pid " in line for line in lines)
    assert lines[0].endswith("; time left unknown (1 nc_fast fit, 1 nc_fl fit not timed yet)")
    assert "; about " in lines[1]
    assert lines[2].endswith("; about 0s left")


def test_the_serial_counter_counts_every_unit_of_the_study(
    tiny_config: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """With the default serial executor each unit runs as it is submitted: the counter
    used to count the units submitted so far, "(1/1)", "(2/2)", ... and "about 0s left"
    while runs remained (#30). Every unit is counted before the first runs."""
    cfg = load_study_config(tiny_config)  # 2 models x 2 seeds: 4 trainings
    with caplog.at_level(logging.INFO, logger="calibkit.study.run.driver"):
        run_study(cfg, tmp_path / "out", progress=False)
    lines = [r.getMessage() for r in caplog.records if r.name == "calibkit.study.run.driver"]
    assert [line.split(" ", 1)[0] for line in lines] == ["(1/4)", "(2/4)", "(3/4)", "(4/4)"]
    # a model's first training prices its second seed; the other model is not timed yet
    assert re.search(r"; about \S+ left, and 2 trainings not timed yet$", lines[0])
    assert lines[3].endswith("; about 0s left")


def test_a_resumed_study_counts_only_what_is_left(
    tiny_config: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cfg = load_study_config(tiny_config).select(models=["mlp"])
    out = tmp_path / "out"
    run_study(cfg, out, progress=False)
    wider = dataclasses.replace(cfg, calibrators=("temperature", "isotonic"))
    with caplog.at_level(logging.INFO, logger="calibkit.study.run.driver"):
        run_study(wider, out, progress=False)  # both runs' calibrators fitted again
    lines = [r.getMessage() for r in caplog.records if r.name == "calibkit.study.run.driver"]
    assert [line.split(" ", 1)[0] for line in lines] == ["(1/2)", "(2/2)"]
    assert lines[0].startswith("(1/2) fitted the calibration of mlp seed 0")
