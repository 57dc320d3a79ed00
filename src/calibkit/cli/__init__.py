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
work is done). Results go to stdout; progress lines go to stderr: the library logs, and
:func:`~calibkit.cli.progress.show_progress` displays its records while a command runs.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys

from calibkit.cli.parser import PROG, build_parser
from calibkit.cli.progress import show_progress
from calibkit.core.errors import CalibkitError
from calibkit.core.threads import using_threads

EXIT_INPUT = 2
__all__ = ["EXIT_INPUT", "PROG", "build_parser", "main"]


def _message(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        where = f": {exc.filename}" if exc.filename else ""
        return f"{exc.strerror}{where}"
    return " ".join(str(exc).split())


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status (0, or 2 for bad input)."""
    try:
        args = build_parser().parse_args(argv)
        command = importlib.import_module(f"calibkit.cli.{args.command}")
        quiet = bool(getattr(args, "quiet", False))
        # threads are set before any work, and never for --help and --version
        with using_threads(args.threads), show_progress(quiet=quiet):
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
        print(f"{PROG}: error: interrupted", file=sys.stderr)
        return 130
