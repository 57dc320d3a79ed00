"""``calibkit study``: the command line, its options and its bad-input behaviour."""

from __future__ import annotations

from pathlib import Path

import pytest

from calibkit.cli import main
from tests.study.conftest import TINY


def test_study_command_runs_part_of_a_study(
    tiny_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    args = ["study", str(tiny_config), "--out", str(out), "--models", "mlp_dropout"]
    assert main([*args, "--seeds", "1", "--epochs", "1", "--quiet"]) == 0
    assert "1 run; report:" in capsys.readouterr().out  # not "1 runs" (issue #46)
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["mlp_dropout"]
    assert [p.name for p in (out / "runs" / "mlp_dropout").iterdir()] == ["seed-1"]
    assert "epochs = 1" in (out / "config.toml").read_text()


def test_report_only_writes_what_is_finished_and_trains_nothing(
    tiny_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    base = ["study", str(tiny_config), "--out", str(out), "--quiet"]
    assert main([*base, "--report-only"]) == 2  # nothing trained yet
    assert "at least one trained run" in capsys.readouterr().err
    assert main([*base, "--models", "mlp", "--seeds", "1"]) == 0
    config = (out / "config.toml").read_text()
    (out / "report.md").unlink()
    assert main([*base, "--report-only"]) == 0
    assert "1 run; report:" in capsys.readouterr().out  # not "1 runs" (issue #46)
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["mlp"]  # nothing trained
    assert [p.name for p in (out / "runs" / "mlp").iterdir()] == ["seed-1"]
    md = (out / "report.md").read_text()
    assert "1 run: 1 model x 1 seed" in md
    assert "## mlp: mean ± std over 1 seed\n" in md
    assert (out / "config.toml").read_text() == config  # the folder's config is kept


def test_report_says_whether_seeds_draw_the_split(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for split_by_seed, words in ((False, "the data split is fixed"), (True, "another data split")):
        cfg = tmp_path / f"c{split_by_seed}.toml"
        text = TINY.replace(
            "calibration_size = 120",
            f"calibration_size = 120\nsplit_by_seed = {str(split_by_seed).lower()}",
        )
        cfg.write_text(text, encoding="utf-8")
        out = tmp_path / f"out{split_by_seed}"
        args = ["study", str(cfg), "--out", str(out), "--models", "mlp", "--seeds", "0"]
        assert main([*args, "--epochs", "1", "--quiet"]) == 0
        assert words in (out / "report.md").read_text()


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("lr = 0.01", "lr = 0.01\nwarmup = 3", "training.warmup: expected a key among epochs"),
        ('name = "mlp"\nparams', 'name = "mlq"\nparams', "models[0].name: expected one of"),
        ('"digits:0,1,2"', '"digits:0,1,bird"', "classes: expected distinct names among 0, 1"),
        ('"digits:0,1,2"', '"digits:0,1,2@fog:6"', "severity: expected an integer in 1..5"),
        ('"digits:0,1,2"', '"digits:0,1,2@fog:\u00b3"', "severity: expected an integer in 1..5"),
        (
            "n_floor_draws = 20",
            'n_floor_draws = 20\ndevice = "cuda:\u00b3"',
            "device: expected auto, cpu",
        ),
        ('"digits:0,1,2"', '"digits:0,1,2@frost:3"', "frost is not available"),
    ],
)
def test_bad_configs_exit_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], old: str, new: str, message: str
) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text(TINY.replace(old, new, 1), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["study", str(cfg), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("calibkit: error:")]
    assert len(errors) == 1
    assert message in errors[0]
    assert "Traceback" not in err
    assert not (out / "results.csv").exists()


def test_unknown_model_option_and_seeds(
    tiny_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = str(tmp_path / "o")
    assert main(["study", str(tiny_config), "--out", out, "--models", "resnet"]) == 2
    assert "--models: expected one of mlp, mlp_dropout, got 'resnet'" in capsys.readouterr().err
    assert main(["study", str(tiny_config), "--out", out, "--seeds", "a"]) == 2
    assert "--seeds: expected comma-separated integers" in capsys.readouterr().err


def test_missing_dataset_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "c.toml"
    text = TINY.replace('"digits:0,1,2"', '"cifar10-jpeg:bird,cat"').replace(
        "calibration_size = 120", 'calibration_size = 120\ndata_dir = "nowhere"'
    )
    cfg.write_text(text, encoding="utf-8")
    assert main(["study", str(cfg), "--out", str(tmp_path / "o"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "nowhere" in err
    assert "Traceback" not in err


def test_output_that_cannot_be_a_folder_exits_2_and_keeps_finished_runs(
    tiny_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main(["study", str(tiny_config), "--out", str(out), "--seeds", "0", "--quiet"]) == 0
    finished = (out / "runs" / "mlp" / "seed-0" / "train.json").read_bytes()
    (out / "runs" / "mlp" / "seed-1").parent.mkdir(exist_ok=True)
    (out / "runs" / "mlp" / "seed-1").write_text("not a folder")
    assert main(["study", str(tiny_config), "--out", str(out), "--quiet"]) == 2
    assert "Traceback" not in capsys.readouterr().err
    assert (out / "runs" / "mlp" / "seed-0" / "train.json").read_bytes() == finished
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert main(["study", str(tiny_config), "--out", str(afile)]) == 2
    assert "--out: expected a folder path" in capsys.readouterr().err


def test_errors_name_the_flags_the_user_typed(
    tiny_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the library says workers / address / out; the command line maps them to its flags
    out = tmp_path / "out"
    for extra, flag in (
        (["--workers", "2"], "--workers: expected the processes executor beside it"),
        (["--address", "127.0.0.1:1"], "--address: expected the ray executor beside it"),
        (["--report-only"], "--out: expected a study folder with at least one trained run"),
    ):
        assert main(["study", str(tiny_config), "--out", str(out), "--quiet", *extra]) == 2
        assert f"calibkit: error: {flag}" in capsys.readouterr().err
        assert not out.exists()


def test_read_only_parent_exits_2(
    tiny_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["study", str(tiny_config), "--out", str(tmp_path / "no" / "such" / "dir")]) == 2
    assert "--out: expected a path in an existing folder" in capsys.readouterr().err


def test_the_embedded_default_study_runs_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["study", "--epochs", "2", "--seeds", "0", "--quiet"]) == 0
    out = tmp_path / "study-digits"
    assert (out / "report.html").exists()
    assert (out / "results.csv").read_text().startswith("model,seed,calibrator,accuracy")
    assert f"report: {Path('study-digits') / 'report.html'}" in capsys.readouterr().out


def test_progress_lines_on_stderr_and_quiet_drops_the_epochs(
    tiny_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["study", str(tiny_config), "--models", "mlp", "--seeds", "0", "--epochs", "2"]
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert lines[0] == "calibkit: [1/1] mlp seed 0"
    assert [line.split(" loss ")[0] for line in lines if " epoch " in line] == [
        "mlp seed 0 epoch 1/2",
        "mlp seed 0 epoch 2/2",
    ]
    assert lines[-1] == "calibkit: writing the report"
    assert "report:" in out
    assert "report:" not in err
    assert main([*args, "--out", str(tmp_path / "b"), "--quiet"]) == 0
    quiet = capsys.readouterr().err.splitlines()
    plain = [line for line in lines if line.startswith("calibkit: ")]
    assert [line.split(" in ")[0] for line in quiet] == [line.split(" in ")[0] for line in plain]


def test_a_study_without_data_dir_reads_calibkit_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No ``data_dir`` in the config nor ``--data-dir``: the file is read from
    ``$CALIBKIT_DATA`` (it was refused as ``data_dir ... got None``)."""
    from tests.data.synthetic import cifar10_jpeg_zip

    monkeypatch.setenv("CALIBKIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("CALIBKIT_DATA", str(tmp_path / "data"))
    cifar10_jpeg_zip(tmp_path / "data", per_class=30)
    config = TINY.replace('"digits:0,1,2"', '"cifar10-jpeg:bird,cat"').replace("= 120", "= 20")
    (tmp_path / "c.toml").write_text(config, encoding="utf-8")
    argv = ["study", str(tmp_path / "c.toml"), "--out", str(tmp_path / "out"), "--quiet"]
    assert main([*argv, "--models", "mlp", "--seeds", "0", "--epochs", "1"]) == 0, (
        capsys.readouterr().err
    )
    assert "1 run; report:" in capsys.readouterr().out  # not "1 runs" (issue #46)
