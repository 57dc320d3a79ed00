"""``calibkit methods``: the registered calibrators, one line each."""

from __future__ import annotations

import argparse
import inspect

from calibkit.cli.options import Subparsers


def add_arguments(sub: Subparsers) -> None:
    """The ``methods`` subcommand."""
    sub.add_parser("methods", help="list the calibrators")


def run(args: argparse.Namespace) -> int:
    """Print each calibrator's name and the first line of its docstring."""
    from calibkit.calibrators import CALIBRATORS

    names = [n for n in CALIBRATORS.names() if not CALIBRATORS.get(n).needs_model]
    width = max(len(n) for n in names)
    for name in names:
        klass = CALIBRATORS.get(name)
        line = (inspect.getdoc(klass) or "").split("\n")[0].replace("``", "")
        note = " [2 classes only]" if klass.binary_only else ""
        print(f"{name:<{width}}  {line}{note}")
    return 0
