"""The CLI's output rules, as families: calibkit never replaces an input, an existing file
without ``--force``, or a folder holding anything it did not write; every refusal exits 2
with one line and leaves the folder tree (names and bytes) exactly as it was."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from calibkit.cli import main
from calibkit.io.atomic import MANIFEST


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A current folder with logits (``preds.npz``), a .npy pair and a fitted ``t.json``."""
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    z = rng.normal(size=(200, 3)) * 4
    y = rng.integers(0, 3, 200)
    np.savez(tmp_path / "preds.npz", logits=z, labels=y)
    np.save(tmp_path / "z.npy", z)
    np.save(tmp_path / "y.npy", y)
    assert main(["fit", "--method", "temperature", "preds.npz", "-o", "t.json"]) == 0
    return tmp_path


def tree(root: Path) -> dict[str, bytes | None]:
    return {
        p.relative_to(root).as_posix(): None if p.is_dir() else p.read_bytes()
        for p in sorted(root.rglob("*"))
    }


def refused(capsys: pytest.CaptureFixture[str], root: Path, argv: list[str], option: str) -> str:
    """``argv`` exits 2 with one line naming ``option``; nothing created, changed or deleted."""
    capsys.readouterr()
    before = tree(root)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith(f"calibkit: error: {option}: expected")
    assert "Traceback" not in err
    assert tree(root) == before
    return err


NPY = ["z.npy", "--labels", "y.npy", "--kind", "logits"]


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["evaluate", "preds.npz", "--n-boot", "0", "--plot", "preds.npz"], "--plot"),
        (["evaluate", *NPY, "--n-boot", "0", "--plot", "y.npy"], "--plot"),
        (["evaluate", *NPY, "--n-boot", "0", "--plot", "./z.npy"], "--plot"),
        (["apply", "t.json", "preds.npz", "-o", "preds.npz"], "--out"),
        (["apply", "t.json", "preds.npz", "-o", "t.json"], "--out"),
        (["fit", "--method", "temperature", "preds.npz", "-o", "preds.npz"], "--out"),
        (["fit", "--method", "temperature", *NPY, "-o", "y.npy", "--force"], "--out"),
        (["apply", "t.json", "preds.npz", "-o", "preds.npz", "--force"], "--out"),
    ],
)
def test_an_output_is_never_an_input(
    work: Path, capsys: pytest.CaptureFixture[str], argv: list[str], option: str
) -> None:
    assert "other than the inputs" in refused(capsys, work, argv, option)


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["evaluate", "preds.npz", "--n-boot", "0", "--plot", "old.png"], "--plot"),
        (["apply", "t.json", "preds.npz", "-o", "old.npz"], "--out"),
        (["fit", "--method", "temperature", "preds.npz", "-o", "old.json"], "--out"),
    ],
)
def test_an_existing_file_is_replaced_only_with_force(
    work: Path, capsys: pytest.CaptureFixture[str], argv: list[str], option: str
) -> None:
    target = work / argv[-1]
    target.write_bytes(b"the user's file")
    assert "--force" in refused(capsys, work, argv, option)
    assert main([*argv, "--force"]) == 0
    assert target.read_bytes() != b"the user's file"


def _user_folder(work: Path) -> str:
    (work / "rep").mkdir()
    (work / "rep" / "notes.txt").write_text("mine")
    return "rep"


def _report_with_extra_file(work: Path) -> str:
    assert (
        main(["compare", "preds.npz", "--n-boot", "0", "--methods", "temperature", "--out", "rep"])
        == 0
    )
    (work / "rep" / "notes.txt").write_text("mine")
    return "rep"


@pytest.mark.parametrize(
    "make",
    [_user_folder, _report_with_extra_file, lambda work: ".", lambda work: "t.json"],
    ids=["user folder", "report plus a user file", "current folder", "a file"],
)
def test_compare_never_replaces_a_folder_holding_other_files(
    work: Path, capsys: pytest.CaptureFixture[str], make: object
) -> None:
    out = make(work)  # type: ignore[operator]
    argv = ["compare", "preds.npz", "--n-boot", "0", "--methods", "temperature", "--out", out]
    refused(capsys, work, argv, "--out")


def test_compare_replaces_its_own_report(work: Path) -> None:
    argv = ["compare", "preds.npz", "--n-boot", "0", "--methods", "temperature", "--out", "rep"]
    assert main(argv) == 0
    first = tree(work / "rep")
    assert MANIFEST in first
    assert main([*argv[:-2], "--seed", "1", "--out", "rep"]) == 0
    assert set(tree(work / "rep")) == set(first)


def test_the_two_evaluate_figures_never_share_a_path(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["evaluate", "preds.npz", "--n-boot", "0", "--plot", "f.png", "--smooth-plot", "f.png"]
    assert "other than --plot's" in refused(capsys, work, argv, "--smooth-plot")
