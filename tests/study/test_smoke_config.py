"""StudyConfig.smoke(): a pure transformation to toy size, marked in every run's identity."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from calibkit.cli import main
from calibkit.study import load_study_config
from calibkit.study.definition.config import SMOKE_BATCH_SIZE, ModelSpec
from calibkit.study.definition.prepare import prepare_data

pytestmark = pytest.mark.usefixtures("one_thread")


def test_smoke_is_a_pure_transformation(tiny_config: Path) -> None:
    cfg = load_study_config(tiny_config)
    smoke = cfg.smoke()
    assert cfg.data.smoke is False  # the original is untouched
    assert smoke.data.smoke is True
    assert smoke.seeds == cfg.seeds[:1]
    assert [m.label for m in smoke.models] == [m.label for m in cfg.models]
    for spec in smoke.models:
        training = smoke.model_training(spec)
        assert (training.epochs, training.batch_size) == (1, SMOKE_BATCH_SIZE)
    assert smoke.n_floor_draws == 10
    assert smoke.smoke() == smoke  # idempotent
    assert smoke.name == "tiny (smoke)"


def test_smoke_keeps_a_few_samples_and_five_of_each_class(tiny_config: Path) -> None:
    data = prepare_data(load_study_config(tiny_config).smoke().data)
    sizes = {k: len(v[1]) for k, v in data.splits.items()}
    assert sizes["train"] == 16
    assert sizes["test"] == 32
    assert data.splits["cal"][1].bincount().min() >= 5


def test_a_real_study_refuses_a_smoke_folder(tiny_config: Path, tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    assert main(["study", str(tiny_config), "--smoke", "--out", out, "--quiet"]) == 0
    identity = json.loads((tmp_path / "out/runs/mlp/seed-0/identity.json").read_text())
    assert identity["data"]["smoke"] is True
    assert main(["study", str(tiny_config), "--out", out, "--quiet"]) == 2


def test_init_rows_need_a_cifar_resnet() -> None:
    from calibkit.core.errors import InputError

    with pytest.raises(InputError, match="init_rows"):
        ModelSpec("resnet101", init="w.safetensors", init_rows=(0, 1))
    assert ModelSpec("resnet101", init="w.safetensors").init == "w.safetensors"


def test_smoke_says_what_it_overrides_and_that_its_verdict_is_no_advice(
    tiny_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue #46, item 3: ``--smoke`` silently became one seed of one epoch and then
    recommended a calibrator; it says what it overrides when it starts, in the report's
    summary, and beside the verdict."""
    out = tmp_path / "out"
    argv = ["study", str(tiny_config), "--seeds", "0,1", "--smoke", "--out", str(out), "--quiet"]
    assert main(argv) == 0
    stdout, err = capsys.readouterr()
    assert "calibkit: --smoke overrides: seeds 0,1 -> 0; mlp: " in err
    assert "-> 1 epoch of batch size 8" in err
    assert "16 training, 16 calibration (at least 5 of each class) and 32 test samples" in err
    assert stdout.startswith("Smoke run, not advice: at toy size the rule picked ")
    verdict = json.loads((out / "results.json").read_text())["verdict"]
    assert verdict["headline"].startswith("Smoke run, not advice: ")
    assert verdict["detail"].startswith("Smoke run (--smoke): the study at toy size")
    report = (out / "report.md").read_text()
    assert "**Smoke run, not advice: " in report
    assert "the first seed only (0), 1 epoch of batches of 8" in report
    assert "are not advice: run it without --smoke for a recommendation" in report
