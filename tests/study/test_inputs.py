"""A study's inputs: never written over, and refused before anything is written when they
cannot be right (a config in its own ``--out``, an init checkpoint replaced under the same
name, a checkpoint of NaN), through the real command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from calibkit.cli import main
from tests.study.conftest import TINY, tree

#: The tiny study cut to one seed and one epoch.
SMALL = TINY.replace("seeds = [0, 1]", "seeds = [0]").replace("epochs = 3", "epochs = 1")
#: One model started from ``start.safetensors`` beside the config.
WITH_INIT = SMALL.split("[[models]]")[0] + (
    '[[models]]\nname = "mlp"\nparams = { hidden = [16] }\ninit = "start.safetensors"\n'
)


def refused(capsys: pytest.CaptureFixture[str], root: Path, argv: list[str]) -> str:
    """``calibkit argv`` exits 2 with one line and no traceback; ``root`` is unchanged."""
    capsys.readouterr()
    before = tree(root)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith("calibkit: error: "), err
    assert "Traceback" not in err
    assert tree(root) == before
    return err


@pytest.fixture(scope="module")
def weights(tmp_path_factory: pytest.TempPathFactory) -> dict[str, torch.Tensor]:
    """The trained weights of the tiny study's ``mlp``: a checkpoint to start from."""
    root = tmp_path_factory.mktemp("weights")
    (root / "small.toml").write_text(SMALL, encoding="utf-8")
    args = ["study", str(root / "small.toml"), "--out", str(root / "out"), "--models", "mlp"]
    assert main([*args, "--quiet"]) == 0
    return load_file(root / "out" / "runs" / "mlp" / "seed-0" / "model.safetensors")


# Item: the config (or another input) is never written over.


def test_a_config_in_its_own_out_folder_is_never_written_over(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The folder holds only ``config.toml``, a name a study writes, but not one it wrote."""
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "config.toml").write_text("# my study, all seeds\n" + TINY, encoding="utf-8")
    argv = ["study", str(proj / "config.toml"), "--out", str(proj), "--seeds", "0"]
    err = refused(capsys, tmp_path, [*argv, "--epochs", "1", "--quiet"])
    assert "--out: expected" in err
    assert "config.toml" in err


@pytest.mark.parametrize("name", ["results.csv", "report.md", "config.toml"])
def test_a_file_calibkit_did_not_write_is_refused_whatever_its_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    (tmp_path / "small.toml").write_text(SMALL, encoding="utf-8")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / name).write_text("mine\n", encoding="utf-8")
    err = refused(
        capsys, tmp_path, ["study", str(tmp_path / "small.toml"), "--out", str(tmp_path / "out")]
    )
    assert f"files calibkit did not write ({name})" in err


def test_the_config_a_study_wrote_is_an_input_once_passed_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``out/config.toml`` was written by calibkit; passed as the config of a study on
    ``out`` it is an input and is not written over (the narrowed study would replace it)."""
    monkeypatch.chdir(tmp_path)
    Path("small.toml").write_text(SMALL.replace("seeds = [0]", "seeds = [0, 1]"), "utf-8")
    assert main(["study", "small.toml", "--out", "out", "--models", "mlp", "--quiet"]) == 0
    err = refused(capsys, tmp_path, ["study", "out/config.toml", "--out", "out", "--seeds", "0"])
    assert "config.toml" in err
    assert "an input" in err


def test_an_init_checkpoint_the_study_wrote_is_an_input_once_passed_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run's weights in ``out`` started from by a study on ``out``: an input, refused."""
    monkeypatch.chdir(tmp_path)
    Path("small.toml").write_text(SMALL, "utf-8")
    assert main(["study", "small.toml", "--out", "out", "--models", "mlp", "--quiet"]) == 0
    init = WITH_INIT.replace("start.safetensors", "out/runs/mlp/seed-0/model.safetensors")
    Path("init.toml").write_text(init.replace("seeds = [0]", "seeds = [1]"), "utf-8")
    err = refused(capsys, tmp_path, ["study", "init.toml", "--out", "out", "--quiet"])
    assert "model.safetensors, an input of this study" in err


def test_a_study_folder_without_its_record_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder with ``runs/`` and results but no record (a copy of a study folder, which
    leaves the hidden record behind) is the user's: refused, never resumed into (issue #42;
    it was taken for an older calibkit's study folder and its report rewritten)."""
    from calibkit.study.store.folder import RECORD

    monkeypatch.chdir(tmp_path)
    Path("small.toml").write_text(SMALL, "utf-8")
    assert main(["study", "small.toml", "--out", "out", "--models", "mlp", "--quiet"]) == 0
    (tmp_path / "out" / RECORD).unlink()
    report = (tmp_path / "out" / "report.md").read_bytes()
    capsys.readouterr()
    assert main(["study", "small.toml", "--out", "out", "--quiet"]) == 2
    assert "calibkit did not write" in capsys.readouterr().err
    assert (tmp_path / "out" / "report.md").read_bytes() == report
    assert not (tmp_path / "out" / RECORD).exists()


# Item: runs from two checkpoints of the same name are never mixed.


def _study_from(weights: dict[str, torch.Tensor], tmp_path: Path) -> list[str]:
    """Run a study starting from ``weights`` (``start.safetensors``); its command line."""
    (tmp_path / "init.toml").write_text(WITH_INIT, encoding="utf-8")
    save_file(weights, tmp_path / "start.safetensors")
    argv = ["study", str(tmp_path / "init.toml"), "--out", str(tmp_path / "out"), "--quiet"]
    assert main(argv) == 0
    return argv


def test_an_init_checkpoint_replaced_under_its_name_is_refused(
    weights: dict[str, torch.Tensor], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = _study_from(weights, tmp_path)
    save_file({k: v * 2 for k, v in weights.items()}, tmp_path / "start.safetensors")
    err = refused(capsys, tmp_path, [*argv, "--seeds", "0,1"])
    assert "start.safetensors holds other tensors" in err
    save_file(dict(reversed(weights.items())), tmp_path / "start.safetensors")
    assert main([*argv, "--seeds", "0,1"]) == 0  # the same tensors written again: resumed


def test_a_run_made_before_the_hash_is_refused(
    weights: dict[str, torch.Tensor], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue #45, item 4: a run whose identity lacks ``init_sha256`` (written before 0.1.0)
    is another run, refused as any run of other settings: no branch fills the hash in."""
    argv = _study_from(weights, tmp_path)
    identity = tmp_path / "out" / "runs" / "mlp" / "seed-0" / "identity.json"
    stored = json.loads(identity.read_text())
    del stored["model"]["init_sha256"]
    identity.write_text(json.dumps(stored))
    err = refused(capsys, tmp_path, argv)
    assert "(use another --out, or delete that run), got different model" in err


# Item: a checkpoint of NaN is refused at load, naming it, before anything is written.


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_a_non_finite_init_checkpoint_is_refused_before_anything_is_written(
    weights: dict[str, torch.Tensor],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    value: float,
) -> None:
    (tmp_path / "init.toml").write_text(WITH_INIT, encoding="utf-8")
    save_file(
        {k: torch.full_like(v, value) for k, v in weights.items()}, tmp_path / "start.safetensors"
    )
    argv = ["study", str(tmp_path / "init.toml"), "--out", str(tmp_path / "out"), "--quiet"]
    err = refused(capsys, tmp_path, argv)
    assert f"{tmp_path / 'start.safetensors'} (" in err
    assert "NaN or inf" in err
    assert not (tmp_path / "out").exists()
