"""The study report: the temperature scaling it draws is the runner's saved artefact."""

from __future__ import annotations

from pathlib import Path

import pytest

from calibkit.calibrators import TemperatureScaling
from calibkit.core.errors import InputError
from calibkit.study import load_study_config, run_study
from calibkit.study.report.writer import model_table, results_csv
from calibkit.study.store.run_folder import RunFolder


def test_each_run_saves_its_temperature_scaling(tiny_config: Path, tmp_path: Path) -> None:
    cfg = load_study_config(tiny_config).select(models=["mlp"], seeds=[0])
    out = tmp_path / "out"
    runs = run_study(cfg, out, progress=False)
    rdir = runs.records[0].directory
    z = RunFolder(rdir).logits()
    ts = RunFolder(rdir).temperature()
    fresh = TemperatureScaling().fit(z["cal_logits"], z["cal_labels"])
    assert ts.temperature_ == fresh.temperature_  # saved as JSON: the float round-trips
    row = next(r for r in runs.records[0].rows if r["calibrator"] == "temperature")
    assert row["temperature"] == pytest.approx(ts.temperature_, rel=1e-12)
    # a folder from before the artefact existed: the runner fits it again, report only
    saved = (rdir / RunFolder.TEMPERATURE).read_bytes()
    (rdir / RunFolder.TEMPERATURE).unlink()
    before = (out / "report.md").read_text()
    run_study(cfg, out, progress=False, report_only=True)
    assert (rdir / RunFolder.TEMPERATURE).read_bytes() == saved
    assert (out / "report.md").read_text() == before


def test_a_missing_temperature_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=RunFolder.TEMPERATURE):
        RunFolder(tmp_path).temperature()


def test_results_csv_and_model_table_by_hand() -> None:
    from calibkit.study.store.record import RunRecord

    row = {
        "model": "m",
        "seed": 0,
        "calibrator": "none",
        "accuracy": 0.5,
        "nll": float("nan"),
        "ece": 0.25,
        "aece": 0.125,
        "mce": 1.0,
        "brier": 0.1,
        "temperature": 1.0,
    }
    rec = RunRecord("m", 0, [], [row], 1.0, 10, Path("."))
    assert results_csv([rec]).splitlines() == [
        "model,seed,calibrator,accuracy,nll,ece,aece,mce,brier,temperature",
        "m,0,none,0.5,,0.25,0.125,1.0,0.1,1.0",
    ]
    stats = {
        "none": {"ece": (0.25, 0.0), "temperature": (1.0, 0.0)},
        "ts": {"ece": (0.1, 0.01), "temperature": (1.5, 0.1)},
    }
    table = model_table("m", stats, 2, ("ece", "temperature"))
    assert table.header == ["Calibrator", "ECE", "T"]
    assert [[c.text for c in r] for r in table.rows] == [
        ["none", "25.00 ± 0.00", "1.0000 ± 0.0000"],
        ["ts", "10.00 ± 1.00", "1.5000 ± 0.1000"],
    ]
    assert [c.best for c in table.rows[1]] == [False, True, False]  # T is never ranked
