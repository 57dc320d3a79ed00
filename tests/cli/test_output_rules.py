"""The CLI's output rules, as families: calibkit never replaces an input, an existing file
without ``--force``, or a folder holding anything it did not write; every refusal exits 2
with one line and leaves the folder tree (names and bytes) exactly as it was."""

from __future__ import annotations

import hashlib
import json
import os
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


def _content(p: Path) -> bytes | None:
    if p.is_symlink():
        return b"link to " + os.readlink(p).encode()
    if not (p.is_dir() or p.is_file()):  # a FIFO: never opened
        return b"special"
    return None if p.is_dir() else p.read_bytes()


def tree(root: Path) -> dict[str, bytes | None]:
    """Every path below ``root`` with its bytes (None for a folder, the target for a link)."""
    return {p.relative_to(root).as_posix(): _content(p) for p in sorted(root.rglob("*"))}


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


#: Commands writing a report folder (the one writer), as each is run on ``preds.npz``.
REPORTS = {
    "conformal": ["conformal", "preds.npz", "--n-boot", "0"],
    "compare": ["compare", "preds.npz", "--n-boot", "0", "--methods", "temperature"],
    "evaluate": ["evaluate", "preds.npz", "--n-boot", "0"],
    "labelshift": ["labelshift", "--cal", "preds.npz", "--target", "z.npy", "--kind", "logits"],
}


def _no_work(*args: object, **kwargs: object) -> None:
    raise AssertionError("the command read its inputs before checking --out")


@pytest.mark.parametrize("command", ["conformal", "evaluate"])
def test_a_rerun_never_replaces_a_report_file_the_user_changed(
    work: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    argv = [*REPORTS[command], "--out", "rep"]
    assert main(argv) == 0
    with (work / "rep" / "report.md").open("a", encoding="utf-8") as f:
        f.write("\nMy notes on this run.\n")
    monkeypatch.setattr("calibkit.io.predictions.load_predictions", _no_work)
    err = refused(capsys, work, argv, "--out")  # refused before any work, nothing touched
    assert "rep, whose report.md changed since calibkit wrote it" in err


def _listed(manifest: object, name: str, sha: str) -> object:
    """``manifest`` edited to list ``name``: a hashed one with ``sha``, an old list as is."""
    if isinstance(manifest, dict):
        return manifest | {"files": manifest["files"] | {name: sha}}
    return [*manifest, name]  # type: ignore[misc]


@pytest.mark.parametrize(
    "edit",
    [
        lambda m, sha: _listed(m, "notes.txt", "0" * 64),  # a made-up hash
        lambda m, sha: [*m["files"], "notes.txt"],  # the old layout: names only
        lambda m, sha: [*m["files"], "figures/notes.png"],  # a report's name, written after
    ],
    ids=["hashed, wrong hash", "old list", "old list, report name"],
)
def test_a_manifest_edited_to_list_a_users_file_never_gets_it_deleted(
    work: Path, capsys: pytest.CaptureFixture[str], edit: object
) -> None:
    argv = [*REPORTS["compare"], "--out", "rep"]
    assert main(argv) == 0
    manifest = json.loads((work / "rep" / MANIFEST).read_text())
    (work / "rep" / "figures").mkdir(exist_ok=True)
    for name in ("notes.txt", "figures/notes.png"):
        (work / "rep" / name).write_text("mine")
        os.utime(work / "rep" / name, ns=(2 * 10**18, 2 * 10**18))  # written after the manifest
    sha = hashlib.sha256(b"mine").hexdigest()
    (work / "rep" / MANIFEST).write_text(json.dumps(edit(manifest, sha)))  # type: ignore[operator]
    err = refused(capsys, work, argv, "--out")
    assert "notes" in err


@pytest.mark.parametrize("command", list(REPORTS))
@pytest.mark.parametrize("target", ["real", "rep"], ids=["link to a folder", "link loop"])
def test_a_link_as_out_is_refused_before_any_work(
    work: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: str,
    target: str,
) -> None:
    (work / "real").mkdir()
    (work / "real" / "notes.txt").write_text("the user's")
    (work / "rep").symlink_to(target)
    monkeypatch.setattr("calibkit.io.predictions.load_predictions", _no_work)
    err = refused(capsys, work, [*REPORTS[command], "--out", "rep"], "--out")
    assert f"rep (a symbolic link to {target})" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["apply", "t.json", "preds.npz", "-o", "link.npz", "--force"],
        ["fit", "--method", "temperature", "preds.npz", "-o", "link.json", "--force"],
        ["evaluate", "preds.npz", "--n-boot", "0", "--plot", "link.png", "--force"],
    ],
)
@pytest.mark.parametrize("target", ["user.txt", "missing.txt"], ids=["to a file", "dangling"])
def test_an_output_file_that_is_a_link_is_refused_first(
    work: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    target: str,
) -> None:
    (work / "user.txt").write_text("the user's")
    (work / argv[-2]).symlink_to(target)
    monkeypatch.setattr("calibkit.io.predictions.load_predictions", _no_work)
    option = "--plot" if argv[0] == "evaluate" else "--out"
    err = refused(capsys, work, argv, option)
    assert f"{argv[-2]} (a symbolic link to {target})" in err


