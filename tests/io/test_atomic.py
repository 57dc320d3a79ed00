"""Atomic output that only ever replaces what calibkit wrote (the output rule, as a family).

Every refusal is checked the same way: the folder tree (names and bytes) is snapshotted
before and after, and must not change.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
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
    if not (p.is_dir() or p.is_file()):  # a FIFO or a device: never opened
        return b"special " + oct(p.lstat().st_mode).encode()
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


def _users_report_folder(tmp_path: Path) -> Path:
    """The user's own ``report/``, named as calibkit names its files (issue #42: once taken
    for an older calibkit's report and replaced)."""
    (tmp_path / "rep" / "figures").mkdir(parents=True)
    (tmp_path / "rep" / "report.md").write_text("# My report\n")
    (tmp_path / "rep" / "results.csv").write_text("a,b\n1,2\n")
    (tmp_path / "rep" / "figures" / "fig1.png").write_bytes(b"my figure")
    return tmp_path / "rep"


def _report_copied_without_its_manifest(tmp_path: Path) -> Path:
    """``cp -r rep/* mine/``: the hidden manifest stays behind; the copy is the user's."""
    write_report(tmp_path / "rep", {"report.md": "# Report\n", "figures/a.png": "png"})
    (tmp_path / "mine" / "figures").mkdir(parents=True)
    for name in ("report.md", "figures/a.png"):
        (tmp_path / "mine" / name).write_bytes((tmp_path / "rep" / name).read_bytes())
    return tmp_path / "mine"


def _old_list_manifest(tmp_path: Path) -> Path:
    """A manifest of names without hashes vouches for nothing."""
    (tmp_path / "rep").mkdir()
    (tmp_path / "rep" / "report.md").write_text("# Report\n")
    (tmp_path / "rep" / MANIFEST).write_text(json.dumps(["report.md"]))
    return tmp_path / "rep"


def _users_file_named_like_the_manifest(tmp_path: Path) -> Path:
    (tmp_path / "rep").mkdir()
    (tmp_path / "rep" / MANIFEST).write_text('{"my": "settings"}')
    return tmp_path / "rep"


def _deeply_nested_manifest(tmp_path: Path) -> Path:
    write_report(tmp_path / "rep", {"report.md": "# Report\n"})
    (tmp_path / "rep" / MANIFEST).write_text("[" * 100_000 + "]" * 100_000)
    return tmp_path / "rep"


def _fifo_inside(tmp_path: Path) -> Path:
    write_report(tmp_path / "rep", {"report.md": "# Report\n"})
    os.mkfifo(tmp_path / "rep" / "pipe")
    return tmp_path / "rep"


def _fifo_listed_in_a_forged_manifest(tmp_path: Path) -> Path:
    """A FIFO the manifest lists is never opened (reading it would hang the run)."""
    write_report(tmp_path / "rep", {"report.md": "# Report\n"})
    (tmp_path / "rep" / "report.md").unlink()
    os.mkfifo(tmp_path / "rep" / "report.md")
    return tmp_path / "rep"


def _fifo_as_the_folder(tmp_path: Path) -> Path:
    os.mkfifo(tmp_path / "rep")
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
        _users_report_folder,
        _report_copied_without_its_manifest,
        _old_list_manifest,
        _users_file_named_like_the_manifest,
        _deeply_nested_manifest,
        _fifo_inside,
        _fifo_listed_in_a_forged_manifest,
        _fifo_as_the_folder,
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


def test_the_users_report_folder_is_refused_naming_its_files(tmp_path: Path) -> None:
    folder = _users_report_folder(tmp_path)
    with pytest.raises(InputError, match=r"did not write \(figures/fig1\.png, report\.md, results"):
        check_replaceable_folder(folder, "--out")


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


def test_a_file_is_never_written_over_a_fifo_or_a_device(tmp_path: Path) -> None:
    """``save(path)`` or ``-o PATH --force`` on a FIFO or a device (``/dev/null`` as root in
    a container) is refused: the rename would put a regular file in its place."""
    os.mkfifo(tmp_path / "pipe")
    specials = [tmp_path / "pipe"]
    try:  # a character device of our own (needs CAP_MKNOD; /dev/null itself is never risked)
        os.mknod(tmp_path / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        specials.append(tmp_path / "null")
    except OSError:
        pass
    for path in specials:
        with pytest.raises(InputError, match=r"^output: expected a path that is not a special"):
            atomic_write_bytes(path, b"calibkit's")
        assert not path.is_file()
        assert not path.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in specials)


def test_an_empty_path_is_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match=r"^output: expected a file path, got '\.'"):
        atomic_write_bytes(Path(""), b"x")
    assert list(tmp_path.iterdir()) == []


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


def test_an_existing_folder_is_refused_in_one_line(tmp_path: Path) -> None:
    """``save(folder)`` or ``save_predictions('x.npz')`` where that is a folder: one
    InputError, not the IsADirectoryError of the rename (issue #42); nothing changes."""
    (tmp_path / "empty").mkdir()
    (tmp_path / "full.npz").mkdir()
    (tmp_path / "full.npz" / "mine.txt").write_text("the user's")
    before = snapshot(tmp_path)
    for name in ("empty", "full.npz"):
        with pytest.raises(InputError, match=r"^output: expected a file path, got .*folder\)$"):
            atomic_write_bytes(tmp_path / name, b"calibkit's")
    assert snapshot(tmp_path) == before
