"""The ``calibkit`` command line.

Subcommands (one module each in this package): ``evaluate`` (every metric of one prediction
file, plus a reliability diagram), ``compare`` (fit every calibrator on a calibration part,
judge them on a test part, write a report), ``conformal`` and ``labelshift`` (prediction
sets; adaptation to new class priors), ``fit`` and ``apply`` (any kind of fitted object but
Neural Clamping, saved as JSON; ``apply`` reads any such file), ``demo`` (the built-in
example), ``study`` (train, calibrate and report from a TOML config) and ``methods`` (every
registered method, by kind). Prediction file layouts are described in
:mod:`calibkit.io.predictions`.

The global option ``--threads N``, given before the command (``calibkit --threads 1 study``),
sets how many threads torch and the BLAS libraries use; by default, the cores free when
calibkit starts (:func:`~calibkit.core.threads.free_cores`). It is set once the command
line is parsed, before the command runs (so never for ``--help`` and ``--version``).

Any bad input (a :class:`~calibkit.core.errors.CalibkitError`, an unreadable or unwritable
path, a malformed command line) prints one line ``calibkit: error: <message>`` on stderr and
exits with status 2, leaving no output behind (every output is written atomically, after the
work is done). Ctrl-C and SIGTERM unwind the command alike (worker processes stopped,
temporary files removed) and print one line, ``calibkit: error: interrupted`` (status 130)
or ``calibkit: error: terminated`` (status 143). Results go to stdout; progress lines go
to stderr: the library logs, and :func:`~calibkit.cli.progress.show_progress` displays its
records while a command runs.
calibkit's own warnings (:class:`~calibkit.core.errors.CalibkitWarning`, e.g. a temperature
fitted at its bound) are shown among them, each message once, as one line
``calibkit: warning: <message>`` (:func:`warnings_as_lines`).
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import sys
import warnings
from collections.abc import Iterator
from typing import TextIO

from calibkit.cli.parser import PROG, build_parser
from calibkit.cli.progress import show_progress
from calibkit.core.errors import CalibkitError, CalibkitWarning
from calibkit.core.signals import (
    INTERRUPTED_STATUS,
    TERMINATED_STATUS,
    sigterm_as_interrupt,
    terminated,
)
from calibkit.core.threads import using_threads

EXIT_INPUT = 2
__all__ = ["EXIT_INPUT", "PROG", "build_parser", "main"]


def _message(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        where = f": {exc.filename}" if exc.filename else ""
        return f"{exc.strerror}{where}"
    return " ".join(str(exc).split())


@contextlib.contextmanager
def warnings_as_lines() -> Iterator[None]:
    """While the block runs, each distinct :class:`~calibkit.core.errors.CalibkitWarning`
    message is logged once on the ``calibkit`` logger as ``warning: <message>`` (so the
    progress display writes ``calibkit: warning: <message>``); other warnings are shown as
    Python shows them."""
    shown: set[str] = set()
    with warnings.catch_warnings():
        warnings.simplefilter("always", CalibkitWarning)  # repeats are dropped below
        show = warnings.showwarning

        def one_line(
            message: Warning | str,
            category: type[Warning],
            filename: str,
            lineno: int,
            file: TextIO | None = None,
            line: str | None = None,
        ) -> None:
            if not issubclass(category, CalibkitWarning):
                show(message, category, filename, lineno, file, line)
            elif str(message) not in shown:
                shown.add(str(message))
                logging.getLogger("calibkit").warning("warning: %s", message)

        warnings.showwarning = one_line
        yield


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status (0, or 2 for bad input; 130 for Ctrl-C
    and 143 for SIGTERM, each said in one line, the command unwound: its worker processes
    stopped, its temporary files removed)."""
    with sigterm_as_interrupt():
        return _main(argv)


def _main(argv: list[str] | None) -> int:
    try:
        args = build_parser().parse_args(argv)
        command = importlib.import_module(f"calibkit.cli.{args.command}")
        quiet = bool(getattr(args, "quiet", False))
        # threads are set before any work, and never for --help and --version
        with using_threads(args.threads), show_progress(quiet=quiet), warnings_as_lines():
            return int(command.run(args))
    except SystemExit as exc:  # --help and --version
        return exc.code if isinstance(exc.code, int) else 0
    except BrokenPipeError:  # stdout closed early (| head): stop quietly
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (CalibkitError, OSError) as exc:
        print(f"{PROG}: error: {_message(exc)}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        if terminated():  # SIGTERM (sigterm_as_interrupt), maybe re-raised as a Ctrl-C
            print(f"{PROG}: error: terminated", file=sys.stderr)
            return TERMINATED_STATUS
        print(f"{PROG}: error: interrupted", file=sys.stderr)
        return INTERRUPTED_STATUS
