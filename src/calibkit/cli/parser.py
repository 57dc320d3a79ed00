"""The argument parser: one subparser per command, each defined in its own module.

Building the parser imports only the command modules themselves (argparse and the standard
library); a command's real work, and torch, are imported when it runs.
"""

from __future__ import annotations

import argparse
import importlib
from typing import Any, NoReturn

from calibkit.cli.options import number, opt
from calibkit.core.errors import CalibkitError, UnknownNameError
from calibkit.core.threads import THREADS
from calibkit.core.version import __version__

PROG = "calibkit"
#: The subcommands, in the order ``--help`` lists them; each is ``calibkit.cli.<name>``.
COMMANDS = (
    "evaluate",
    "compare",
    "conformal",
    "labelshift",
    "shift",
    "fit",
    "apply",
    "demo",
    "study",
    "methods",
)


class UsageError(CalibkitError):
    """The command line itself is malformed (reported like any other input error)."""


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kw: Any) -> None:
        """Every option in its one spelling: no prefix of it is taken for it (argparse's
        ``allow_abbrev``), so a removed spelling (``--labels``) is refused, not read as a
        longer option (``--labels-key``), and a new option breaks no command line."""
        kw.setdefault("allow_abbrev", False)
        super().__init__(*args, **kw)

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        """A value outside an argument's choices (a command, ``--estimator``, ``--format``,
        ...) is an unknown name: refused with the nearest one ("did you mean ...?")."""
        if action.choices is not None and value not in action.choices:
            name = action.option_strings[0] if action.option_strings else action.metavar
            valid = [str(c) for c in action.choices]
            raise UnknownNameError(str(name or action.dest), value, valid)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand; ``args.command`` names the one chosen."""
    about = "Measure and fix the confidence calibration of neural-network classifiers."
    parser = _Parser(prog=PROG, description=about)
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    text = (
        "threads of torch and the BLAS libraries, given before the command "
        "('calibkit --threads 1 study'; default: the cores free when calibkit starts)"
    )
    opt(parser, "--threads", "N", text, type=number(THREADS))
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"calibkit.cli.{name}").add_arguments(sub)
    return parser
