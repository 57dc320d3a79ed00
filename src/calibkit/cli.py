"""The ``calibkit`` command line.

Subcommands: ``evaluate`` (every metric of one prediction file, plus a reliability
diagram), ``compare`` (fit every calibrator on a calibration part, judge them on a test
part, write a report), ``fit`` and ``apply`` (one calibrator, saved as JSON), ``demo``
(the built-in example), ``methods`` (the registered calibrators). Prediction file layouts
are described in :mod:`calibkit.predfile`.

Any bad input (a :class:`~calibkit.errors.CalibkitError`, an unreadable or unwritable path,
a malformed command line) prints one line ``calibkit: error: <message>`` on stderr and
exits with status 2, leaving no output behind (every output is written atomically, after
the work is done). Results go to stdout; progress lines go to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
from collections.abc import Callable
from typing import Any, NoReturn

from calibkit import __version__
from calibkit.commands import (
    cmd_apply,
    cmd_compare,
    cmd_demo,
    cmd_evaluate,
    cmd_fit,
    cmd_methods,
    cmd_study,
)
from calibkit.errors import CalibkitError

PROG = "calibkit"
EXIT_INPUT = 2


class UsageError(CalibkitError):
    """The command line itself is malformed (reported like any other input error)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


# ----- argument types ----------------------------------------------------------------------
def _int_at_least(low: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        if not re.fullmatch(r"[+-]?\d+", text.strip()) or int(text) < low:
            raise argparse.ArgumentTypeError(f"expected an integer >= {low}, got {text!r}")
        return int(text)

    return parse


def _split_size(text: str) -> int | float:
    """``--split``: a count of calibration samples (``5000``) or a fraction (``0.5``)."""
    if re.fullmatch(r"\d+", text.strip()) and int(text) >= 1:
        return int(text)
    if re.fullmatch(r"0?\.\d+", text.strip()) and 0.0 < float(text) < 1.0:
        return float(text)
    raise argparse.ArgumentTypeError(f"expected a fraction in (0, 1) or a count, got {text!r}")


def _add_input_options(p: argparse.ArgumentParser) -> None:
    _opt(p, "--labels", "L.npy", "labels beside a .npy score file")
    kind = "score kind (never guessed): needed for .npy; picks probs in a file with both"
    p.add_argument("--kind", choices=("logits", "probs"), help=kind)
    _opt(p, "--scores-key", "KEY", "name of the score array (needs --kind)")
    _opt(p, "--labels-key", "KEY", "name of the label array (default labels)")


# ----- the parser --------------------------------------------------------------------------
def _opt(p: argparse.ArgumentParser, flags: str, metavar: str, text: str, **kw: Any) -> None:
    """Add an option: ``flags`` space-separated, ``text`` its help (``%(default)s`` allowed)."""
    p.add_argument(*flags.split(), metavar=metavar, help=text, **kw)


def _add_numbers(p: argparse.ArgumentParser, *, bins: bool = True) -> None:
    if bins:
        _opt(p, "--n-bins", "N", "bins (default %(default)s)", type=_int_at_least(1), default=15)
    boot = "bootstrap resamples for 95%% intervals (0: none; default %(default)s)"
    _opt(p, "--n-boot", "N", boot, type=_int_at_least(0), default=1000)
    _opt(p, "--seed", "N", "random seed (default %(default)s)", type=_int_at_least(0), default=0)
    if bins:
        what = "binary problems: top_label or positive_class (default %(default)s)"
        _opt(
            p, "--mode", "MODE", what, choices=("top_label", "positive_class"), default="top_label"
        )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    about = "Measure and fix the confidence calibration of neural-network classifiers."
    parser = _Parser(prog=PROG, description=about)
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    files = "FILE: .npz, .csv, .pt, or .npy with --labels (layouts: see calibkit.predfile)"
    every = "comma-separated (default: every method that applies)"

    p = sub.add_parser("evaluate", help="every metric of one prediction file", description=files)
    p.add_argument("file", metavar="FILE")
    _add_input_options(p)
    _add_numbers(p)
    p.add_argument("--format", choices=("table", "json"), default="table")
    _opt(p, "--plot", "PNG", "reliability diagram (default <FILE stem>.reliability.png; 'none')")
    p.set_defaults(run=cmd_evaluate)

    text = "fit calibrators on one part, judge them on another"
    p = sub.add_parser("compare", help=text, description=files)
    p.add_argument("file", metavar="FILE", nargs="?", help="split into calibration / test")
    _opt(p, "--cal", "FILE", "calibration part (with --test)")
    _opt(p, "--test", "FILE", "test part (with --cal)")
    _opt(p, "--cal-labels", "L.npy", "labels beside a .npy --cal file")
    _opt(p, "--test-labels", "L.npy", "labels beside a .npy --test file")
    _add_input_options(p)
    _opt(
        p,
        "--split",
        "SIZE",
        "calibration part of FILE: fraction or count (default 0.5)",
        type=_split_size,
    )
    _opt(p, "--methods", "A,B,C", every)
    _opt(p, "--out", "DIR", "report folder (default %(default)s)", default="calibkit-report")
    _add_numbers(p)
    p.set_defaults(run=cmd_compare)

    p = sub.add_parser("fit", help="fit one calibrator, save it as JSON", description=files)
    p.add_argument("file", metavar="FILE")
    _opt(p, "--method", "NAME", "see 'calibkit methods'", required=True)
    _opt(p, "-o --output", "JSON", "default %(default)s", default="calibrator.json")
    _opt(
        p,
        "--param",
        "KEY=VALUE",
        "a parameter of the method (repeatable)",
        action="append",
        default=[],
    )
    _add_input_options(p)
    p.set_defaults(run=cmd_fit)

    text = "calibrate predictions with a saved calibrator"
    p = sub.add_parser("apply", help=text, description=files)
    p.add_argument("calibrator", metavar="CALIBRATOR.json")
    p.add_argument("file", metavar="FILE")
    out = "probs, labels (+ logits for logit maps); default %(default)s"
    _opt(p, "-o --output", "NPZ", out, default="calibrated.npz")
    _add_input_options(p)
    p.set_defaults(run=cmd_apply)

    p = sub.add_parser("demo", help="train an overconfident MLP on digits, compare the fixes")
    _opt(p, "--out", "DIR", "report folder (default %(default)s)", default="demo-report")
    _opt(p, "--epochs", "N", "default %(default)s", type=_int_at_least(1), default=100)
    _opt(p, "--methods", "A,B,C", every)
    _add_numbers(p, bins=False)
    p.set_defaults(run=cmd_demo)

    text = "train models x seeds from a TOML config, calibrate, report (resumable)"
    p = sub.add_parser("study", help=text, description=text)
    p.add_argument("config", metavar="CONFIG", nargs="?", help="TOML file (default: digits)")
    _opt(p, "--out", "DIR", "output folder (default: study-<config name>)")
    _opt(p, "--models", "A,B", "run only these model labels")
    _opt(p, "--seeds", "0,1", "run only these seeds")
    _opt(p, "--epochs", "N", "override every model's epochs", type=_int_at_least(1))
    _opt(p, "--data-dir", "DIR", "folder of the dataset files (overrides the config)")
    p.add_argument("--quiet", action="store_true", help="no per-epoch progress")
    text = "write the report from the runs and fits finished so far; train and fit nothing"
    p.add_argument("--report-only", action="store_true", help=text)
    p.set_defaults(run=cmd_study)

    sub.add_parser("methods", help="list the calibrators").set_defaults(run=cmd_methods)
    return parser


def _message(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        where = f": {exc.filename}" if exc.filename else ""
        return f"{exc.strerror}{where}"
    return " ".join(str(exc).split())


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status (0, or 2 for bad input)."""
    try:
        args = build_parser().parse_args(argv)
        return int(args.run(args))
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
