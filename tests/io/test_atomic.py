"""Atomic output that only ever replaces what calibkit wrote (the output rule, as a family).

Every refusal is checked the same way: the folder tree (names and bytes) is snapshotted
before and after, and must not change.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from calibkit.core.errors import InputError
from calibkit.io.atomic import (
    MANIFEST,
    atomic_directory,
    atomic_write_bytes,
    atomic_write_text,
    check_replaceable_folder,
)


def _content(p: Path) -> bytes | None:
    if p.is_symlink():
        return b"link to " + os.readlink(p).encode()
    return None if p.is_dir() else p.read_bytes()


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every path below ``root`` with its bytes (None for folders, the target for links)."""
    return {p.relative_to(root).as_posix(): _content(p) for p in sorted(root.rglob("*"))}


def write_report(folder: Path, files: dict[str, str]) -> None:
    with atomic_directory(folder) as tmp:
        for name, text in files.items():
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp / name).write_text(text)


def test_a_new_folder_gets_its_files_and_a_manifest(tmp_path: Path) -> None:
    write_report(tmp_path / "rep", {"a.txt": "1", "figures/b.png": "2"})
    manifest = json.loads((tmp_path / "rep" / MANIFEST).read_text())
    sha = {k: hashlib.sha256(v).hexdigest() for k, v in {"a.txt": b"1", "b": b"2"}.items()}
    assert manifest == {
        "calibkit_manifest": 2,
        "files": {"a.txt": sha["a.txt"], "figures/b.png": sha["b"]},
    }
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep"]  # no temporary leftovers


def test_a_folder_calibkit_wrote_is_replaced_whole(tmp_path: Path) -> None:
    write_report(tmp_path / "rep", {"a.txt": "1", "old.txt": "x"})
    write_report(tmp_path / "rep", {"a.txt": "2"})
    assert (tmp_path / "rep" / "a.txt").read_text() == "2"
    assert not (tmp_path / "rep" / "old.txt").exists()


def _foreign_file(tmp_path: Path) -> Path:
    write_report(tmp_path / "rep", {"a.txt": "1"})
    (tmp_path / "rep" / "notes.txt").write_text("mine")
    return tmp_path / "rep"


def _plain_folder(tmp_path: Path) -> Path:
    (tmp_path / "rep").mkdir()
    (tmp_path / "rep" / "data.npz").write_bytes(b"user data")
    return tmp_path / "rep"


def _corrupt_manifest(tmp_path: Path) -> Path:
    (tmp_path / "rep").mkdir()
    (tmp_path / "rep" / MANIFEST).write_text("{not json")
    (tmp_path / "rep" / "a.txt").write_text("mine")
    return tmp_path / "rep"


def _appended_notes(tmp_path: Path) -> Path:
    write_report(tmp_path / "rep", {"report.md": "# Report\n"})
    with (tmp_path / "rep" / "report.md").open("a") as f:
        f.write("my notes\n")
    return tmp_path / "rep"


def _manifest_edited_to_list_a_users_file(tmp_path: Path) -> Path:
    write_report(tmp_path / "rep", {"report.md": "# Report\n"})
    (tmp_path / "rep" / "notes.txt").write_text("mine")
    manifest = json.loads((tmp_path / "rep" / MANIFEST).read_text())
    manifest["files"]["notes.txt"] = "0" * 64
    (tmp_path / "rep" / MANIFEST).write_text(json.dumps(manifest))
    return tmp_path / "rep"


def _old_manifest_edited_to_list_a_users_file(tmp_path: Path) -> Path:
    (tmp_path / "rep").mkdir()
    (tmp_path / "rep" / "notes.txt").write_text("mine")
    (tmp_path / "rep" / MANIFEST).write_text(json.dumps(["notes.txt"]))
    return tmp_path / "rep"


def _old_manifest_file_changed_after(tmp_path: Path) -> Path:
    (tmp_path / "rep").mkdir()
    (tmp_path / "rep" / "report.md").write_text("# Report\n")
    (tmp_path / "rep" / MANIFEST).write_text(json.dumps(["report.md"]))
    os.utime(tmp_path / "rep" / "report.md", ns=(2 * 10**18, 2 * 10**18))  # edited later
    return tmp_path / "rep"


def _link_to_a_folder(tmp_path: Path) -> Path:
    write_report(tmp_path / "real", {"a.txt": "1"})
    (tmp_path / "rep").symlink_to("real")
    return tmp_path / "rep"


def _link_loop(tmp_path: Path) -> Path:
    (tmp_path / "rep").symlink_to("rep")
    return tmp_path / "rep"


def _link_inside(tmp_path: Path) -> Path:
    (tmp_path / "user.md").write_text("the user's")
    write_report(tmp_path / "rep", {"report.md": "# Report\n"})
    (tmp_path / "rep" / "report.md").unlink()
    (tmp_path / "rep" / "report.md").symlink_to("../user.md")
    return tmp_path / "rep"


def _existing_file(tmp_path: Path) -> Path:
    (tmp_path / "rep").write_text("a file")
    return tmp_path / "rep"


def _current_folder(tmp_path: Path) -> Path:
    (tmp_path / "x").write_text("x")
    return Path(".")


