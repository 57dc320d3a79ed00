"""A lock on an output folder, so two calibkit processes never write one folder at once.

The lock is a file (``LOCK``) in the folder, holding the host name and process id of its
holder as JSON, and an ``fcntl.flock`` on that file held by the holder for as long as it
holds the lock. The kernel grants the ``flock`` to one process at a time and drops it when
its holder dies, however it dies, so taking over the lock of a killed study is atomic: of
several processes racing for it, exactly one gets it. A process that gets the ``flock``
then checks the file and, once it holds the lock, checks that the file it locked is still
the one in the folder (a holder removes the file when it releases the lock; a process that
locked the removed file tries again on the new one).

Who holds a lock:

- a process holding the ``flock``, or a process on another host (a ``flock`` cannot be
  trusted across hosts: never taken over): refused, naming its host and pid, and saying
  that if that process is not a calibkit run the lock is stale and may be removed (its
  path);
- a holder on this host that holds no ``flock`` (it died, whatever the file says), or an
  empty file (its creator died before writing it): taken over;
- a file that is not a calibkit lock (not JSON naming a host and a pid): refused, naming
  the file, and left as it is (calibkit never writes over a file it did not write);
- a symbolic link (dangling or not), or anything but a plain file with one name (a hard
  link, a pipe): refused, naming the file; the lock is never written through a link.

A second process is refused at once, never made to wait.

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as d, FolderLock(Path(d), "--out"):
...     (Path(d) / LOCK).exists()
True
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import stat
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from calibkit.core.errors import InputError

#: The lock file's name inside the locked folder.
LOCK = ".calibkit.lock"


def _holder(text: str) -> dict[str, Any] | None:
    """The lock's content (a dict with a str ``host`` and a ``pid``), or None if it is not
    a calibkit lock."""
    try:
        found = json.loads(text)
    except ValueError:
        return None
    ok = isinstance(found, dict) and "pid" in found and isinstance(found.get("host"), str)
    return found if ok else None


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


class FolderLock:
    """Hold ``folder``'s lock for the duration of a ``with`` block (see the module docstring).

    ``argument`` names the folder in the refusal (e.g. ``"--out"``).
    """

    def __init__(self, folder: Path, argument: str) -> None:
        self.path = Path(folder) / LOCK
        self.argument = argument
        self.me: dict[str, Any] = {"host": socket.gethostname(), "pid": os.getpid()}
        self._fd: int | None = None

    def _refuse(self, holder: dict[str, Any] | None, text: str | None) -> InputError:
        if holder is None:
            got = f"{self.path} (unreadable, not a calibkit lock: {text!r:.40})"
            return InputError(self.argument, "a folder with a readable calibkit lock", got)
        where = f"process {holder['pid']} on {holder['host']}"
        stale = (
            f"; if process {holder['pid']} is not a calibkit run, the lock is stale: "
            f"remove {self.path}"
        )
        return InputError(
            self.argument,
            "a folder no other calibkit process is writing",
            f"{self.path.parent}, in use by {where} (wait for it, or stop it{stale})",
        )

    def _open(self) -> int:
        """The lock file, opened (created if missing) without following a link; a link or
        anything but a plain file with one name is refused, never written."""
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
        except OSError:
            if not self.path.is_symlink():
                raise
            raise self._not_a_lock("a symbolic link") from None
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            os.close(fd)
            kind = "not a plain file" if not stat.S_ISREG(info.st_mode) else "a file with two names"
            raise self._not_a_lock(kind)
        return fd

    def _not_a_lock(self, kind: str) -> InputError:
        return InputError(
            self.argument,
            "a folder whose calibkit lock is a plain file",
            f"{self.path} ({kind}; calibkit never writes through it: remove it)",
        )

    def _busy(self) -> InputError:
        """The refusal when another process holds the ``flock`` (its content is read back,
        waiting briefly for a holder that is writing it)."""
        for _ in range(50):
            text = _read(self.path)
            holder = _holder(text or "")
            if holder is not None:
                return self._refuse(holder, text)
            time.sleep(0.01)
        return self._refuse({"pid": "?", "host": "this host"}, text)

    def _try_once(self) -> bool | None:
        """True: taken; None: the locked file was replaced meanwhile (try again)."""
        fd = self._open()
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise self._busy() from None
            try:
                if os.fstat(fd).st_ino != os.lstat(self.path).st_ino:
                    return None  # released (and removed) by its holder since we opened it
            except FileNotFoundError:
                return None
            text = os.pread(fd, 4096, 0).decode("utf-8", errors="replace")
            if text.strip():
                holder = _holder(text)  # this host's holder holds no flock: stale
                if holder is None or holder["host"] != self.me["host"]:
                    raise self._refuse(holder, text)
            data = json.dumps(self.me).encode("utf-8")
            os.ftruncate(fd, 0)
            os.pwrite(fd, data, 0)
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return True

    def acquire(self) -> None:
        """Take the lock, or take over a stale one; refuse a live holder by name."""
        if self._fd is not None:
            raise self._refuse(self.me, None)
        for _ in range(100):
            if self._try_once():
                return
        raise self._busy()

    def release(self) -> None:
        """Remove the lock if this process holds it."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        with contextlib.suppress(OSError):
            if os.fstat(fd).st_ino == os.lstat(self.path).st_ino:
                self.path.unlink()
        os.close(fd)

    def __enter__(self) -> FolderLock:
        self.acquire()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()
