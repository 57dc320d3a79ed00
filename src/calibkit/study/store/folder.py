"""A study's output folder: what it may hold, and the lock that keeps it to one study.

The output rule of a study: its ``--out`` is a new folder, an empty one, or a study folder,
one holding nothing but files a study wrote there. A study folder keeps a record of what a
study wrote at its top (:data:`RECORD`: ``{"written": [names]}``), written before each of
them: ``config.toml``, ``results.csv``, ``results.json``, ``report.md``, ``report.html``,
``figures`` and ``runs``. Below those, the names a study writes:

- ``figures/*.png`` and the figures' manifest;
- ``runs/<label>/seed-<N>/`` holding a run's files (``identity.json``, ``checkpoint.pt``,
  ``logits.npz``, ``model.safetensors``, ``train.json``, ``calibration.json``,
  ``temperature.json``, ``clamping-<name>.json``);
- the lock (:data:`~calibkit.io.lock.LOCK`), and the temporary files and folders
  (``.<name>.<random>.tmp`` / ``.old``) of a write that a killed study left behind.

A file at the top that the record does not list is not the study's, whatever its name: a
folder holding only the user's ``config.toml`` is refused, never written over. Without a
record, a folder is judged as a new one, whatever it holds: anything but a lock in it is
foreign (a study folder copied with ``cp -r study/* mine/`` leaves its hidden record behind,
and the copy is the user's). A top-level file the record lists must still have the sha256
the record gives it: one without a recorded sha256, or with another, has changed since.

Any foreign file, a symbolic link (``--out`` itself, or anything in it: the lock, a results
file, a run folder; calibkit never writes through one), the current folder and its parents,
and a folder holding one of the study's inputs (its config file, an ``init`` checkpoint, its
data folder) are refused before anything is read or written (:func:`check_study_folder`). A
study holds the folder's lock for its whole length (:func:`locked_study_folder`): a second
study on the same folder is refused, not waited for, with a message naming the holder's host
and process; a lock left by a killed study is taken over.

>>> is_study_file("runs/mlp/seed-0/logits.npz"), is_study_file("notes.txt")
(True, False)
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from calibkit.core.errors import InputError
from calibkit.io.atomic import (
    MANIFEST,
    atomic_write_bytes,
    atomic_write_text,
    check_replaceable_folder,
    existing_output_folder,
    refuse_changed,
    refuse_foreign,
    refuse_links_inside,
    sha256_file,
)
from calibkit.io.lock import LOCK, FolderLock
from calibkit.study.store.run_folder import RUNS, RunFolder

#: The record of what a study wrote at the top of its folder.
RECORD = ".calibkit-study.json"
#: The files and folders at the top of a study folder (besides its record and the runs).
CONFIG = "config.toml"
RESULTS_CSV = "results.csv"
RESULTS_JSON = "results.json"
REPORT_MD = "report.md"
REPORT_HTML = "report.html"
FIGURES = "figures"
#: The files at the top of a study folder.
TOP_FILES = (CONFIG, RESULTS_CSV, RESULTS_JSON, REPORT_MD, REPORT_HTML, LOCK)
_LABEL = r"[A-Za-z0-9_.-]+"
_RUN_FILE = RunFolder.NAME_PATTERN
_FIGURE = re.compile(r"[^/]+\.png|" + re.escape(MANIFEST))


def _file_or_leftover(name: str, pattern: re.Pattern[str]) -> bool:
    """Whether ``name`` matches ``pattern``, or is a temporary file of a write to one."""
    if pattern.fullmatch(name):
        return True
    left = re.fullmatch(r"\.(.+)\.[^./]+\.tmp", name)
    return left is not None and pattern.fullmatch(left.group(1)) is not None


def is_study_file(name: str) -> bool:
    """Whether ``name`` (a relative POSIX path in a study folder) is one a study writes."""
    parts = name.split("/")
    top = re.compile("|".join(re.escape(n) for n in (*TOP_FILES, RECORD)))
    if len(parts) == 1:
        return _file_or_leftover(parts[0], top)
    if re.fullmatch(r"\.figures\.[^/]+\.(tmp|old)", parts[0]):  # a figures folder being swapped
        return True
    if parts[0] == FIGURES and len(parts) == 2:
        return _file_or_leftover(parts[1], _FIGURE)
    run = len(parts) == 4 and parts[0] == RUNS and re.fullmatch(_LABEL, parts[1]) is not None
    return (
        run
        and re.fullmatch(r"seed-\d+", parts[2]) is not None
        and (_file_or_leftover(parts[3], _RUN_FILE))
    )


def _top(name: str) -> str:
    """The top-level entry a study file belongs to (``runs`` for ``runs/a/seed-0/x``,
    ``config.toml`` for a leftover ``.config.toml.k2j.tmp``, ``figures`` for
    ``.figures.x1.old/figures``)."""
    first = name.split("/")[0]
    left = re.fullmatch(r"\.(.+)\.[^./]+\.(tmp|old)", first)
    return left.group(1) if left else first


def _files(folder: Path) -> list[str]:
    """Every file and link below ``folder``, as sorted relative POSIX paths."""
    found = [p for p in folder.rglob("*") if p.is_symlink() or not p.is_dir()]
    return sorted(p.relative_to(folder).as_posix() for p in found)


def _record(out: Path, argument: str) -> set[str] | None:
    """The names the record of ``out`` lists (None: no record); refuses a broken one."""
    path = out / RECORD
    if not path.exists() and not path.is_symlink():
        return None
    try:
        if not path.is_file() or path.is_symlink():  # a FIFO is never opened
            raise TypeError
        found = json.loads(path.read_text(encoding="utf-8"))
        written = found["written"]
        if not isinstance(written, list) or not all(isinstance(x, str) for x in written):
            raise TypeError
    except (OSError, ValueError, TypeError, KeyError, RecursionError):
        got = f"{out}, whose {RECORD} is not a study's record"
        raise InputError(argument, "a new or empty folder, or a study folder", got) from None
    return set(written)


def _written(out: Path, argument: str) -> set[str]:
    """The top-level names of ``out`` a study wrote: its record's (none without one)."""
    record = _record(out, argument)
    return set() if record is None else record