def _parent_of_current(tmp_path: Path) -> Path:
    (tmp_path / "sub").mkdir()
    os.chdir(tmp_path / "sub")
    return Path("..")


@pytest.mark.parametrize(
    "make",
    [
        _foreign_file,
        _plain_folder,
        _corrupt_manifest,
        _appended_notes,
        _manifest_edited_to_list_a_users_file,
        _old_manifest_edited_to_list_a_users_file,
        _old_manifest_file_changed_after,
        _link_to_a_folder,
        _link_loop,
        _link_inside,
        _existing_file,
        _current_folder,
        _parent_of_current,
    ],
)
def test_refused_outputs_change_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make: object
) -> None:
    monkeypatch.chdir(tmp_path)
    target = make(tmp_path)  # type: ignore[operator]
    before = snapshot(tmp_path)
    with pytest.raises(InputError, match=r"^--out: expected"):
        check_replaceable_folder(target, "--out")
    ran = []

    def write() -> None:
        with atomic_directory(target):
            ran.append(True)

    with pytest.raises(InputError, match=r"^output: expected"):
        write()
    assert ran == []  # refused before any work
    assert snapshot(tmp_path) == before


def test_the_message_names_the_files_calibkit_did_not_write(tmp_path: Path) -> None:
    folder = _foreign_file(tmp_path)
    with pytest.raises(InputError, match=r"holds files calibkit did not write \(notes\.txt\)"):
        check_replaceable_folder(folder, "--out")


def test_the_message_names_a_file_the_user_changed(tmp_path: Path) -> None:
    folder = _appended_notes(tmp_path)
    with pytest.raises(InputError, match=r"whose report\.md changed since calibkit wrote it"):
        check_replaceable_folder(folder, "--out")


@pytest.mark.parametrize(("make", "said"), [(_link_to_a_folder, "real"), (_link_loop, "rep")])
def test_a_link_as_the_folder_is_refused_naming_its_target(
    tmp_path: Path, make: object, said: str
) -> None:
    target = make(tmp_path)  # type: ignore[operator]
    with pytest.raises(InputError, match=rf"not a symbolic link, got .*a symbolic link to {said}"):
        check_replaceable_folder(target, "--out")


def test_an_old_manifest_without_hashes_vouches_for_unchanged_report_files(
    tmp_path: Path,
) -> None:
    (tmp_path / "rep" / "figures").mkdir(parents=True)
    (tmp_path / "rep" / "report.md").write_text("old")
    (tmp_path / "rep" / "figures" / "a.png").write_bytes(b"png")
    (tmp_path / "rep" / MANIFEST).write_text(json.dumps(["report.md", "figures/a.png"]))
    write_report(tmp_path / "rep", {"report.md": "new"})
    assert (tmp_path / "rep" / "report.md").read_text() == "new"
    assert not (tmp_path / "rep" / "figures").exists()


def test_a_file_is_never_written_through_a_link(tmp_path: Path) -> None:
    (tmp_path / "user.txt").write_text("")
    (tmp_path / "out.txt").symlink_to("user.txt")
    (tmp_path / "dangling.txt").symlink_to("missing.txt")
    for name in ("out.txt", "dangling.txt"):
        with pytest.raises(InputError, match="not a symbolic link"):
            atomic_write_bytes(tmp_path / name, b"calibkit's")
    assert (tmp_path / "user.txt").read_text() == ""
    assert (tmp_path / "out.txt").is_symlink()
    assert not (tmp_path / "missing.txt").exists()


def test_legacy_names_may_be_replaced(tmp_path: Path) -> None:
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "old.png").write_bytes(b"png")
    with atomic_directory(tmp_path / "figures", legacy=lambda f: f.endswith(".png")) as tmp:
        (tmp / "new.png").write_bytes(b"png")
    assert sorted(p.name for p in (tmp_path / "figures").iterdir()) == [MANIFEST, "new.png"]


def test_a_failed_block_leaves_the_old_folder_and_no_temporary(tmp_path: Path) -> None:
    write_report(tmp_path / "rep", {"a.txt": "1"})
    before = snapshot(tmp_path)

    def fail() -> None:
        with atomic_directory(tmp_path / "rep") as tmp:
            (tmp / "a.txt").write_text("half")
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        fail()
    assert snapshot(tmp_path) == before


def test_a_foreign_file_appearing_during_the_work_stops_the_swap(tmp_path: Path) -> None:
    write_report(tmp_path / "rep", {"a.txt": "1"})

    def race() -> None:
        with atomic_directory(tmp_path / "rep") as tmp:
            (tmp / "a.txt").write_text("2")
            (tmp_path / "rep" / "late.txt").write_text("the user's")

    with pytest.raises(InputError):
        race()
    assert (tmp_path / "rep" / "late.txt").read_text() == "the user's"
    assert (tmp_path / "rep" / "a.txt").read_text() == "1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep"]


def test_atomic_write_text_replaces_a_file(tmp_path: Path) -> None:
    atomic_write_text(tmp_path / "f.txt", "one")
    atomic_write_text(tmp_path / "f.txt", "two")
    assert (tmp_path / "f.txt").read_text() == "two"
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]
