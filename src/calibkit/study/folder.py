"""A study's output folder: what it may hold, and the lock that keeps it to one study.

The output rule of a study: its ``--out`` is a new folder, an empty one, or a study folder,
one holding nothing but files a study writes:

- ``config.toml``, ``results.csv``, ``results.json``, ``report.md``, ``report.html``;
- ``figures/*.png`` and the figures' manifest;
- ``runs/<label>/seed-<N>/`` holding a run's files (``identity.json``, ``checkpoint.pt``,
  ``logits.npz``, ``model.safetensors``, ``train.json``, ``calibration.json``,
  ``temperature.json``, ``clamping-<name>.json``);
- the lock (:data:`~calibkit.io.lock.LOCK`), and the temporary files and folders
  (``.<name>.<random>.tmp`` / ``.old``) of a write that a killed study left behind.

Any other file, the current folder and its parents are refused before anything is read
or written (:func:`check_study_folder`). A study holds the folder's lock for its whole
length (:func:`locked_study_folder`): a second study on the same folder is refused, not
waited for, with a message naming the holder's host and process; a lock left by a killed
study is taken over.

>>> is_study_file("runs/mlp/seed-0/logits.npz"), is_study_file("notes.txt")
(True, False)
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path

from calibkit.core.errors import InputError
from calibkit.io.atomic import MANIFEST, check_replaceable_folder
from calibkit.io.lock import LOCK, FolderLock
from calibkit.study.artifacts import TEMPERATURE_FILE
from calibkit.study.identity import IDENTITY_FILE

#: The files at the top of a study folder.
TOP_FILES = ("config.toml", "results.csv", "results.json", "report.md", "report.html", LOCK)
#: The files of one run (besides ``clamping-<name>.json``).
RUN_FILES = (
    IDENTITY_FILE,
    "checkpoint.pt",
    "logits.npz",
    "model.safetensors",
    "train.json",
    "calibration.json",
    TEMPERATURE_FILE,
)
_LABEL = r"[A-Za-z0-9_.-]+"
_RUN_FILE = re.compile(r"clamping-[^/]+\.json|" + "|".join(re.escape(n) for n in RUN_FILES))
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
    top = re.compile("|".join(re.escape(n) for n in TOP_FILES))
    if len(parts) == 1:
        return _file_or_leftover(parts[0], top)
    if re.fullmatch(r"\.figures\.[^/]+\.(tmp|old)", parts[0]):  # a figures folder being swapped
        return True
    if parts[0] == "figures" and len(parts) == 2:
        return _file_or_leftover(parts[1], _FIGURE)
    run = len(parts) == 4 and parts[0] == "runs" and re.fullmatch(_LABEL, parts[1]) is not None
    return (
        run
        and re.fullmatch(r"seed-\d+", parts[2]) is not None
        and (_file_or_leftover(parts[3], _RUN_FILE))
    )


def check_study_folder(out: Path, argument: str = "--out") -> Path:
    """Refuse, naming ``argument``, a study output folder that breaks the rule above."""
    return check_replaceable_folder(Path(out), argument, is_study_file)


@contextlib.contextmanager
def locked_study_folder(out: Path, argument: str = "--out") -> Iterator[Path]:
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
