"""``calibkit shift``: a model's calibrators fitted on clean images, judged on every
corruption x severity (calibration under distribution shift, Ovadia et al. 2019).

The command parses its options into :class:`~calibkit.workflows.shift_study.ShiftSettings` (which
checks every name before any work), runs :func:`~calibkit.workflows.shift_study.run_shift`, and
writes :func:`~calibkit.reporting.shift_report.shift_report` with ``--out``; a settings
field an error names is reported as its option.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import re
from collections.abc import Callable
from typing import Any

from calibkit.cli.options import (
    Subparsers,
    add_cal_size,
    add_format,
    add_numbers,
    add_out,
    miscoverage,
    number,
    opt,
)
from calibkit.core import catalog, names
from calibkit.core.errors import InputError, nearest_name
from calibkit.core.validation import RESAMPLES, Integer

#: The conformity scores (read from the catalog).
SCORES = tuple(catalog.CONFORMITY_SCORES)
#: The normalisation of the pretrained CIFAR ResNets (``calibkit.workflows.shift``'s
#: ``IMAGENET_MEAN``/``IMAGENET_STD``; no numpy at parse time).
IMAGENET_MEAN = "0.485,0.456,0.406"
IMAGENET_STD = "0.229,0.224,0.225"
#: Settings fields whose option is not ``--`` + the field with dashes.
_FLAGS = {"corruption": "--corruptions", "spec": "--data", "path": "--weights"}


def _severities(text: str) -> list[int]:
    """``1-5``, ``3`` or ``1,3,5``: severities in 1..5, written in the digits 0-9 (``³`` and
    other Unicode digits are refused, as ``int`` would turn some into a number and fail on
    others).

    >>> _severities("2-4"), _severities(" 5,1")
    ([2, 3, 4], [5, 1])
    """
    what = f"severities in 1..5 as 1-5 or 1,3,5, got {text!r}"
    found = re.fullmatch(r"\s*([0-9]+)\s*-\s*([0-9]+)\s*", text, re.ASCII)
    if found:
        values = list(range(int(found[1]), int(found[2]) + 1))
    elif re.fullmatch(r"\s*[0-9]+\s*(,\s*[0-9]+\s*)*,?\s*", text, re.ASCII):
        values = [int(t) for t in text.split(",") if t.strip()]
    else:
        raise argparse.ArgumentTypeError(f"expected {what}")
    if not values or any(not 1 <= v <= 5 for v in values):
        raise argparse.ArgumentTypeError(f"expected {what}")
    return list(dict.fromkeys(values))


def _floats(*, positive: bool = False) -> Callable[[str], tuple[float, ...]]:
    """The parser of a comma-separated list of finite numbers (``positive``: each > 0), so
    that ``--mean nan`` or ``--std inf`` is refused when the options are read.

    >>> _floats(positive=True)("0.5, 2")
    (0.5, 2.0)
    """
    what = "positive finite numbers" if positive else "finite numbers"

    def parse(text: str) -> tuple[float, ...]:
        try:
            values = tuple(float(t) for t in text.split(","))
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected comma-separated {what}, got {text!r}"
            ) from None
        if not all(math.isfinite(v) and (v > 0 or not positive) for v in values):
            raise argparse.ArgumentTypeError(f"expected comma-separated {what}, got {text!r}")
        return values

    return parse


def _add_data_options(p: argparse.ArgumentParser) -> None:
    """The model, its data and the two parts."""
    opt(p, "--model", "NAME", "registered model (calibkit's models, e.g. resnet20)", required=True)
    opt(p, "--weights", "PATH", "the model's checkpoint (state dict)", required=True)
    opt(p, "--data", "SPEC", "image dataset (default %(default)s)", default="cifar10-jpeg")
    opt(p, "--data-dir", "DIR", "its folder (default $CALIBKIT_DATA)")
    opt(p, "--split", "NAME", "the dataset's split to use (default %(default)s)", default="test")
    add_cal_size(p, default=5000)
    text = "test images kept of the rest, stratified (default: all)"
    opt(p, "--test-size", "N", text, type=number(Integer(low=1)))


def add_arguments(sub: Subparsers) -> None:
    """The ``shift`` subcommand and its options."""
    text = "calibrators fitted on clean images, judged on every corruption x severity"
    about = (
        "Fit each calibrator on a clean calibration part of --data's split, then evaluate it "
        "on the clean rest and on its CIFAR-10-C corruptions at each severity. The verdict "
        "says from which severity calibration breaks."
    )
    p = sub.add_parser("shift", help=text, description=about)
    _add_data_options(p)
    opt(p, "--corruptions", "A,B", "corruptions, or all (default all)", default="all")
    text = "severities: 1-5, 3 or 1,3,5 (default 1-5)"
    opt(p, "--severities", "S", text, type=_severities, default=[1, 2, 3, 4, 5])
    text = (
        "calibrators (none: the model's softmax; default none,temperature,vector,ms_odir,dirichlet)"
    )
    opt(p, "--methods", "A,B,C", text)
    text = "conformity scores among " + ", ".join(SCORES) + ", each on temperature scaling"
    opt(p, "--scores", "S,T", text + ", or none (default %(default)s)", default="raps,lac")
    text = "conformal miscoverage in (0, 1) (default %(default)s)"
    opt(p, "--alpha", "A", text, type=miscoverage, default=0.1)
    text = "input normalisation mean (default %(default)s)"
    opt(p, "--mean", "M,M,M", text, type=_floats(), default=IMAGENET_MEAN)
    text = "input normalisation std (default %(default)s)"
    opt(p, "--std", "S,S,S", text, type=_floats(positive=True), default=IMAGENET_STD)
    opt(p, "--device", "DEV", "cpu, cuda, cuda:N or auto (default %(default)s)", default="auto")
    text = "images per forward pass (default %(default)s)"
    opt(p, "--batch-size", "N", text, type=number(Integer(low=1)), default=500)
    text = "draws of the ECE noise floor (default %(default)s)"
    opt(p, "--n-floor-draws", "N", text, type=number(RESAMPLES), default=100)
    text = (
        "toy size (300 + 300 images, 2 corruptions at 1,3,5, none,temperature, lac); marked smoke"
    )
    p.add_argument("--smoke", action="store_true", help=text)
    add_numbers(p, boot=False, mode=False)
    add_out(p, "the report (report.md, report.html, results.json, results.csv, config.json)")
    add_format(p)


def _fields() -> tuple[str, ...]:
    """The :class:`~calibkit.workflows.shift_study.ShiftSettings` fields, each an option of
    the same name (``smoke`` is ``--smoke``'s :meth:`~.ShiftSettings.smoke_run`)."""
    from calibkit.workflows.shift_study import ShiftSettings

    return tuple(f.name for f in dataclasses.fields(ShiftSettings) if f.name != "smoke")


def _flag(exc: InputError) -> InputError:
    """An error naming a settings field, naming its option instead (others unchanged)."""
    if exc.argument not in _fields() and exc.argument not in _FLAGS:
        return exc
    flag = _FLAGS.get(exc.argument, "--" + exc.argument.replace("_", "-"))
    return InputError(flag, exc.expected, exc.got)


def _check_first(args: argparse.Namespace) -> None:
    """The names, the checkpoint and ``--out``, checked before torch is imported (the
    settings check them again, with the rest)."""
    from calibkit.cli.common import check_input, check_method, check_name, output_folder

    if args.model is not None:
        check_name(args.model, "--model", tuple(catalog.MODEL_ENTRIES))
    check_input(args.weights, "--weights")
    data, _, shift = args.data.partition("@")
    check_name(data.partition(":")[0].strip(), "--data", names.DATASETS)
    if shift:
        _check_corruption(shift.partition(":")[0].strip(), "--data")
    for name in _listed(args.corruptions, "all"):
        _check_corruption(name, "--corruptions")
    for name in _listed(args.methods, "none"):
        check_method(name, "--methods", ("logits",))
    for name in _listed(args.scores, "none"):
        check_name(name, "--scores", SCORES)
    output_folder(args)


def _check_corruption(name: str, option: str) -> None:
    """A mistyped corruption name (one near a valid name) refused; another unknown one is left
    to the settings, which say which corruptions are not available and why."""
    from calibkit.cli.common import check_name

    valid = names.CORRUPTIONS
    if name not in valid and nearest_name(name, valid) is not None:
        check_name(name, option, valid)


def _listed(text: str | None, word: str) -> list[str]:
    """The names of a comma-separated option, without ``word`` (``all``, ``none``)."""
    return [n.strip() for n in (text or "").split(",") if n.strip() and n.strip() != word]


def _settings(args: argparse.Namespace) -> Any:
    """The options as settings (an option left unset: the settings' default)."""
    from calibkit.workflows.shift_study import ShiftSettings

    given = {f: getattr(args, f) for f in _fields()}
    settings = ShiftSettings(**{f: v for f, v in given.items() if v is not None})
    return settings.smoke_run() if args.smoke else settings


def run(args: argparse.Namespace) -> int:
    """Parse into settings, run the study, report it (``--out``: the report folder)."""
    from calibkit.cli.common import finish, output_folder, report_inputs, report_options

    _check_first(args)  # before torch
    from calibkit.reporting.shift_report import shift_report
    from calibkit.workflows.shift_study import run_shift

    try:
        settings = _settings(args)
        folder = output_folder(args)
        result = run_shift(settings)
    except InputError as exc:
        raise _flag(exc) from None
    inputs, options = report_inputs(args), report_options(args)
    return finish(shift_report(result, inputs=inputs, options=options), args, folder)
