"""A lock on an output folder, so two calibkit processes never write one folder at once.

The lock is a file (``LOCK``) created atomically in the folder, holding the host name and
process id of its holder. A second process is refused with a message naming them. A lock
left by a process that died (same host, no such process any more) is taken over; a lock
held from another host is never taken over, since its holder cannot be checked from here.

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as d, FolderLock(Path(d), "--out"):
...     (Path(d) / LOCK).exists()
True
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from pathlib import Path
from types import TracebackType
from typing import Any

from calibkit.core.errors import InputError

#: The lock file's name inside the locked folder.
LOCK = ".calibkit.lock"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, owned by someone else
        return True
    return True


def _holder(path: Path) -> dict[str, Any] | None:
    """The lock's content, or None if it is unreadable (a half-written or foreign file)."""
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    ok = isinstance(found, dict) and isinstance(found.get("pid"), int)
    return found if ok and isinstance(found.get("host"), str) else None


class FolderLock:
    """Hold ``folder``'s lock for the duration of a ``with`` block (see the module docstring).

    ``argument`` names the folder in the refusal (e.g. ``"--out"``).
    """

    def __init__(self, folder: Path, argument: str) -> None:
        self.path = Path(folder) / LOCK
        self.argument = argument
        self.me = {"host": socket.gethostname(), "pid": os.getpid()}

    def _create(self) -> bool:
        try:
            fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(self.me, f)
        return True

    def acquire(self) -> None:
        """Take the lock, or take over a stale one; refuse a live holder by name."""
        if self._create():
            return
        holder = _holder(self.path)
        if holder is None:
            raise InputError(
                self.argument, "a folder with a readable calibkit lock", f"{self.path} (unreadable)"
            )
        same_host = holder["host"] == self.me["host"]
        if same_host and holder["pid"] != self.me["pid"] and not _alive(holder["pid"]):
            self.path.unlink(missing_ok=True)  # stale: its process is gone
            if self._create():
                return
        where = f"process {holder['pid']} on {holder['host']}"
        raise InputError(
            self.argument,
            "a folder no other calibkit process is writing",
            f"{self.path.parent}, in use by {where} (wait for it, or stop it)",
        )

    def release(self) -> None:
        """Remove the lock if this process holds it."""
        if _holder(self.path) == self.me:
            with contextlib.suppress(OSError):
                self.path.unlink()

    def __enter__(self) -> FolderLock:
        self.acquire()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()
