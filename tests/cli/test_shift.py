"""``calibkit shift``: bad input (exit 2, nothing written), a folder calibkit did not write,
and a small real run on the pretrained ResNet-20 (skipped without ../shared/data)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from calibkit.cli import main
from tests.conftest import shared_path

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture
def weights(tmp_path: Path) -> Path:
    path = tmp_path / "w.th"
    path.write_bytes(b"not read: the options are refused first")
    return path


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--alpha", "1.5"], "--alpha"),
        (["--alpha", "0"], "--alpha"),
        (["--severities", "6"], "--severities"),
        (["--severities", "0-3"], "--severities"),
        (["--corruptions", "gaussian_noise,frost"], "gaussian_noise"),  # lists the valid ones
        (["--methods", "temperature,nope"], "--methods"),
        (["--methods", "neural_clamping"], "--methods"),
        (["--conformal", "thr"], "--conformal"),
        (["--model", "resnet21"], "--model"),
        (["--weights", "/nonexistent/w.th"], "--weights"),
        (["--std", "0,1,1"], "--std"),
        (["--device", "cuda:64"], "--device"),
    ],
)
def test_bad_input_exits_2_and_writes_nothing(
    extra: list[str],
    message: str,
    weights: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "report"
    args = ["shift", "--model", "resnet20", "--weights", str(weights), "--data-dir", str(tmp_path)]
    assert main([*args, "--out", str(out), *extra]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.th"]


def test_an_unknown_corruption_is_named_with_the_valid_ones(
    weights: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["shift", "--model", "resnet20", "--weights", str(weights), "--corruptions", "fog,mist"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "'mist'" in err
    assert "elastic_transform" in err
    assert "frost" in err


def test_a_folder_calibkit_did_not_write_is_refused(
    weights: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    args = ["shift", "--model", "resnet20", "--weights", str(weights), "--out", str(out)]
    assert main(args) == 2
    assert "notes.txt" in capsys.readouterr().err
    assert [p.name for p in out.iterdir()] == ["notes.txt"]


def test_a_small_real_run_on_the_pretrained_resnet20(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    weights = shared_path("pretrained/resnet20-12fca82f.th")
    data = shared_path("cifar10-jpeg.zip").parent
    out = tmp_path / "report"
    args = [
        "shift", "--model", "resnet20", "--weights", str(weights), "--data-dir", str(data),
        "--cal-size", "500", "--test-size", "200", "--corruptions", "gaussian_noise,contrast",
        "--severities", "1,5", "--methods", "none,temperature", "--n-floor-draws", "20",
        "--out", str(out),
    ]  # fmt: skip
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "ts+raps" in text
    assert "clean" in text
    files = {p.name for p in out.iterdir()}
    assert {"report.md", "results.csv", "results.json", "config.json"} <= files
    assert {"shift_calibration.png", "shift_conformal.png"} <= files
    with (out / "results.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 4 * 5  # (none, TS, RAPS, LAC) x (clean + 2 corruptions x 2 severities)
    by = {(r["method"], r["corruption"], r["severity"]): r for r in rows}
    clean = float(by["none", "clean", "0"]["accuracy"])
    assert 0.7 < clean < 0.95  # README: ~81-83% on the JPEG test images
    worst = by["none", "gaussian_noise", "5"]
    assert float(worst["accuracy"]) < clean - 0.3
    assert float(worst["ece"]) > float(by["none", "clean", "0"]["ece"])
    assert float(by["temperature", "clean", "0"]["nll"]) < float(by["none", "clean", "0"]["nll"])
    config = json.loads((out / "config.json").read_text())
    assert config["n_calibration"] == 500
    assert config["n_test"] == 200