def _users_own_report_folder(work: Path) -> str:
    """The user's ``report/`` (the README's own spelling of ``--out``), named as calibkit
    names its files: no manifest, so it is the user's (issue #42: it was replaced whole)."""
    (work / "report" / "figures").mkdir(parents=True)
    (work / "report" / "report.md").write_text("# My findings\n")
    (work / "report" / "results.csv").write_text("model,acc\nmine,0.9\n")
    (work / "report" / "figures" / "fig1.png").write_bytes(b"my figure")
    return "report"


def _report_copied_and_annotated(work: Path) -> str:
    """``cp -r rep/* mine/`` leaves the hidden manifest behind; the notes are the user's."""
    assert main([*REPORTS["compare"], "--out", "rep"]) == 0
    for path in sorted((work / "rep").rglob("*")):
        rel = path.relative_to(work / "rep")
        if path.is_dir():
            (work / "mine" / rel).mkdir(parents=True, exist_ok=True)
        elif path.name != MANIFEST:
            (work / "mine" / rel).parent.mkdir(parents=True, exist_ok=True)
            (work / "mine" / rel).write_bytes(path.read_bytes())
    with (work / "mine" / "report.md").open("a", encoding="utf-8") as f:
        f.write("\nMy notes.\n")
    return "mine"


def _users_file_named_like_the_manifest(work: Path) -> str:
    (work / "rep").mkdir()
    (work / "rep" / MANIFEST).write_text('{"my": "notes"}')
    return "rep"


def _deeply_nested_manifest(work: Path) -> str:
    assert main([*REPORTS["compare"], "--out", "rep"]) == 0
    (work / "rep" / MANIFEST).write_text("[" * 200_000 + "]" * 200_000)
    return "rep"


@pytest.mark.parametrize("command", list(REPORTS))
@pytest.mark.parametrize(
    "make",
    [
        _users_own_report_folder,
        _report_copied_and_annotated,
        _users_file_named_like_the_manifest,
        _deeply_nested_manifest,
    ],
)
def test_a_folder_without_calibkit_s_record_is_never_replaced(
    work: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: str,
    make: object,
) -> None:
    out = make(work)  # type: ignore[operator]
    monkeypatch.setattr("calibkit.io.predictions.load_predictions", _no_work)
    err = refused(capsys, work, [*REPORTS[command], "--out", out], "--out")
    assert "calibkit did not write" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["fit", "--method", "temperature", "preds.npz", "-o", "pipe", "--force"],
        ["fit", "--method", "temperature", "preds.npz", "-o", "pipe"],
        ["apply", "t.json", "preds.npz", "-o", "pipe", "--force"],
        ["evaluate", "preds.npz", "--n-boot", "0", "--plot", "pipe", "--force"],
        ["compare", "preds.npz", "--n-boot", "0", "--methods", "temperature", "--out", "pipe"],
    ],
)
def test_a_special_file_is_never_replaced_force_or_not(
    work: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> None:
    """A FIFO (or a device: ``-o /dev/null --force`` as root replaced the system's
    ``/dev/null``) is refused before any work, and the refusal never suggests ``--force``."""
    os.mkfifo(work / "pipe")
    monkeypatch.setattr("calibkit.io.predictions.load_predictions", _no_work)
    option = "--plot" if argv[0] == "evaluate" else "--out"
    err = refused(capsys, work, argv, option)
    assert "pipe (a FIFO)" in err
    assert "--force" not in err
