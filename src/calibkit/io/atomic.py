"""Atomic output that never destroys what calibkit did not write.

A file is written to a temporary sibling and renamed over the target; a report folder is
built in a temporary sibling folder and renamed into place, so an interrupted or failed
run never leaves half-written output (the folder of a run killed outright is marked as its,
and removed by the next write beside it: :mod:`calibkit.io.temporaries`).

The output rule: calibkit only ever replaces what it wrote itself, as it wrote it. A folder
written by :func:`atomic_directory` holds a manifest (``MANIFEST``) giving the sha256 of
every file in it; an existing folder is replaced only when it is empty or when every file
in it is listed in its manifest with the content calibkit wrote (a user's notes appended to
``report.md`` change its hash: the folder is refused, naming the file). Without calibkit's
own record, an existing file is never replaced: a folder with no manifest (the user's own
``report/`` holding ``report.md``, or a report copied with ``cp -r rep/* mine/``, which
leaves the hidden manifest behind) is the user's, whatever its files are called, and so is
a file named like the manifest that is not one. Refused before any work starts, by
:func:`check_replaceable_folder`: a folder holding a file calibkit did not write or one
changed since, anything but a regular file or a folder (a FIFO, a device, a socket: never
read, never replaced), a symbolic link anywhere (``--out`` itself, a link loop, or a link
inside: calibkit never writes through, nor replaces, a link), the current folder or one of
its parents, an existing file. A single file (:func:`atomic_write_bytes`) is never written
over anything but a regular file: ``-o /dev/null`` is refused, not replaced; so is a folder.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from calibkit.core.errors import InputError
from calibkit.io.temporaries import make_temporary_file, make_temporary_folder, release_temporary

#: The file in every folder :func:`atomic_directory` writes, listing the files it wrote.
MANIFEST = ".calibkit-written.json"
#: The manifest's layout version (a sha256 per file).
MANIFEST_FORMAT = 2
#: The largest manifest read (a report folder's lists a few dozen files).
_MANIFEST_BYTES = 1 << 20


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


def refuse_link(path: Path, argument: str) -> None:
    """Refuse, naming ``argument``, a ``path`` that is a symbolic link (a link loop too):
    calibkit never writes through a link, nor replaces one with its own file."""
    if Path(path).is_symlink():
        try:
            target = f"a symbolic link to {os.readlink(path)}"
        except OSError:
            target = "a symbolic link"
        raise InputError(argument, "a path that is not a symbolic link", f"{path} ({target})")


def refuse_special(path: Path, argument: str) -> None:
    """Refuse, naming ``argument``, an existing ``path`` that is neither a regular file nor a
    folder (a FIFO, a character or block device such as ``/dev/null``, a socket): calibkit
    never reads one as its own output, nor replaces it with a file."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode):
        return
    raise InputError(argument, "a path that is not a special file", f"{path} ({_special(mode)})")


def _special(mode: int) -> str:
    """What a non-regular file is, in words."""
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    return "a socket" if stat.S_ISSOCK(mode) else "a special file"


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (temporary file + rename); a ``path`` that is a
    symbolic link (:func:`refuse_link`), a special file such as a device or a FIFO
    (:func:`refuse_special`) or a folder is refused, never written through or replaced."""
    path = Path(path)
    if not str(path) or str(path) in (".", ".."):
        raise InputError("output", "a file path", repr(str(path)))
    parent = check_parent(path)
    refuse_link(path, "output")
    refuse_special(path, "output")
    if path.is_dir():
        raise InputError("output", "a file path", f"{path} (an existing folder)")
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


def sha256_file(path: Path) -> str:
    """The sha256 of the file ``path`` (hex), read without following a final link.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     (Path(d) / "a").write_bytes(b"abc")
    ...     sha256_file(Path(d) / "a")[:16]
    3
    'ba7816bf8f01cfea'
    """
    digest = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _manifest(folder: Path) -> dict[str, str] | None:
    """The files the manifest of ``folder`` vouches for, each with its sha256; None if
    ``folder`` holds no manifest calibkit wrote (none, a link, a special file, anything not
    a manifest of this layout: then the file of that name is the user's)."""
    path = folder / MANIFEST
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode) or info.st_size > _MANIFEST_BYTES:
        return None
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # a deeply nested file is not a manifest
        return None
    if not isinstance(found, dict) or found.get("calibkit_manifest") != MANIFEST_FORMAT:
        return None
    files = found.get("files")
    if not isinstance(files, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and re.fullmatch("[0-9a-f]{64}", v)
        for k, v in files.items()
    ):
        return None
    return dict(files)


def _judge(folder: Path) -> tuple[list[str], list[str]]:
    """The files of ``folder`` calibkit did not write, and those it wrote that changed
    since (see the module docstring); links are left to :func:`refuse_links_inside`."""
    listed = _manifest(folder)
    foreign: list[str] = []
    changed: list[str] = []
    for name in _files(folder):
        path = folder / name
        if path.is_symlink():
            continue
        if name == MANIFEST and listed is not None:
            continue
        if listed is None or name not in listed or not stat.S_ISREG(os.lstat(path).st_mode):
            foreign.append(name)  # a FIFO listed in a forged manifest is never opened
        elif sha256_file(path) != listed[name]:
            changed.append(name)
    return foreign, changed


