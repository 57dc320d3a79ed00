"""Folder locks: one writer at a time; a dead holder's lock is taken over; refusals name it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from calibkit.core.errors import InputError
from calibkit.io.lock import LOCK, FolderLock


def test_lock_is_created_and_removed(tmp_path: Path) -> None:
    with FolderLock(tmp_path, "--out"):
        held = json.loads((tmp_path / LOCK).read_text())
        assert held == {"host": socket.gethostname(), "pid": os.getpid()}
    assert not (tmp_path / LOCK).exists()


def test_a_live_holder_is_refused_by_name(tmp_path: Path) -> None:
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        (tmp_path / LOCK).write_text(json.dumps({"host": socket.gethostname(), "pid": holder.pid}))
        with pytest.raises(InputError, match=rf"^--out: .*in use by process {holder.pid} on "):
            FolderLock(tmp_path, "--out").acquire()
        assert json.loads((tmp_path / LOCK).read_text())["pid"] == holder.pid  # untouched
    finally:
        holder.kill()
        holder.wait()


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
