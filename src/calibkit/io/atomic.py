"""Atomic output that never destroys what calibkit did not write.

A file is written to a temporary sibling and renamed over the target; a report folder is
built in a temporary sibling folder and renamed into place, so an interrupted or failed
run never leaves half-written output (the folder of a run killed outright is marked as its,
and removed by the next write beside it: :mod:`calibkit.io.temporaries`).

The output rule: calibkit only ever replaces what it wrote itself. A folder written by
:func:`atomic_directory` holds a manifest (``MANIFEST``) listing every file in it; an
existing folder is replaced only when it is empty or when everything in it is listed in its
manifest (or, for folders written before manifests existed, matches the ``legacy`` names
the caller writes). Anything else (a folder holding other files, the current folder or one
of its parents, an existing file) is refused by :func:`check_replaceable_folder` before
any work starts.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from calibkit.core.errors import InputError
from calibkit.io.temporaries import make_temporary_file, make_temporary_folder, release_temporary

#: The file in every folder :func:`atomic_directory` writes, listing the files it wrote.
MANIFEST = ".calibkit-written.json"
#: Names a folder written before manifests existed may hold (a relative path -> bool).
Legacy = Callable[[str], bool]


def check_parent(path: Path, argument: str = "output") -> Path:
    """The folder ``path`` will be written in; an InputError naming ``argument`` unless it is
    an existing, writable folder."""
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.exists():
        raise InputError(argument, "a path in an existing folder", f"{path} ({parent} is missing)")
    if not parent.is_dir():
        raise InputError(argument, "a path in a folder", f"{path} ({parent} is not a folder)")
    if not os.access(parent, os.W_OK):
        raise InputError(argument, "a path in a writable folder", f"{path} ({parent} is read-only)")
    return parent


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (temporary file + rename)."""
    path = Path(path)
    parent = check_parent(path)
    fd, tmp = make_temporary_file(parent, path.name)  # named by its maker: see temporaries
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


def _files(folder: Path) -> list[str]:
    """Every file and link below ``folder``, as sorted relative POSIX paths."""
    found = [p for p in folder.rglob("*") if p.is_symlink() or not p.is_dir()]
    return sorted(p.relative_to(folder).as_posix() for p in found)


def _written(folder: Path) -> set[str]:
    """The files the manifest of ``folder`` lists (empty if it has none or it is unreadable)."""
    try:
        listed = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    ok = isinstance(listed, list) and all(isinstance(x, str) for x in listed)
    return set(listed) if ok else set()


def check_replaceable_folder(path: Path, argument: str, legacy: Legacy | None = None) -> Path:
    """Refuse, naming ``argument``, an output folder that calibkit may not replace.

    ``path`` may be new, empty, or a folder calibkit wrote (see the module docstring).
    """
    path = Path(path)
    if not existing_output_folder(path, argument):
        return path
    written = _written(path) | {MANIFEST}
    foreign = [f for f in _files(path) if f not in written and not (legacy and legacy(f))]
    refuse_foreign(path, argument, foreign, "a report folder")
    return path


def existing_output_folder(path: Path, argument: str) -> bool:
    """Whether the output folder ``path`` exists; refuses, naming ``argument``, a path whose
    parent is missing, an existing file, and the current folder or one of its parents."""
    check_parent(path, argument)
    if not path.exists():
        return False
    if not path.is_dir():
        raise InputError(argument, "a folder path", f"{path} (an existing file)")
    here = Path.cwd().resolve()
    if path.resolve() == here or path.resolve() in here.parents:
        raise InputError(argument, "a folder other than the current one or its parents", str(path))
    return True


def refuse_foreign(path: Path, argument: str, foreign: list[str], kind: str) -> None:
    """Refuse, naming ``argument``, the folder ``path`` if it holds ``foreign`` files
    (calibkit did not write them); ``kind`` says what folder calibkit would have written."""
    if not foreign:
        return
    shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
    raise InputError(
        argument,
        f"a new or empty folder, or {kind} calibkit wrote",
        f"{path}, which holds files calibkit did not write ({shown})",
    )


@contextlib.contextmanager
def atomic_directory(
    path: Path, *, overwrite: bool = True, legacy: Legacy | None = None
) -> Iterator[Path]:
    """Yield a temporary folder that replaces ``path`` only if the block succeeds.

    An existing ``path`` is replaced only if ``overwrite`` and
    :func:`check_replaceable_folder` allows it (checked before and after the block).
    """
    path = Path(path)
    parent = check_parent(path)
    if path.exists() and not overwrite:
        raise InputError("output", "a folder that does not exist yet", f"{path} exists")
    check_replaceable_folder(path, "output", legacy)
    tmp = make_temporary_folder(parent, path.name)  # marked: a killed run's is removed later
    umask = os.umask(0)
    os.umask(umask)
    tmp.chmod(0o777 & ~umask)  # mkdtemp makes 0700; a report folder gets the usual mode
    try:
        yield tmp
        release_temporary(tmp)
        manifest = json.dumps([f for f in _files(tmp) if f != MANIFEST], indent=1)
        (tmp / MANIFEST).write_text(manifest + "\n", encoding="utf-8")
        _swap_in(tmp, path, parent, legacy)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _swap_in(tmp: Path, path: Path, parent: Path, legacy: Legacy | None) -> None:
    """Move ``tmp`` to ``path``; an existing ``path`` (still replaceable) is removed after."""
    if not path.exists():
        os.replace(tmp, path)
        return
    check_replaceable_folder(path, "output", legacy)  # nothing new appeared in the meantime
    old = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".old", dir=parent))
    os.replace(path, old / path.name)
    os.replace(tmp, path)
    shutil.rmtree(old, ignore_errors=True)
