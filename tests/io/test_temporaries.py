"""Temporary folders of a killed run (issue 32): removed by the next write beside them when
calibkit made them (name pattern and marker) and their maker is dead; nothing else is."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from calibkit.io.atomic import atomic_directory
from calibkit.io.temporaries import MARKER, remove_stale_temporaries

SRC = Path(__file__).parents[2] / "src"

#: A process that starts writing ``<parent>/report`` and is killed (SIGKILL) in the middle.
KILLED = """
import os, signal, sys
from pathlib import Path
from calibkit.io.atomic import atomic_directory
with atomic_directory(Path(sys.argv[1]) / "report") as tmp:
    (tmp / "report.md").write_text("half")
    os.kill(os.getpid(), signal.SIGKILL)
"""


def killed_write(parent: Path) -> Path:
    """The temporary folder a writer killed by SIGKILL left in ``parent``."""
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run([sys.executable, "-c", KILLED, str(parent)], env=env, check=False)
    assert done.returncode == -signal.SIGKILL
    (left,) = [p for p in parent.iterdir() if p.name.startswith(".report.")]
    return left


def dead_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _marked(folder: Path, host: str, pid: int) -> Path:
    folder.mkdir()
    (folder / MARKER).write_text(json.dumps({"host": host, "pid": pid}))
    return folder


def decoys(parent: Path) -> list[str]:
    """Entries like calibkit's temporaries that are not stale ones: all must stay."""
    here = socket.gethostname()
    (parent / ".a.abcdef12.tmp").mkdir()  # no marker: perhaps the user's
    (parent / ".a.abcdef12.tmp" / "x.txt").write_text("mine")
    _marked(parent / ".b.abcdef12.tmp", here, os.getpid())  # its maker runs
    _marked(parent / ".c.abcdef12.tmp", "another-host.example", dead_pid())  # another host
    _marked(parent / "d.abcdef12.tmp", here, dead_pid())  # not the pattern (no dot first)
    _marked(parent / ".e.abcdef12.old", here, dead_pid())  # not a .tmp
    (parent / ".f.abcdef12.tmp").write_text("a file")
    target = _marked(parent / "elsewhere", here, dead_pid())
    (parent / ".g.abcdef12.tmp").symlink_to(target, target_is_directory=True)  # a link
    bad = parent / ".h.abcdef12.tmp"
    bad.mkdir()
    (bad / MARKER).symlink_to(target / MARKER)  # a marker that is a link
    _marked(parent / ".i.abcdef12.tmp", here, 0)  # not a pid
    return sorted(p.relative_to(parent).as_posix() for p in parent.rglob("*"))


def test_a_killed_writer_s_folder_is_removed_by_the_next_write(tmp_path: Path) -> None:
    kept = decoys(tmp_path)
    left = killed_write(tmp_path)
    assert (left / "report.md").read_text() == "half"
    assert (left / MARKER).is_file()
    with atomic_directory(tmp_path / "other") as tmp:
        (tmp / "a.txt").write_text("new")
    assert not left.exists()
    after = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))
    assert [p for p in after if not p.startswith("other")] == kept
    assert sorted(p.name for p in (tmp_path / "other").iterdir()) == [
        ".calibkit-written.json",
        "a.txt",
    ]  # the marker is not part of the output


def test_only_dead_makers_on_this_host_are_stale(tmp_path: Path) -> None:
    kept = decoys(tmp_path)
    stale = _marked(tmp_path / ".report.zz9_x.tmp", socket.gethostname(), dead_pid())
    assert remove_stale_temporaries(tmp_path) == [stale]
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == kept


def test_a_missing_parent_is_nothing_to_remove(tmp_path: Path) -> None:
    assert remove_stale_temporaries(tmp_path / "nowhere") == []


@pytest.mark.usefixtures("one_thread")
def test_the_next_shift_removes_a_killed_shift_s_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Through the command: a report folder left half-written by a SIGKILL is gone after
    the next ``calibkit shift`` writes its report beside it; the user's look-alikes stay."""
    import torch

    from calibkit.cli import main
    from calibkit.models import create_model
    from tests.data.synthetic import cifar10_jpeg_zip

    monkeypatch.setenv("CALIBKIT_CACHE", str(tmp_path / "cache"))
    cifar10_jpeg_zip(tmp_path / "data", per_class=12)
    torch.manual_seed(0)
    torch.save(create_model("lenet5", 10).state_dict(), tmp_path / "w.pt")
    out = tmp_path / "reports"
    out.mkdir()
    kept = decoys(out)
    left = killed_write(out)
    args = [
        "shift", "--model", "lenet5", "--weights", str(tmp_path / "w.pt"),
        "--data-dir", str(tmp_path / "data"), "--cal-size", "40", "--test-size", "40",
        "--corruptions", "contrast", "--severities", "1", "--methods", "none",
        "--scores", "none", "--n-floor-draws", "0", "--device", "cpu",
        "--out", str(out / "report"),
    ]  # fmt: skip
    assert main(args) == 0
    assert "Traceback" not in capsys.readouterr().err
    assert not left.exists()
    after = sorted(p.relative_to(out).as_posix() for p in out.rglob("*"))
    assert [p for p in after if not p.startswith("report")] == kept
    assert (out / "report" / "report.md").is_file()


#: A process that starts writing ``<parent>/data.npz`` and is killed in the middle.
KILLED_FILE = """
import os, signal, sys
from pathlib import Path
from calibkit.io.temporaries import make_temporary_file
fd, path = make_temporary_file(Path(sys.argv[1]), "data.npz")
os.write(fd, b"half")
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_killed_writer_s_file_is_removed_by_the_next_write(tmp_path: Path) -> None:
    """The temporary file of an atomic write (the decoded dataset's cache, say) killed
    before its rename: removed by the next atomic write beside it; look-alikes stay."""
    from calibkit.io.atomic import atomic_write_bytes
    from calibkit.io.temporaries import _host_tag

    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run([sys.executable, "-c", KILLED_FILE, str(tmp_path)], env=env, check=False)
    assert done.returncode == -signal.SIGKILL
    (left,) = tmp_path.iterdir()
    assert left.read_bytes() == b"half"
    tag, dead = _host_tag(), dead_pid()
    keep = [
        f".a.npz.abcd1234-{tag}-{os.getpid()}.tmp",  # its maker runs
        f".a.npz.abcd1234-{'0' * 8 if tag != '0' * 8 else '1' * 8}-{dead}.tmp",  # elsewhere
        ".a.npz.abcd1234.tmp",  # no maker named: not known to be calibkit's
        f"a.npz.abcd1234-{tag}-{dead}.tmp",  # not the pattern
    ]
    for name in keep:
        (tmp_path / name).write_text("mine")
    (tmp_path / f".l.npz.abcd1234-{tag}-{dead}.tmp").symlink_to(tmp_path / keep[0])
    keep.append(f".l.npz.abcd1234-{tag}-{dead}.tmp")  # a link is not removed
    atomic_write_bytes(tmp_path / "other.npz", b"new")
    assert not left.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*keep, "other.npz"])
