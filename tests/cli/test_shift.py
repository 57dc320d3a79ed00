"""``calibkit shift``: bad input (exit 2, nothing written, the option named), a folder
calibkit did not write, a run on a tiny synthetic dataset and model, and a small real run on
the pretrained ResNet-20 (skipped without ../shared/data)."""

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
        (["--scores", "thr"], "--scores"),
        (["--scores", "rap"], "did you mean 'raps'"),
        (["--methods", "temperatur"], "did you mean 'temperature'"),
        (["--model", "resnet21"], "--model"),
        (["--weights", "/nonexistent/w.th"], "--weights"),
        (["--std", "0,1,1"], "--std"),
        (["--device", "cuda:64"], "--device"),
        (["--cal-size", "0"], "--cal-size"),
        (["--seed", "-1"], "--seed"),
        (["--n-bins", "0"], "--n-bins"),
        (["--split", "nope"], "--weights"),  # the checkpoint is read first: its classes
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
    assert text.startswith("Calibration ")  # the verdict first
    assert "ts+raps" in text
    assert "Clean" in text
    files = {p.name for p in out.iterdir()}
    assert {"report.md", "report.html", "results.csv", "results.json", "config.json"} <= files
    figures = {p.name for p in (out / "figures").iterdir()}
    assert {"shift_calibration.png", "shift_conformal.png"} <= figures
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


@pytest.fixture
def tiny(tmp_path: Path) -> list[str]:
    """The options of a run on a synthetic cifar10-jpeg.zip (16 images a class) and a LeNet-5
    with random weights: seconds on a CPU, no ../shared."""
    import torch

    from calibkit.models import create_model
    from tests.data.synthetic import cifar10_jpeg_zip

    cifar10_jpeg_zip(tmp_path / "data", per_class=16)
    torch.manual_seed(0)
    weights = tmp_path / "lenet.pt"
    torch.save(create_model("lenet5", 10).state_dict(), weights)
    return [
        "shift", "--model", "lenet5", "--weights", str(weights),
        "--data-dir", str(tmp_path / "data"), "--cal-size", "60", "--test-size", "60",
        "--corruptions", "gaussian_noise,contrast", "--severities", "1,3",
        "--methods", "none,temperature", "--n-floor-draws", "5", "--device", "cpu",
    ]  # fmt: skip


def test_a_tiny_run_writes_the_report(
    tiny: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report"
    assert main([*tiny, "--scores", "lac", "--n-bins", "10", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("Calibration ")
    assert "Mean ECE over the corruptions:" in captured.out
    assert "ts+lac" in captured.out
    assert "ts+raps" not in captured.out
    assert f"report: {out / 'report.html'}" in captured.out
    assert "1 of 1" not in captured.err
    assert "Traceback" not in captured.err
    files = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert {"report.md", "report.html", "results.json", "results.csv", "config.json"} <= files
    assert "figures/shift_calibration.png" in files
    data = json.loads((out / "results.json").read_text())
    assert data["command"] == "calibkit shift"
    assert data["options"]["scores"] == "lac"
    assert data["options"]["n_bins"] == 10
    assert data["inputs"]["--weights"]["path"].endswith("lenet.pt")
    config = json.loads((out / "config.json").read_text())
    assert (config["n_calibration"], config["n_test"], config["n_bins"]) == (60, 60, 10)
    assert config["scores"] == ["lac"]
    assert len(data["rows"]) == 3 * 5  # (none, TS, LAC) x (clean + 2 x 2)


def test_scores_none_runs_no_conformal_sets(
    tiny: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*tiny, "--scores", "none", "--format", "json"]) == 0
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert data["verdict"]["headline"].startswith("Calibration ")
    assert {r["method"] for r in data["rows"]} == {"none", "temperature"}


def test_a_missing_split_names_the_option(
    tiny: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*tiny, "--split", "validation"]) == 2
    assert "--split: expected a split among train, test" in capsys.readouterr().err


def test_run_stays_short() -> None:
    import inspect

    from calibkit.cli import shift

    assert len(inspect.getsource(shift.run).splitlines()) <= 40


def test_smoke_runs_the_whole_command_at_a_toy_size(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--smoke``: the whole command on the real data in well under a minute, said to be a
    smoke run in the log, the report's title and config.json."""
    weights = shared_path("pretrained/resnet20-12fca82f.th")
    data = shared_path("cifar10-jpeg.zip").parent
    out = tmp_path / "smoke"
    args = [
        "shift", "--smoke", "--model", "resnet20", "--weights", str(weights),
        "--data-dir", str(data), "--out", str(out),
    ]  # fmt: skip
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "calibkit: smoke run: a toy size" in err
    assert "shift 6/6 fog:5 " in err  # 2 corruptions x 3 severities, each with a time left
    config = json.loads((out / "config.json").read_text())
    assert config["smoke"] is True
    assert (config["n_calibration"], config["n_test"]) == (300, 300)
    md = (out / "report.md").read_text()
    assert md.splitlines()[0].endswith("(smoke)")
    assert "Smoke run (--smoke)" in md
    with (out / "results.csv").open() as f:
        assert len(list(csv.DictReader(f))) == 3 * 7  # (none, TS, LAC) x (clean + 6 sets)
