"""What the driver scripts of ``experiments/*/`` share: the rules of calibkit's command line.

A driver runs as a file (``python experiments/<paper>/<driver>.py ...``) and keeps the rules
of the ``calibkit`` command (:mod:`calibkit.cli`):

- ``--help`` prints the usage and does nothing else: the arguments are parsed before anything
  is read or written. Without its arguments a driver prints argparse's usage line and exits
  with status 2, unless its docstring says what it runs by default.
- Bad input is one line, ``<prog>: error: <argument>: expected ..., got ...``, on stderr and
  exit status 2: no traceback, nothing created, changed or deleted. A driver checks its output
  folder, then its inputs (:func:`input_file`, :func:`input_folder`, :func:`model_spec`),
  before any work, raising :class:`~calibkit.core.errors.InputError` naming the argument;
  :func:`run_driver` prints the line.
- It never deletes or overwrites a file it did not write. A folder it writes whole is checked
  first with :func:`calibkit.io.atomic.check_replaceable_folder` (naming the argument) and
  written through :func:`calibkit.io.atomic.atomic_directory`: a new or empty folder, or one
  calibkit wrote and nobody changed since (its manifest says so), is written; a folder of
  the user's is refused. A folder it adds to file by file as its work goes, so that a killed
  run resumes, is a :class:`ResultsFolder`: checked the same way, and keeping the same
  manifest file by file.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from calibkit.cli.common import check_input
from calibkit.core.errors import CalibkitError, InputError, UnknownNameError
from calibkit.io.atomic import (
    MANIFEST,
    MANIFEST_FORMAT,
    atomic_write_bytes,
    atomic_write_text,
    check_replaceable_folder,
)

if TYPE_CHECKING:
    from calibkit.study import StudyConfig
    from calibkit.study.definition.config import ModelSpec

#: The exit status of bad input, as ``calibkit``'s.
EXIT_INPUT = 2


def driver_parser(file: str, doc: str | None) -> argparse.ArgumentParser:
    """The argument parser of the driver ``file`` (its ``__file__``): its name as the
    program's, the first line of its docstring ``doc`` as the description."""
    return argparse.ArgumentParser(prog=Path(file).name, description=(doc or "").splitlines()[0])


def run_driver(
    parser: argparse.ArgumentParser,
    work: Callable[[argparse.Namespace], int | None],
    argv: Sequence[str] | None = None,
) -> int:
    """Parse ``argv`` (default: the command line) and do ``work`` with the arguments; its
    exit status (None: 0), or :data:`EXIT_INPUT` after one line ``<prog>: error: ...`` for
    bad input (a :class:`~calibkit.core.errors.CalibkitError`, an unreadable or unwritable
    path). ``--help`` and a malformed command line exit in argparse, before any work.

    >>> parser = argparse.ArgumentParser(prog="demo.py")
    >>> _ = parser.add_argument("n", type=int)
    >>> def work(args):
    ...     raise InputError("N", "an even number", str(args.n))
    >>> import contextlib, io
    >>> with contextlib.redirect_stderr(io.StringIO()) as err:
    ...     status = run_driver(parser, work, ["3"])
    >>> status, err.getvalue()
    (2, 'demo.py: error: N: expected an even number, got 3\\n')
    """
    args = parser.parse_args(argv)
    try:
        return work(args) or 0
    except (CalibkitError, OSError) as exc:
        if isinstance(exc, OSError) and exc.strerror:
            message = exc.strerror + (f": {exc.filename}" if exc.filename else "")
        else:
            message = " ".join(str(exc).split())
        print(f"{parser.prog}: error: {message}", file=sys.stderr)
        return EXIT_INPUT


def input_file(path: str | Path, argument: str) -> Path:
    """``path``, an existing file, or an InputError naming ``argument``."""
    check_input(str(path), argument)
    return Path(path)


def input_folder(path: str | Path, argument: str, holding: Sequence[str] = ()) -> Path:
    """``path``, an existing folder holding the files ``holding`` (relative paths), or an
    InputError naming ``argument``.

    >>> input_folder("/none", "RUNS", ["a.json"])
    Traceback (most recent call last):
    ...
    calibkit.core.errors.InputError: RUNS: expected a folder holding a.json, got /none (not found)
    """
    folder = Path(path)
    expected = "a folder" + (f" holding {', '.join(holding)}" if holding else "")
    if not folder.is_dir():
        why = "not a folder" if folder.exists() else "not found"
        raise InputError(argument, expected, f"{folder} ({why})")
    missing = [name for name in holding if not (folder / name).is_file()]
    if missing:
        raise InputError(argument, expected, f"{folder} (no {', '.join(missing)})")
    return folder


def model_spec(cfg: StudyConfig, label: str, argument: str) -> ModelSpec:
    """The model of the study config ``cfg`` labelled ``label``, or an
    :class:`~calibkit.core.errors.UnknownNameError` naming ``argument``."""
    labels = [m.label for m in cfg.models]
    if label not in labels:
        raise UnknownNameError(argument, label, labels)
    return cfg.models[labels.index(label)]


class ResultsFolder:
    """An output folder a driver adds files to as its work goes, so that a killed run
    resumes where it stopped (``nc_authors.py``'s units, ``nc_figure_fits.py``'s fits).

    It is checked as any output folder, naming ``argument``
    (:func:`~calibkit.io.atomic.check_replaceable_folder`: new, empty, or one calibkit wrote
    and nobody changed since), and keeps the manifest
    :func:`~calibkit.io.atomic.atomic_directory` keeps, file by file: each file's sha256 is
    recorded before the file is written (atomically). A folder of the user's is refused; a
    folder a run left, finished or not, is the driver's to resume in.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     folder = ResultsFolder(Path(d) / "fits", "FITS_OUT")
    ...     folder.write_bytes(folder.path / "mlp" / "seed-0" / "none.npz", b"logits")
    ...     again = ResultsFolder(Path(d) / "fits", "FITS_OUT")  # the driver's: resumed
    ...     _ = (again.path / "notes.txt").write_text("mine")
    ...     ResultsFolder(Path(d) / "fits", "FITS_OUT")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calibkit.core.errors.InputError: FITS_OUT: ... calibkit did not write (notes.txt)
    """

    def __init__(self, path: str | Path, argument: str) -> None:
        self.path = check_replaceable_folder(Path(path), argument)

    def write_bytes(self, path: Path, data: bytes) -> None:
        """Write ``data`` at ``path`` (a path under :attr:`path`), its sha256 in the
        manifest first."""
        name = Path(path).relative_to(self.path).as_posix()
        try:
            found = json.loads((self.path / MANIFEST).read_text(encoding="utf-8"))["files"]
        except (OSError, ValueError, KeyError, TypeError):
            found = {}  # none yet (the folder was checked: no other file was found in it)
        files = {**found, name: hashlib.sha256(data).hexdigest()}
        manifest = {"calibkit_manifest": MANIFEST_FORMAT, "files": dict(sorted(files.items()))}
        self.path.mkdir(exist_ok=True)
        atomic_write_text(self.path / MANIFEST, json.dumps(manifest, indent=1) + "\n")
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(Path(path), data)

    def write_text(self, path: Path, text: str) -> None:
        """Write ``text`` (UTF-8) at ``path``, as :meth:`write_bytes`."""
        self.write_bytes(path, text.encode("utf-8"))
