"""The language-model experiment on files lm-evaluation-harness wrote for the simulated
base-like and instruction-tuned-like models (``tests/io/fixtures/lm/simulated``): the base
model near calibrated, the tuned one overconfident, one temperature fixing most of it, and
the page's table from the driver run as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.lm import base_vs_instruct
from experiments.test_layout import ENV, ROOT

SIMULATED = ROOT / "tests" / "io" / "fixtures" / "lm" / "simulated"
DRIVER = ROOT / "experiments" / "lm" / "base_vs_instruct.py"


@pytest.fixture(scope="module")
def models() -> dict[str, dict]:
    return {
        name: base_vs_instruct.judge(SIMULATED / name, n_boot=50) for name in ("base", "instruct")
    }


def test_base_near_calibrated_instruct_overconfident(models: dict[str, dict]) -> None:
    base, tuned = models["base"]["rows"]["none"], models["instruct"]["rows"]["none"]
    assert base["accuracy"] == tuned["accuracy"]  # the same answers, sharper
    assert tuned["confidence"] > tuned["accuracy"] + 0.05  # overconfident
    # 120 questions: the base model's gap is noise, smaller than the tuned one's
    assert abs(base["confidence"] - base["accuracy"]) < tuned["confidence"] - tuned["accuracy"]
    assert tuned["ece"] > base["ece"]
    t_base = models["base"]["rows"]["temperature"]["params"]["temperature"]
    t_tuned = models["instruct"]["rows"]["temperature"]["params"]["temperature"]
    assert 0.7 < t_base < 1.4  # the truth: 1, per subject 1 x exp(N(0, 0.1))
    assert 1.8 < t_tuned < 3.5  # the truth: 2.5, per subject x exp(N(0, 0.3))


def test_one_temperature_fixes_the_tuned_model(models: dict[str, dict]) -> None:
    change = models["instruct"]["nll_change"]["temperature_vs_none"]
    # 60 test questions: the paired interval is wide (the page's 3,000 tell them apart)
    assert change["low"] < change["estimate"] < -0.1 < change["high"] + 0.1
    rows = models["instruct"]["rows"]
    assert rows["temperature"]["ece"] < rows["none"]["ece"]


def test_the_driver_writes_the_table(tmp_path: Path) -> None:
    out = tmp_path / "page"
    args = [sys.executable, str(DRIVER), str(SIMULATED / "base"), str(SIMULATED / "instruct")]
    done = subprocess.run([*args, "--out", str(out)], env=ENV, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    table = (out / "results.md").read_text()
    assert table.splitlines()[0].startswith("| model | questions (tasks) |")
    assert [line.split(" | ")[0] for line in table.splitlines()[2:4]] == ["| base", "| instruct"]
    results = json.loads((out / "results.json").read_text())
    assert results["instruct"]["n_tasks"] == 3
    assert done.stdout.strip().startswith("| model")