def check_replaceable_folder(path: Path, argument: str) -> Path:
    """Refuse, naming ``argument``, an output folder that calibkit may not replace.

    ``path`` may be new, empty, or a folder calibkit wrote and nobody changed since (see
    the module docstring); a symbolic link is refused, wherever it is.

    Parameters
    ----------
    path : Path
        The output folder.
    argument : str
        The option that named it (``"--out"``), for the message.

    Returns
    -------
    Path
        ``path``, when calibkit may write it.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     (Path(d) / "rep").mkdir()
    ...     (Path(d) / "rep" / "notes.txt").write_text("mine")
    ...     check_replaceable_folder(Path(d) / "rep", "--out")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calibkit.core.errors.InputError: --out: ... calibkit did not write (notes.txt)
    """
    path = Path(path)
    if not existing_output_folder(path, argument):
        return path
    refuse_links_inside(path, argument, _files(path))
    foreign, changed = _judge(path)
    refuse_foreign(path, argument, foreign, "a report folder")
    refuse_changed(path, argument, changed, "a report folder")
    return path


def _first_three(names: list[str]) -> str:
    """``a, b, c and 2 more``: the first three of ``names`` in a refusal."""
    more = f" and {len(names) - 3} more" if len(names) > 3 else ""
    return ", ".join(names[:3]) + more


def refuse_changed(path: Path, argument: str, changed: list[str], kind: str) -> None:
    """Refuse, naming ``argument``, the folder ``path`` if it holds files calibkit wrote
    that someone ``changed`` since (their sha256 is not the one calibkit recorded); ``kind``
    says what folder calibkit would have written."""
    if not changed:
        return
    shown = _first_three(changed)
    raise InputError(
        argument,
        f"a new or empty folder, or {kind} whose files nobody changed since calibkit wrote them",
        f"{path}, whose {shown} changed since calibkit wrote it (keep your changes: move "
        "them elsewhere, or choose another folder)",
    )


def existing_output_folder(path: Path, argument: str) -> bool:
    """Whether the output folder ``path`` exists; refuses, naming ``argument``, a path whose
    parent is missing, a symbolic link (to a folder, or a loop), a special file, an existing
    file, and the current folder or one of its parents."""
    check_parent(path, argument)
    refuse_link(path, argument)
    refuse_special(path, argument)
    if not path.exists():
        return False
    if not path.is_dir():
        raise InputError(argument, "a folder path", f"{path} (an existing file)")
    here = Path.cwd().resolve()
    if path.resolve() == here or path.resolve() in here.parents:
        raise InputError(argument, "a folder other than the current one or its parents", str(path))
    return True


def refuse_links_inside(path: Path, argument: str, names: list[str]) -> None:
    """Refuse, naming ``argument``, the folder ``path`` if any of ``names`` (relative paths
    in it) is a symbolic link: calibkit never writes through a link, nor replaces one."""
    links = [n for n in names if (path / n).is_symlink()]
    if not links:
        return
    shown = _first_three(links)
    raise InputError(
        argument,
        "a folder holding no symbolic links (calibkit never writes through one)",
        f"{path}, which holds {shown}, a symbolic link",
    )


def refuse_foreign(path: Path, argument: str, foreign: list[str], kind: str) -> None:
    """Refuse, naming ``argument``, the folder ``path`` if it holds ``foreign`` files
    (calibkit did not write them); ``kind`` says what folder calibkit would have written."""
    if not foreign:
        return
    shown = _first_three(foreign)
    raise InputError(
        argument,
        f"a new or empty folder, or {kind} calibkit wrote",
        f"{path}, which holds files calibkit did not write ({shown})",
    )


@contextlib.contextmanager
def atomic_directory(path: Path, *, overwrite: bool = True) -> Iterator[Path]:
    """Yield a temporary folder that replaces ``path`` only if the block succeeds.

    An existing ``path`` is replaced only if ``overwrite`` and
    :func:`check_replaceable_folder` allows it (checked before and after the block).
    """
    path = Path(path)
    parent = check_parent(path)
    if path.exists() and not overwrite:
        raise InputError("output", "a folder that does not exist yet", f"{path} exists")
    check_replaceable_folder(path, "output")
    tmp = make_temporary_folder(parent, path.name)  # marked: a killed run's is removed later
    umask = os.umask(0)
    os.umask(umask)
    tmp.chmod(0o777 & ~umask)  # mkdtemp makes 0700; a report folder gets the usual mode
    try:
        yield tmp
        release_temporary(tmp)
        hashes = {f: sha256_file(tmp / f) for f in _files(tmp) if f != MANIFEST}
        manifest = json.dumps({"calibkit_manifest": MANIFEST_FORMAT, "files": hashes}, indent=1)
        (tmp / MANIFEST).write_text(manifest + "\n", encoding="utf-8")
        _swap_in(tmp, path, parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _swap_in(tmp: Path, path: Path, parent: Path) -> None:
    """Move ``tmp`` to ``path``; an existing ``path`` (still replaceable) is removed after."""
    if not path.exists():
        os.replace(tmp, path)
        return
    check_replaceable_folder(path, "output")  # nothing new appeared in the meantime
    old = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".old", dir=parent))
    os.replace(path, old / path.name)
    os.replace(tmp, path)
    shutil.rmtree(old, ignore_errors=True)