def _foreign(out: Path, written: set[str]) -> list[str]:
    """The files of ``out`` no study wrote there: unlisted, or not regular files (a FIFO or
    a device is never a study's, whatever its name)."""
    always = {LOCK, RECORD}
    return [
        f
        for f in _files(out)
        if not (is_study_file(f) and (_top(f) in written or _top(f) in always))
        or not ((out / f).is_symlink() or (out / f).is_file())
    ]


def _inputs_inside(out: Path, inputs: Iterable[str | os.PathLike[str] | None]) -> list[str]:
    """The inputs that are ``out`` or lie inside it."""
    root = out.resolve()
    inside = []
    for p in inputs:
        if p is None:
            continue
        path = Path(p).resolve()
        if path == root or root in path.parents:
            inside.append(str(p))
    return inside


def check_study_folder(
    out: Path, argument: str = "out", inputs: Iterable[str | os.PathLike[str] | None] = ()
) -> Path:
    """Refuse, naming ``argument``, a study output folder that breaks the rule above, or one
    holding any of ``inputs`` (the study's config file, checkpoints, data folders)."""
    out = Path(out)
    if not existing_output_folder(out, argument):
        return out
    inside = _inputs_inside(out, inputs)
    if inside:
        raise InputError(
            argument,
            "a folder holding none of the study's inputs",
            f"{out}, which holds {', '.join(inside[:3])}, an input of this study",
        )
    refuse_links_inside(out, argument, _files(out))
    refuse_foreign(out, argument, _foreign(out, _written(out, argument)), "a study folder")
    refuse_changed(out, argument, _changed(out), "a study folder")
    if (out / FIGURES).is_dir():  # the figures' own manifest: none changed since written
        check_replaceable_folder(out / FIGURES, argument)
    return out


