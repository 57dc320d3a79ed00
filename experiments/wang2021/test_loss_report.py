"""A tiny loss study on digits: with the section builder, the report gains the
training-objective section; without it (plain ``calibkit study``), it does not."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from calibkit.study import load_study_config, run_study
from experiments.wang2021.loss_report import loss_methods, loss_section

ROOT = Path(__file__).resolve().parents[2]

LOSS_STUDY = """
name = "tiny losses"
seeds = [0, 1]
calibrators = ["temperature_ece", "histogram"]
calibrator_params = { temperature_ece = { t_min = 0.05, t_max = 5.0, t_step = 0.05 } }
n_floor_draws = 10

[data]
dataset = "digits:0,1,2,3"
calibration_size = 200

[training]
epochs = 3
batch_size = 32
lr = 0.01
track_learning = true

[[models]]
name = "mlp"
label = "ce"
params = { hidden = [16] }

[[models]]
name = "mlp"
label = "ls_0.1"
params = { hidden = [16] }
training = { loss = "label_smoothing", loss_params = { epsilon = 0.1 } }

[[models]]
name = "mlp"
label = "focal_3"
params = { hidden = [16] }
training = { loss = "focal", loss_params = { gamma = 3 } }
"""


def test_loss_study_report_has_the_paper_tables_and_figures(tmp_path: Path) -> None:
    path = tmp_path / "l.toml"
    path.write_text(LOSS_STUDY, encoding="utf-8")
    cfg = load_study_config(path)
    assert loss_methods(cfg) == {
        "ce": ("cross_entropy", 0.0),
        "ls_0.1": ("label_smoothing", 0.1),
        "focal_3": ("focal", 3.0),
    }
    out = tmp_path / "out"
    run_study(cfg, out, progress=False, sections=[loss_section])
    md = (out / "report.md").read_text()
    assert "## Training objectives" in md
    assert "Welch" in md
    figures = {p.name for p in (out / "figures").iterdir()}
    assert {
        "loss_ece_vs_coefficient.png",
        "loss_optimal_ece_per_epoch.png",
        "loss_max_logit_ce.png",
        "loss_max_logit_ls_0.1.png",
        "loss_max_logit_focal_3.png",
        "loss_calibration_size.png",
    } <= figures
    before = (out / "report.md").read_text()
    run_study(cfg, out, progress=False, sections=[loss_section])  # rows from the cache now
    assert (out / "report.md").read_text() == before
    run_study(cfg, out, progress=False)  # the generic report: no paper section of its own
    md = (out / "report.md").read_text()
    assert "Training objectives" not in md
    assert not any(p.name.startswith("loss_") for p in (out / "figures").iterdir())


def test_the_driver_is_calibkit_study_with_the_section(tmp_path: Path) -> None:
    """``python experiments/wang2021/study.py CONFIG`` (a real process, run as a file) writes
    the report ``run_study`` writes with the section."""
    path = tmp_path / "l.toml"
    path.write_text(LOSS_STUDY, encoding="utf-8")
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    driver = ROOT / "experiments" / "wang2021" / "study.py"
    cmd = [sys.executable, str(driver), str(path), "--out", str(out), "--quiet"]
    done = subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "## Training objectives" in (out / "report.md").read_text()
    bad = subprocess.run(
        [sys.executable, str(driver), str(tmp_path / "missing.toml")],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2
    assert bad.stderr.startswith("calibkit: error:")


def test_a_study_of_one_loss_has_no_loss_section(tmp_path: Path) -> None:
    path = tmp_path / "l.toml"
    path.write_text(LOSS_STUDY.split("[[models]]")[0] + '[[models]]\nname = "mlp"\n')
    assert loss_methods(load_study_config(path)) is None
