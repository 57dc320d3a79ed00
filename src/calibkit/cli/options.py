"""Command-line option helpers shared by the subcommands: argument types and option groups.

A numeric option's type is built from its declared range (:func:`number`), so the command
line, the configuration files and the library check one constraint, and a refused value is
reported with that range before any work starts.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
from collections.abc import Callable
from typing import Any, TypeAlias

from calibkit.core.errors import InputError, compact_numbers
from calibkit.core.names import LM_LAYOUTS, LM_LENGTH_NORMS
from calibkit.core.options import MODES, Binning, Resampling
from calibkit.core.params import PARAM
from calibkit.core.validation import (
    SPLIT_SIZE,
    Constraint,
    Integer,
)

#: The object ``add_subparsers`` returns; each subcommand module adds its parser to it.
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"

#: What a prediction FILE may be (shown in each subcommand's help).
FILES = "FILE: .npz, .csv, .pt, or .npy with --labels (layouts: see calibkit.io.predictions)"
#: Help of ``--methods``.
EVERY_METHOD = "comma-separated (default: every method that applies)"


def _read_number(text: str) -> object:
    """``text`` as an int (``12``), a float (``0.5``, ``1e3``), or unchanged (refused later)."""
    text = text.strip()
    if re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    try:
        return float(text)
    except ValueError:
        return text


def miscoverage(text: str) -> float:
    """An argparse type: ``--alpha``, a miscoverage strictly between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {text!r}")
    return value


def number(constraint: Constraint) -> Callable[[str], Any]:
    """An argparse type: the text read as a number and checked by ``constraint``; a refused
    value's message states the range (argparse adds the option's name)."""

    def parse(text: str) -> Any:
        try:
            return constraint.check("", _read_number(text))
        except InputError as exc:
            shown = compact_numbers(text)  # a 400-digit number as 1e+400
            got = repr(text) if shown == text else shown
            raise argparse.ArgumentTypeError(f"expected {exc.expected}, got {got}") from None

    return parse


def int_list(constraint: Integer) -> Callable[[str], list[int]]:
    """An argparse type: comma-separated integers, each checked by ``constraint``."""
    one = number(constraint)
    what = "comma-separated integers " + constraint.describe().removeprefix("an integer ")

    def parse(text: str) -> list[int]:
        try:
            items = [one(s) for s in text.split(",") if s.strip()]
        except argparse.ArgumentTypeError:
            items = []
        if not items:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return items

    return parse


#: ``--cal-size``: a count of calibration samples (``5000``) or a fraction (``0.5``).
split_size = number(SPLIT_SIZE)


def opt(p: argparse._ActionsContainer, flags: str, metavar: str, text: str, **kw: Any) -> None:
    """Add an option: ``flags`` space-separated, ``text`` its help (``%(default)s`` allowed)."""
    p.add_argument(*flags.split(), metavar=metavar, help=text, **kw)


def add_input_options(p: argparse.ArgumentParser, *, labels: bool = True) -> None:
    """How to read a prediction file: labels beside it (with ``labels``: a command without
    FILE names each file's labels by its own option), score kind, array names."""
    if labels:
        opt(p, "--labels", "L.npy", "labels beside a .npy score file")
    kind = "score kind (never guessed): needed for .npy; picks probs in a file with both"
    p.add_argument("--kind", choices=("logits", "probs"), help=kind)
    opt(p, "--scores-key", "KEY", "name of the score array (needs --kind)")
    opt(p, "--labels-key", "KEY", "name of the label array (default labels)")
    add_layout(p)


def add_layout(p: argparse.ArgumentParser) -> None:
    """``--layout`` (a language model's answers: the file's layout, never guessed),
    ``--length-norm`` (lm-eval) and ``--letters`` (chat-logprobs)."""
    text = (
        "a language model's answers: lm-eval (samples_*.jsonl or their folder), chat-logprobs,"
        " option-logprobs or stated-confidence (calibkit.io.lm_files); groups: --groups task"
    )
    p.add_argument("--layout", choices=tuple(LM_LAYOUTS), help=text)
    text = "lm-eval: options' log-likelihoods normalised as the harness's acc_norm or acc_bytes"
    p.add_argument("--length-norm", choices=tuple(LM_LENGTH_NORMS), help=text)
    opt(p, "--letters", "ABCD", "chat-logprobs: the option letters (default ABCD)")


def add_groups(p: argparse.ArgumentParser, what: str) -> None:
    """``--groups KEY``: a group per sample, read from the prediction file (``what``: the
    per-group results it adds)."""
    text = f"array (.npz, .pt) or column (.csv) of one group per sample: {what}"
    opt(p, "--groups", "KEY", text)


def add_cal_size(
    p: argparse.ArgumentParser,
    default: object = 0.5,
    *,
    shown: str | None = None,
) -> None:
    """``--cal-size SIZE``: the calibration part of the data (a fraction or a count;
    ``shown``: the default as the help says it, when ``default`` is None)."""
    said = "%(default)s" if shown is None else shown
    text = f"calibration part: fraction or count, stratified (default {said})"
    opt(p, "--cal-size", "SIZE", text, type=split_size, default=default)


