"""Every numeric argument has a stated range, checked before any work (issue 12, family 3).

Each numeric command-line option and each numeric field of a study's TOML file is given
values out of its range (one past the top, negative, 2**64, a fraction, a bool-like word):
exit 2 with one line naming the option and its range, no traceback, nothing written.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from calibkit.cli import main
from calibkit.core.errors import InputError
from calibkit.core.threads import THREADS
from calibkit.core.validation import (
    BATCH_SIZE,
    EPOCHS,
    N_BINS,
    RESAMPLES,
    SEED,
    TRAINED_EPOCHS,
    Integer,
)
from calibkit.study.definition.config import load_study_config

#: The integer part of ``--cal-size`` and of the data's split sizes.
COUNT = Integer(1, 10**9)


def _tree(folder: Path) -> dict[str, bytes]:
    """Every path under ``folder`` with its content (folders: empty)."""
    return {
        str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else b"")
        for p in sorted(folder.rglob("*"))
    }


def _bad_values(constraint: Integer) -> list[str]:
    assert constraint.high is not None
    return [str(constraint.high + 1), "-1", str(2**64), "1.5", "true"]


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary current folder holding ``preds.npz``."""
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "preds.npz", logits=rng.normal(size=(40, 3)), labels=np.arange(40) % 3)
    return tmp_path


def _refused(work: Path, capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """Run ``argv``: exit 2, one line, no traceback, no stdout, the folder unchanged."""
    before = _tree(work)
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2, err
    assert len(err.splitlines()) == 1, err
    assert err.startswith("calibkit: error: ")
    assert "Traceback" not in err
    assert out == ""
    assert _tree(work) == before
    return err


#: (command line before the value, option named, its declared range)
OPTIONS = [
    (["evaluate", "preds.npz", "--n-bins"], "--n-bins", N_BINS),
    (["evaluate", "preds.npz", "--n-boot"], "--n-boot", RESAMPLES),
    (["evaluate", "preds.npz", "--seed"], "--seed", SEED),
    (["compare", "preds.npz", "--n-bins"], "--n-bins", N_BINS),
    (["compare", "preds.npz", "--n-boot"], "--n-boot", RESAMPLES),
    (["compare", "preds.npz", "--seed"], "--seed", SEED),
    (["compare", "preds.npz", "--cal-size"], "--cal-size", COUNT),
    (["demo", "--out", "d", "--epochs"], "--epochs", TRAINED_EPOCHS),
    (["demo", "--out", "d", "--n-boot"], "--n-boot", RESAMPLES),
    (["demo", "--out", "d", "--seed"], "--seed", SEED),
    (["study", "--out", "s", "--epochs"], "--epochs", EPOCHS),
    (["study", "--out", "s", "--seeds"], "--seeds", SEED),
    (["--threads"], "--threads", THREADS),
]
CASES = [
    pytest.param([*argv, value], option, id=f"{argv[0]} {option} {value}")
    for argv, option, constraint in OPTIONS
    for value in _bad_values(constraint)
]


@pytest.mark.parametrize(("argv", "option"), CASES)
def test_every_numeric_option_is_range_checked(
    work: Path, capsys: pytest.CaptureFixture[str], argv: list[str], option: str
) -> None:
    if argv[0] == "--threads":
        argv = [*argv, "methods"]
    err = _refused(work, capsys, argv)
    assert f"argument {option}: expected " in err


@pytest.mark.parametrize("value", _bad_values(N_BINS))
def test_a_calibrator_parameter_is_range_checked(
    work: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    argv = ["fit", "--method", "histogram", "preds.npz", "--param", f"n_bins={value}"]
    assert "--param n_bins: expected an integer in [1, 100000]" in _refused(work, capsys, argv)


def test_the_ranges_are_stated_in_the_messages(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _refused(work, capsys, ["study", "--seeds", f"0,{2**64}"])
    assert f"--seeds: expected comma-separated integers in [0, {2**32 - 1}], got '0," in err
    err = _refused(work, capsys, ["compare", "preds.npz", "--cal-size", "1e3"])
    assert "an integer in [1, 1000000000] or a finite number in (0, 1)" in err


# ----- the study's TOML file ---------------------------------------------------------------
def _study(tmp_path: Path, table: str, line: str) -> Path:
    """A small digits study with ``line`` put in ``table`` ("" for the top level)."""
    tables = {"": ['name = "n"'], "data": ['dataset = "digits"'], "training": []}
    tables[table].append(line)
    text = "\n".join(tables[""]) + "\n"
    for name in ("data", "training"):
        text += f"[{name}]\n" + "\n".join(tables[name]) + "\n"
    path = tmp_path / "study.toml"
    path.write_text(text + '[[models]]\nname = "mlp"\n', encoding="utf-8")
    return path


#: (table, key, a line with {v} for the value, its declared integer range)
FIELDS = [
    ("", "seeds", "seeds = [{v}]", SEED),
    ("", "n_bins", "n_bins = {v}", N_BINS),
    ("", "n_floor_draws", "n_floor_draws = {v}", RESAMPLES),
    ("data", "data.calibration_size", "calibration_size = {v}", COUNT),
    ("data", "data.train_size", "train_size = {v}", COUNT),
    ("data", "data.split_seed", "split_seed = {v}", SEED),
    ("training", "training.epochs", "epochs = {v}", EPOCHS),
    ("training", "training.batch_size", "batch_size = {v}", BATCH_SIZE),
    ("training", "training.eval_batch_size", "eval_batch_size = {v}", BATCH_SIZE),
    ("training", "training.n_bins", "n_bins = {v}", N_BINS),
    ("training", "training.milestones", "milestones = [{v}]", TRAINED_EPOCHS),
]
TOML_CASES = [
    pytest.param(table, key, line.format(v=value), id=f"{key}={value}")
    for table, key, line, constraint in FIELDS
    for value in _bad_values(constraint)
]


@pytest.mark.parametrize(("table", "key", "line"), TOML_CASES)
def test_every_numeric_config_field_is_range_checked(
    tmp_path: Path, table: str, key: str, line: str
) -> None:
    path = _study(tmp_path, table, line)
    with pytest.raises(InputError, match=rf"^{path}: {key}(\[0\])?: expected "):
        load_study_config(path)


def test_a_refused_config_seed_leaves_nothing(
    tmp_path: Path, work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _study(work, "", f"seeds = [{2**64}]")
    err = _refused(work, capsys, ["study", str(path), "--out", "out"])
    assert f"seeds: expected an integer in [0, {2**32 - 1}], got {2**64}" in err
