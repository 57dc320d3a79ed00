"""What every command writes without ``--out`` (issue #46, item 2): one rule,
:data:`calibkit.cli.glossary.OUTPUT_RULE`, for every command, run through the real CLI.

Without ``--out`` (``-o``) a command prints its result and writes nothing; ``study``, whose
result is its runs on disk, is the one exception (:data:`~calibkit.cli.glossary.DEFAULT_OUT`),
writing exactly the folder its ``--help`` names. A new command fails
``test_every_command_is_run_here`` until it is run here."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pytest

from calibkit.cli import main
from calibkit.cli.glossary import DEFAULT_OUT, OUTPUT_RULE
from calibkit.cli.parser import COMMANDS, build_parser
from tests.cli.test_shift import _lenet

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.usefixtures("one_thread")


def _listing(folder: Path) -> dict[str, bytes | None]:
    return {
        p.relative_to(folder).as_posix(): None if p.is_dir() else p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if "cache" not in p.relative_to(folder).parts
    }


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Prediction files, a fitted calibrator, and shift's model and images (module-wide)."""
    from tests.data.synthetic import cifar10_jpeg_zip

    folder = tmp_path_factory.mktemp("inputs")
    rng = np.random.default_rng(0)
    z = rng.normal(size=(400, 3)) * 4
    y = np.array([np.argmax(r + rng.gumbel(size=3) * 3) for r in z])
    np.savez(folder / "preds.npz", logits=z, labels=y)
    np.savez(folder / "target.npz", logits=z[:200])
    assert main(["fit", "--method", "temperature", str(folder / "preds.npz"), "-o",
                 str(folder / "t.json")]) == 0  # fmt: skip
    cifar10_jpeg_zip(folder / "data", per_class=16)
    _lenet(folder / "lenet.pt", 10)
    return folder


def _argv(command: str, inputs: Path) -> list[str]:
    """``command`` run on ``inputs``, small, without ``--out``."""
    preds, boot = str(inputs / "preds.npz"), ["--n-boot", "0"]
    return {
        "evaluate": ["evaluate", preds, *boot],
        "compare": ["compare", preds, "--methods", "temperature", *boot],
        "conformal": ["conformal", preds, "--scores", "lac", *boot],
        "labelshift": ["labelshift", "--cal", preds, "--target", str(inputs / "target.npz"),
                       *boot],
        "shift": [
            "shift", "--model", "lenet5", "--weights", str(inputs / "lenet.pt"),
            "--data-dir", str(inputs / "data"), "--cal-size", "60", "--test-size", "60",
            "--corruptions", "gaussian_noise", "--severities", "1", "--methods", "none",
            "--n-floor-draws", "0", "--device", "cpu",
        ],
        "demo": ["demo", "--epochs", "2", "--methods", "temperature", *boot],
        "study": ["study", "--smoke", "--models", "mlp", "--seeds", "0", "--quiet"],
        "fit": ["fit", "--method", "temperature", preds],
        "apply": ["apply", str(inputs / "t.json"), preds],
        "methods": ["methods"],
    }[command]  # fmt: skip


def test_every_command_is_run_here(inputs: Path) -> None:
    for command in COMMANDS:
        assert _argv(command, inputs)[0] == command


@pytest.mark.parametrize("command", COMMANDS)
def test_without_out_a_command_prints_and_writes_nothing_but_its_stated_default(
    command: str,
    inputs: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CALIBKIT_CACHE", str(inputs / "cache"))
    monkeypatch.delenv("CALIBKIT_DATA", raising=False)
    before = _listing(inputs)
    assert main(_argv(command, inputs)) == 0, capsys.readouterr().err
    assert capsys.readouterr().out.strip()  # the result is printed
    assert _listing(inputs) == before  # never beside the inputs
    written = sorted(p.name for p in tmp_path.iterdir())
    if command in DEFAULT_OUT:
        assert written == [DEFAULT_OUT[command].replace("<config name>", "digits")]
    else:
        assert written == []


def _out_actions() -> dict[str, argparse.Action]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {
        name: action
        for name, p in sub.choices.items()
        for action in p._actions
        if "--out" in action.option_strings
    }


def test_every_out_states_the_rule_in_its_help() -> None:
    actions = _out_actions()
    assert set(actions) == set(COMMANDS) - {"methods"}
    for command, action in actions.items():
        assert action.default is None, command  # a default is the command's, at run time
        assert action.help is not None
        if command in DEFAULT_OUT:
            assert f"default {DEFAULT_OUT[command]}" in action.help
        else:
            assert "without it, nothing is written: the result is printed" in action.help


def test_docs_cli_md_states_the_rule() -> None:
    assert OUTPUT_RULE in (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")


def test_apply_without_o_beside_a_calibrated_npz_writes_nothing(
    inputs: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The issue's case: ``apply`` without ``-o`` once failed on a ``calibrated.npz`` it was
    never told about, naming ``--out``, an option never typed."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "calibrated.npz").write_bytes(b"mine")
    assert main(["apply", str(inputs / "t.json"), str(inputs / "preds.npz")]) == 0
    out = capsys.readouterr().out
    assert out.rstrip().endswith("calibrated predictions: not written (no -o/--out: printed only)")
    assert (tmp_path / "calibrated.npz").read_bytes() == b"mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["calibrated.npz"]


def test_apply_o_names_out_when_the_file_exists(
    inputs: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.npz").write_bytes(b"mine")
    argv = ["apply", str(inputs / "t.json"), str(inputs / "preds.npz"), "-o", "c.npz"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("calibkit: error: --out: expected a new file (or --force"), err
    assert (tmp_path / "c.npz").read_bytes() == b"mine"
