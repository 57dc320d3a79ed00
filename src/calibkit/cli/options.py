"""Command-line option helpers shared by the subcommands: argument types and option groups."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from typing import Any, TypeAlias

#: The object ``add_subparsers`` returns; each subcommand module adds its parser to it.
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"

#: What a prediction FILE may be (shown in each subcommand's help).
FILES = "FILE: .npz, .csv, .pt, or .npy with --labels (layouts: see calibkit.io.predictions)"
#: Help of ``--methods``.
EVERY_METHOD = "comma-separated (default: every method that applies)"


def int_at_least(low: int) -> Callable[[str], int]:
    """An argparse type: an integer ``>= low``."""

    def parse(text: str) -> int:
        if not re.fullmatch(r"[+-]?\d+", text.strip()) or int(text) < low:
            raise argparse.ArgumentTypeError(f"expected an integer >= {low}, got {text!r}")
        return int(text)

    return parse


def split_size(text: str) -> int | float:
    """``--split``: a count of calibration samples (``5000``) or a fraction (``0.5``)."""
    if re.fullmatch(r"\d+", text.strip()) and int(text) >= 1:
        return int(text)
    if re.fullmatch(r"0?\.\d+", text.strip()) and 0.0 < float(text) < 1.0:
        return float(text)
    raise argparse.ArgumentTypeError(f"expected a fraction in (0, 1) or a count, got {text!r}")


def opt(p: argparse._ActionsContainer, flags: str, metavar: str, text: str, **kw: Any) -> None:
    """Add an option: ``flags`` space-separated, ``text`` its help (``%(default)s`` allowed)."""
    p.add_argument(*flags.split(), metavar=metavar, help=text, **kw)


def add_input_options(p: argparse.ArgumentParser) -> None:
    """How to read a prediction file: labels beside it, score kind, array names."""
    opt(p, "--labels", "L.npy", "labels beside a .npy score file")
    kind = "score kind (never guessed): needed for .npy; picks probs in a file with both"
    p.add_argument("--kind", choices=("logits", "probs"), help=kind)
    opt(p, "--scores-key", "KEY", "name of the score array (needs --kind)")
    opt(p, "--labels-key", "KEY", "name of the label array (default labels)")


def add_force(p: argparse.ArgumentParser) -> None:
    """``--force``: replace an existing output file (never an input)."""
    p.add_argument("--force", action="store_true", help="replace an existing output file")


def add_numbers(p: argparse.ArgumentParser, *, bins: bool = True) -> None:
    """Bins, bootstrap resamples, seed and (with ``bins``) the binary mode."""
    if bins:
        opt(p, "--n-bins", "N", "bins (default %(default)s)", type=int_at_least(1), default=15)
    boot = "bootstrap resamples for 95%% intervals (0: none; default %(default)s)"
    opt(p, "--n-boot", "N", boot, type=int_at_least(0), default=1000)
    opt(p, "--seed", "N", "random seed (default %(default)s)", type=int_at_least(0), default=0)
    if bins:
        what = "binary problems: top_label or positive_class (default %(default)s)"
        opt(p, "--mode", "MODE", what, choices=("top_label", "positive_class"), default="top_label")