def add_out(
    p: argparse.ArgumentParser,
    what: str,
    *,
    file: str | None = None,
    short: bool = False,
    rule: str = "new, empty, or a report folder calibkit wrote",
) -> None:
    """``--out``: where the command writes ``what`` (a folder, or with ``file`` a file of
    that metavar, e.g. ``NPZ``; ``short``: ``-o`` too; ``rule``: which folders it takes).
    The one declaration of every command's ``--out``: its default and its help follow
    :data:`calibkit.cli.glossary.OUTPUT_RULE` (nothing written without it, but where
    :data:`~calibkit.cli.glossary.DEFAULT_OUT` names a default)."""
    from calibkit.cli.glossary import DEFAULT_OUT

    default = DEFAULT_OUT.get(p.prog.split()[-1])
    if file is None:
        text = f"write {what} to this folder ({rule}"
    else:
        text = f"write {what} to this file (never over an input; an existing one: --force"
    if default is None:
        text += "; without it, nothing is written: the result is printed)"
    else:
        text += f"; default {default})"
    flags = "-o --out" if short else "--out"
    opt(p, flags, file or "DIR", text.replace("%", "%%"))


def add_format(p: argparse.ArgumentParser) -> None:
    """``--format table|json``: what stdout shows (json: the content of results.json)."""
    text = "stdout: the verdict and tables, or results.json's content (default %(default)s)"
    p.add_argument("--format", choices=("table", "json"), default="table", help=text)


def add_force(p: argparse.ArgumentParser) -> None:
    """``--force``: replace an existing output file (never an input)."""
    p.add_argument("--force", action="store_true", help="replace an existing output file")


def add_numbers(
    p: argparse.ArgumentParser, *, bins: bool = True, boot: bool = True, mode: bool | None = None
) -> None:
    """Bins (with ``bins``), bootstrap resamples and their level (with ``boot``), the seed,
    and the binary mode (with ``mode``, by default as ``bins``)."""
    if bins:
        opt(p, "--n-bins", "N", "bins (default %(default)s)", **_declared(Binning, "n_bins"))
    if boot:
        text = "bootstrap resamples of the intervals (0: none; default %(default)s)"
        opt(p, "--n-boot", "N", text, **_declared(Resampling, "n_boot"))
        text = "confidence level of the intervals (default %(default)s)"
        opt(p, "--level", "L", text, **_declared(Resampling, "level"))
    opt(p, "--seed", "N", "random seed (default %(default)s)", **_declared(Resampling, "seed"))
    if bins if mode is None else mode:
        what = "binary problems: top_label or positive_class (default %(default)s)"
        default = _declared(Binning, "mode")["default"]
        opt(p, "--mode", "MODE", what, choices=MODES, default=default)


def _declared(settings: type, name: str) -> dict[str, Any]:
    """The ``type`` (its check) and ``default`` of the option that sets ``name`` of
    ``settings`` (:mod:`calibkit.core.options`), as declared there."""
    field = {f.name: f for f in dataclasses.fields(settings)}[name]
    return {"type": number(field.metadata[PARAM].check), "default": field.default}


def resampling_of(args: argparse.Namespace) -> Resampling:
    """``--n-boot``, ``--level`` and ``--seed`` (:func:`add_numbers`) as one object."""
    return Resampling(n_boot=args.n_boot, level=args.level, seed=args.seed)


def binning_of(args: argparse.Namespace) -> Binning:
    """``--n-bins`` and ``--mode`` (:func:`add_numbers`) as one object."""
    return Binning(n_bins=args.n_bins, mode=getattr(args, "mode", "top_label"))


def reading_words(args: argparse.Namespace) -> list[str]:
    """The options of :func:`add_input_options` given in ``args``, as words of a command
    line (``["--kind", "logits"]``), for a command a report suggests to repeat them."""
    words: list[str] = []
    for flag in (
        "--labels", "--kind", "--scores-key", "--labels-key", "--layout", "--length-norm",
        "--letters",
    ):  # fmt: skip
        value = getattr(args, flag.removeprefix("--").replace("-", "_"), None)
        if value is not None:
            words += [flag, str(value)]
    return words


def param_value(text: str) -> Any:
    """The value of ``--param key=value``: JSON scalars, lists of them and objects of them
    (a part with its parameters: ``{"name": "raps", "penalty": 0.05}``), else the text."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return text
    scalar = int | float | bool | str
    if isinstance(value, list) and all(isinstance(v, scalar) for v in value):
        return value  # e.g. methods=["temperature","histogram"]
    if isinstance(value, dict) and all(isinstance(v, scalar) for v in value.values()):
        return value  # e.g. conformity_score={"name": "raps", "penalty": 0.05}
    return value if isinstance(value, scalar) else text


def key_values(items: list[str], option: str) -> dict[str, Any]:
    """``OPTION KEY=VALUE`` given repeatedly, as a mapping (each key once; values read as
    :func:`param_value` reads them): ``--score-param``, ``--estimator-param``.

    >>> key_values(["penalty=0.05", "k_reg=2"], "--score-param")
    {'penalty': 0.05, 'k_reg': 2}
    """
    found: dict[str, Any] = {}
    for item in items:
        key, sep, value = (part.strip() for part in item.partition("="))
        if not sep or not key:
            raise InputError(option, "KEY=VALUE", repr(item))
        if key in found:
            raise InputError(f"{option} {key}", "one value (each key given once)", "two")
        found[key] = param_value(value)
    return found