def _document(out: Path) -> dict[str, Any]:
    """The record of ``out`` as a dict (``{"written": []}`` where it has none yet)."""
    try:
        found = json.loads((out / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {"written": []}
    return found if isinstance(found, dict) else {"written": []}


def _hashes(out: Path) -> dict[str, list[str]]:
    """The sha256 a study recorded for each top-level file it wrote: each name with the
    contents it may hold (two while it is being replaced: the old one and the new one)."""
    found = _document(out).get("sha256")
    if not isinstance(found, dict):
        return {}
    hashes = {}
    for name, value in found.items():
        listed = [value] if isinstance(value, str) else value
        if isinstance(listed, list) and all(isinstance(h, str) for h in listed):
            hashes[str(name)] = listed
    return hashes


def _changed(out: Path) -> list[str]:
    """The top-level files of ``out`` its record lists that someone changed since: a file
    whose sha256 is not one the record gives it, or for which it gives none (a study records
    the sha256 of every top-level file it writes, before writing it)."""
    record = _record(out, "out") or set()
    hashes = _hashes(out)
    return sorted(
        name
        for name in record
        if name in TOP_FILES
        and name != LOCK
        and (out / name).is_file()
        and not (out / name).is_symlink()
        and sha256_file(out / name) not in hashes.get(name, [])
    )


def _set_hashes(out: Path, name: str, hashes: list[str]) -> None:
    doc = _document(out)
    known = doc.get("sha256")
    doc["sha256"] = dict(known) if isinstance(known, dict) else {}
    doc["sha256"][name] = hashes[0] if len(hashes) == 1 else hashes
    atomic_write_text(out / RECORD, json.dumps(doc, indent=1) + "\n")


def write_study_file(out: Path, name: str, data: bytes) -> None:
    """Write the top-level file ``name`` (listed by :func:`record_written`) of the study
    folder ``out`` atomically, keeping its sha256 in the record: a later study replaces it
    only while it is unchanged (a user's notes appended to ``report.md`` are refused, never
    lost).

    Parameters
    ----------
    out : Path
        The study folder (its lock held).
    name : str
        The file's name at the top of ``out`` (``report.md``).
    data : bytes
        Its new content.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     record_written(Path(d), REPORT_MD)
    ...     write_study_file(Path(d), REPORT_MD, b"# Study")
    ...     _changed(Path(d))
    []
    """
    new = hashlib.sha256(data).hexdigest()
    path = out / name
    old = [sha256_file(path)] if path.is_file() and not path.is_symlink() else []
    _set_hashes(out, name, [*old, new])  # a kill during the write leaves either content
    atomic_write_bytes(path, data)
    _set_hashes(out, name, [new])


def record_written(out: Path, *names: str) -> None:
    """Add ``names`` (top-level entries a study is about to write) to ``out``'s record,
    before they are written; refuses a name that exists but is not the study's."""
    out = Path(out)
    written = _written(out, "out")
    for name in names:
        path = out / name
        if (path.exists() or path.is_symlink()) and name not in written:
            got = f"{out}, which holds files calibkit did not write ({name})"
            raise InputError("out", "a study folder calibkit wrote", got)
    if not (out / RECORD).exists() or not set(names) <= written:
        doc = _document(out) | {"written": sorted(written | set(names))}
        atomic_write_text(out / RECORD, json.dumps(doc, indent=1) + "\n")


@contextlib.contextmanager
def locked_study_folder(out: Path, argument: str = "out") -> Iterator[Path]:
    """Create ``out`` if needed and hold its lock during the block (see the module docstring).

    A refused lock leaves no folder behind that this call created.
    """
    out = Path(out)
    created = not out.exists()
    out.mkdir(exist_ok=True)
    lock = FolderLock(out, argument)
    try:
        lock.acquire()
    except InputError:
        if created:
            with contextlib.suppress(OSError):
                out.rmdir()
        raise
    try:
        yield out
    finally:
        lock.release()
