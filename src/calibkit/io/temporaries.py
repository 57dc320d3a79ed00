"""The temporary folders calibkit builds its output in, and the removal of those a killed
run left behind.

A report folder is built in a temporary sibling, ``.<name>.<random>.tmp``, renamed into
place when complete (:func:`calibkit.io.atomic.atomic_directory`). A run killed by SIGKILL
cannot remove it, so each such folder holds a marker, :data:`MARKER`, naming the host and
process that made it. Before making a new one, calibkit removes the temporary folders beside
it whose maker is dead (:func:`remove_stale_temporaries`): only a real folder (not a link)
whose name has that pattern and whose marker is a real file calibkit wrote, naming this host
and a process that no longer runs. Anything else, a folder of the same pattern without a
marker included, is never touched. A temporary file (:func:`make_temporary_file`, the sibling
a file is written to before it is renamed over its target) cannot hold a marker: its name
carries its maker instead, ``.<name>.<random>-<host>-<pid>.tmp`` (``<host>``: a hash of the
host name), and one of this host whose process is dead is removed the same way.

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as parent:
...     tmp = make_temporary_folder(Path(parent), "report")
...     alive = remove_stale_temporaries(Path(parent))  # its maker (this process) runs
...     sorted(p.name for p in tmp.iterdir()), alive
(['.calibkit-temporary.json'], [])
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import socket
import tempfile
from pathlib import Path

__all__ = [
    "MARKER",
    "make_temporary_file",
    "make_temporary_folder",
    "release_temporary",
    "remove_stale_temporaries",
]

#: The file in a temporary folder naming its maker: ``{"host": ..., "pid": ...}``.
MARKER = ".calibkit-temporary.json"
#: The names of calibkit's temporary folders: ``.<name>.<random>.tmp``.
_PATTERN = re.compile(r"\.(.+)\.[A-Za-z0-9_]+\.tmp")
#: The names of calibkit's temporary files: ``.<name>.<random>-<host>-<pid>.tmp``.
_FILE_PATTERN = re.compile(r"\.(.+)\.[A-Za-z0-9_]+-([0-9a-f]{8})-([1-9][0-9]*)\.tmp")


def _host_tag() -> str:
    """This host in a file name: the first 8 hex digits of the SHA-256 of its name."""
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this host (one we may not signal runs too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # one we may not signal (PermissionError), or not known to be dead: kept
        pass
    return True


def _maker(folder: Path) -> tuple[str, int] | None:
    """The maker a temporary folder's marker names, or None when it has no valid marker."""
    marker = folder / MARKER
    if marker.is_symlink() or not marker.is_file():
        return None
    try:
        found = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(found, dict) or set(found) != {"host", "pid"}:
        return None
    pid, host = found["pid"], found["host"]
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0 or not isinstance(host, str):
        return None
    return host, pid


def remove_stale_temporaries(parent: Path) -> list[Path]:
    """Remove the temporary folders in ``parent`` left by a calibkit run that died (see the
    module docstring); returns those removed.

    Parameters
    ----------
    parent
        The folder an output is written in.

    Returns
    -------
    list of Path
        The stale temporary folders removed.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as parent:
    ...     Path(parent, ".report.abc123.tmp").mkdir()  # no marker: not calibkit's to remove
    ...     remove_stale_temporaries(Path(parent)), [p.name for p in Path(parent).iterdir()]
    ([], ['.report.abc123.tmp'])
    """
    removed: list[Path] = []
    try:
        entries = list(Path(parent).iterdir())
    except OSError:
        return removed
    here, tag = socket.gethostname(), _host_tag()
    for entry in entries:
        named = _FILE_PATTERN.fullmatch(entry.name)
        if named and entry.is_file() and not entry.is_symlink():
            if named[2] == tag and not _alive(int(named[3])):
                with contextlib.suppress(OSError):
                    entry.unlink()
                    removed.append(entry)
            continue
        if not _PATTERN.fullmatch(entry.name) or entry.is_symlink() or not entry.is_dir():
            continue
        maker = _maker(entry)
        if maker is None or maker[0] != here or _alive(maker[1]):
            continue
        shutil.rmtree(entry, ignore_errors=True)
        removed.append(entry)
    return removed


def make_temporary_folder(parent: Path, name: str, *, sweep: bool = True) -> Path:
    """A new temporary folder ``.<name>.<random>.tmp`` in ``parent`` holding the marker of
    this process, after removing (``sweep``) the stale ones a killed run left there.

    Parameters
    ----------
    parent
        Where the folder is made (beside the output it becomes).
    name
        The name of that output.
    sweep
        Remove the stale temporary folders of ``parent`` first.

    Returns
    -------
    Path
        The new folder (mode 0700, as :func:`tempfile.mkdtemp` makes it).

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as parent:
    ...     tmp = make_temporary_folder(Path(parent), "report")
    ...     tmp.name.startswith(".report."), tmp.name.endswith(".tmp")
    (True, True)
    """
    if sweep:
        remove_stale_temporaries(parent)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", suffix=".tmp", dir=parent))
    maker = {"host": socket.gethostname(), "pid": os.getpid()}
    (tmp / MARKER).write_text(json.dumps(maker) + "\n", encoding="utf-8")
    return tmp


def make_temporary_file(parent: Path, name: str) -> tuple[int, str]:
    """A new temporary file ``.<name>.<random>-<host>-<pid>.tmp`` in ``parent``, opened
    (mode 0600, as :func:`tempfile.mkstemp` makes it), after removing the stale temporaries a
    killed run left there.

    Parameters
    ----------
    parent, name
        As in :func:`make_temporary_folder` (the file it becomes, and its name).

    Returns
    -------
    tuple of int and str
        The open descriptor and the path, as :func:`tempfile.mkstemp` returns them.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as parent:
    ...     fd, path = make_temporary_file(Path(parent), "a.npz")
    ...     os.close(fd)
    ...     Path(path).name.endswith(f"-{os.getpid()}.tmp")
    True
    """
    remove_stale_temporaries(parent)
    suffix = f"-{_host_tag()}-{os.getpid()}.tmp"
    return tempfile.mkstemp(prefix=f".{name}.", suffix=suffix, dir=parent)


def release_temporary(folder: Path) -> None:
    """Remove the marker of ``folder`` (made by :func:`make_temporary_folder`) before it is
    put in place as the output.

    Parameters
    ----------
    folder
        A temporary folder of this process.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as parent:
    ...     tmp = make_temporary_folder(Path(parent), "report")
    ...     release_temporary(tmp)
    ...     list(tmp.iterdir())
    []
    """
    with contextlib.suppress(FileNotFoundError):
        (folder / MARKER).unlink()
