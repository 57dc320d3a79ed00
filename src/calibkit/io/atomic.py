"""Atomic output: files and folders appear whole or not at all.

A file is written to a temporary sibling and renamed over the target; a report folder is
built in a temporary sibling folder and renamed into place, so an interrupted or failed
run never leaves half-written output.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from calibkit.core.errors import InputError


def _check_parent(path: Path) -> Path:
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.exists():
        raise InputError("output", "a path inside an existing folder", f"{path} (no {parent})")
    if not os.access(parent, os.W_OK):
        raise InputError("output", "a writable folder", f"{parent} is not writable")
    return parent


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (temporary file + rename)."""
    path = Path(path)
    parent = _check_parent(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=parent)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; the file gets the usual mode
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    atomic_write_bytes(path, text.encode("utf-8"))


@contextlib.contextmanager
def atomic_directory(path: Path, *, overwrite: bool = True) -> Iterator[Path]:
    """Yield a temporary folder that replaces ``path`` only if the block succeeds."""
    path = Path(path)
    parent = _check_parent(path)
    if path.exists() and not path.is_dir():
        raise InputError("output", "a folder path", f"{path} is an existing file")
    if path.exists() and not overwrite:
        raise InputError("output", "a folder that does not exist yet", f"{path} exists")
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=parent))
    umask = os.umask(0)
    os.umask(umask)
    tmp.chmod(0o777 & ~umask)  # mkdtemp makes 0700; a report folder gets the usual mode
    try:
        yield tmp
        if path.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".old", dir=parent))
            os.replace(path, old / path.name)
            os.replace(tmp, path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
