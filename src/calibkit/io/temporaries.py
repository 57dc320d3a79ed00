"""The temporary folders calibkit builds its output in, and the removal of those a killed
run left behind.

A report folder is built in a temporary sibling, ``.<name>.<random>.tmp``, renamed into
place when complete (:func:`calibkit.io.atomic.atomic_directory`). A run killed by SIGKILL
cannot remove it, so each such folder holds a marker, :data:`MARKER`, naming the host and
process that made it. Before making a new one, calibkit removes the temporary folders beside
it whose maker is dead (:func:`remove_stale_temporaries`): only a real folder (not a link)
whose name has that pattern and whose marker is a real file calibkit wrote, naming this host
and a process that no longer runs. Anything else, a folder of the same pattern without a
marker included, is never touched.

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as parent:
...     tmp = make_temporary_folder(Path(parent), "report")
...     alive = remove_stale_temporaries(Path(parent))  # its maker (this process) runs
...     sorted(p.name for p in tmp.iterdir()), alive
(['.calibkit-temporary.json'], [])
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import tempfile
from pathlib import Path

__all__ = ["MARKER", "make_temporary_folder", "release_temporary", "remove_stale_temporaries"]

#: The file in a temporary folder naming its maker: ``{"host": ..., "pid": ...}``.
MARKER = ".calibkit-temporary.json"
#: The names of calibkit's temporary folders: ``.<name>.<random>.tmp``.
_PATTERN = re.compile(r"\.(.+)\.[A-Za-z0-9_]+\.tmp")


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this host (one we may not signal runs too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return True  # not known to be dead: kept
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
    here = socket.gethostname()
    for entry in entries:
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
