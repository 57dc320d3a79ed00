"""Folder locks: one writer at a time; a dead holder's lock is taken over; refusals name it."""

from __future__ import annotations

import json
import multiprocessing
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from calibkit.core.errors import InputError
from calibkit.io.lock import LOCK, FolderLock


def test_lock_is_created_and_removed(tmp_path: Path) -> None:
    with FolderLock(tmp_path, "--out"):
        held = json.loads((tmp_path / LOCK).read_text())
        assert held == {"host": socket.gethostname(), "pid": os.getpid()}
    assert not (tmp_path / LOCK).exists()


def _links(tmp_path: Path) -> dict[str, Path]:
    """The user's file outside the folder, and the lock made a link to it (or dangling)."""
    user = tmp_path / "user.txt"
    user.write_text("")
    (tmp_path / "out").mkdir()
    return {"user": user, "lock": tmp_path / "out" / LOCK}


@pytest.mark.parametrize("target", ["../user.txt", "../missing.txt"])
def test_a_lock_that_is_a_link_is_refused_never_written_through(
    tmp_path: Path, target: str
) -> None:
    paths = _links(tmp_path)
    paths["lock"].symlink_to(target)
    with pytest.raises(InputError, match=rf"^--out: .*{LOCK} \(a symbolic link; calibkit never"):
        FolderLock(tmp_path / "out", "--out").acquire()
    assert paths["user"].read_text() == ""  # nothing written through the link
    assert not (tmp_path / "missing.txt").exists()  # nor created at a dangling link's end
    assert paths["lock"].is_symlink()  # and the link is left as it was


def test_a_lock_with_a_second_name_is_refused(tmp_path: Path) -> None:
    paths = _links(tmp_path)
    os.link(paths["user"], paths["lock"])
    with pytest.raises(InputError, match="a file with two names"):
        FolderLock(tmp_path / "out", "--out").acquire()
    assert paths["user"].read_text() == ""


def _holding(folder: Path) -> subprocess.Popen[str]:
    """Another process holding ``folder``'s lock (once it has printed its line)."""
    code = (
        "import sys, time; from pathlib import Path; from calibkit.io.lock import FolderLock\n"
        f"FolderLock(Path({str(folder)!r}), '--out').acquire(); print('held', flush=True)\n"
        "time.sleep(60)"
    )
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None
    assert holder.stdout.readline() == "held\n"
    return holder


def test_a_live_holder_is_refused_by_name(tmp_path: Path) -> None:
    holder = _holding(tmp_path)
    try:
        with pytest.raises(InputError, match=rf"^--out: .*in use by process {holder.pid} on "):
            FolderLock(tmp_path, "--out").acquire()
        assert json.loads((tmp_path / LOCK).read_text())["pid"] == holder.pid  # untouched
    finally:
        holder.kill()
        holder.wait()
    with FolderLock(tmp_path, "--out"):  # killed: its flock went with it
        assert json.loads((tmp_path / LOCK).read_text())["pid"] == os.getpid()


def test_a_holder_on_this_host_without_the_flock_is_stale(tmp_path: Path) -> None:
    """Issue #45, item 4: a lock naming a live process of this host that holds no ``flock``
    (a holder before 0.1.0 took none) is taken over, not refused: the flock alone says
    whether a holder is alive, so no pid or start time is read."""
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        (tmp_path / LOCK).write_text(json.dumps({"host": socket.gethostname(), "pid": other.pid}))
        with FolderLock(tmp_path, "--out"):
            assert json.loads((tmp_path / LOCK).read_text())["pid"] == os.getpid()
    finally:
        other.kill()
        other.wait()


def test_a_dead_holders_lock_is_taken_over(tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (tmp_path / LOCK).write_text(json.dumps({"host": socket.gethostname(), "pid": dead.pid}))
    with FolderLock(tmp_path, "--out"):
        assert json.loads((tmp_path / LOCK).read_text())["pid"] == os.getpid()


def test_a_lock_from_another_host_is_never_taken_over(tmp_path: Path) -> None:
    (tmp_path / LOCK).write_text(json.dumps({"host": "elsewhere.example", "pid": 1}))
    with pytest.raises(InputError, match=r"process 1 on elsewhere\.example"):
        FolderLock(tmp_path, "--out").acquire()


def test_an_unreadable_lock_is_refused_not_removed(tmp_path: Path) -> None:
    (tmp_path / LOCK).write_text("not json")
    with pytest.raises(InputError, match="unreadable"):
        FolderLock(tmp_path, "--out").acquire()
    assert (tmp_path / LOCK).read_text() == "not json"


def test_release_leaves_someone_elses_lock(tmp_path: Path) -> None:
    lock = FolderLock(tmp_path, "--out")
    (tmp_path / LOCK).write_text(json.dumps({"host": "elsewhere.example", "pid": 1}))
    lock.release()
    assert (tmp_path / LOCK).exists()


def test_a_lock_naming_no_possible_process_on_another_host_is_refused(tmp_path: Path) -> None:
    (tmp_path / LOCK).write_text(json.dumps({"host": "elsewhere.example", "pid": -1}))
    with pytest.raises(InputError, match=r"process -1 on elsewhere\.example"):
        FolderLock(tmp_path, "--out").acquire()


def test_a_lock_held_in_this_process_is_refused_to_a_second_lock(tmp_path: Path) -> None:
    with FolderLock(tmp_path, "--out"):
        with pytest.raises(InputError, match=rf"in use by process {os.getpid()} on "):
            FolderLock(tmp_path, "--out").acquire()
        assert json.loads((tmp_path / LOCK).read_text())["pid"] == os.getpid()


def _race(folders: list[str], barrier: Any, results: Any, index: int) -> None:
    """One racer: for each folder, take its lock at the barrier, keep it until everyone has
    tried, report whether it held it."""
    for i, folder in enumerate(folders):
        barrier.wait()
        lock = FolderLock(Path(folder), "--out")
        try:
            lock.acquire()
            held = True
        except InputError:
            held = False
        barrier.wait()  # everyone has tried while the holder still holds it
        if held:
            lock.release()
        results.put((i, index, held))


def test_racing_processes_for_a_dead_holders_lock_exactly_one_takes_it(tmp_path: Path) -> None:
    """Four real processes race for a killed study's lock, 30 times: one holder each time
    (the three-step takeover let two hold it in 36 of 60 trials)."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    trials, racers = 30, 4
    folders = []
    for i in range(trials):
        folder = tmp_path / f"t{i}"
        folder.mkdir()
        (folder / LOCK).write_text(json.dumps({"host": socket.gethostname(), "pid": dead.pid}))
        folders.append(str(folder))
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(racers), ctx.Queue()
    procs = [ctx.Process(target=_race, args=(folders, barrier, results, k)) for k in range(racers)]
    for p in procs:
        p.start()
    got = [results.get(timeout=120) for _ in range(trials * racers)]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    holders = [sum(held for i, _, held in got if i == t) for t in range(trials)]
    assert holders == [1] * trials
    assert not any((Path(f) / LOCK).exists() for f in folders)
