"""``calibkit fit --method NAME FILE``: fit one calibrator and save it as JSON."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from calibkit.cli.common import check_output_file, method_class, read_outputs, renamed
from calibkit.cli.options import FILES, Subparsers, add_force, add_input_options, opt
from calibkit.core.errors import InputError

if TYPE_CHECKING:
    from calibkit.calibrators import PostHoc


def param_value(text: str) -> Any:
    """The value of ``--param key=value``: JSON scalars and lists of them, else the text."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return text
    scalar = int | float | bool | str
    if isinstance(value, list) and all(isinstance(v, scalar) for v in value):
        return value  # e.g. methods=["temperature","histogram"]
    return value if isinstance(value, scalar) else text


def build_calibrator(method: str, params: list[str]) -> PostHoc:
    """A new calibrator of ``method`` with the ``key=value`` parameters ``params``.

    The valid names and values are those the method declares (its ``param_constraints``).
    """
    from calibkit.core.validation import check_params

    klass = method_class(method, "--method")
    declared = klass.param_constraints
    kwargs: dict[str, Any] = {}
    for item in params:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError("--param", "key=value", repr(item))
        if key.strip() not in declared:
            valid = ", ".join(declared) or "none"
            raise InputError("--param", f"a parameter of {method} ({valid})", repr(key.strip()))
        kwargs[key.strip()] = param_value(value)
    checked = check_params(declared, kwargs, "--param", prefix="--param ")
    try:
        return klass(**checked)
    except InputError as exc:  # a relation between parameters (e.g. t_min < t_max)
        raise renamed(exc, f"--param {exc.argument}") from None


def add_arguments(sub: Subparsers) -> None:
    """The ``fit`` subcommand and its options."""
    p = sub.add_parser("fit", help="fit one calibrator, save it as JSON", description=FILES)
    p.add_argument("file", metavar="FILE")
    opt(p, "--method", "NAME", "see 'calibkit methods'", required=True)
    opt(p, "-o --output", "JSON", "default %(default)s", default="calibrator.json")
    text = "a parameter of the method (repeatable)"
    opt(p, "--param", "KEY=VALUE", text, action="append", default=[])
    add_input_options(p)
    add_force(p)


def run(args: argparse.Namespace) -> int:
    """Fit, save, and print the fitted scalar parameters."""
    from calibkit.calibrators import AutoCalibrator
    from calibkit.workflows.compare import summarize_params

    calibrator = build_calibrator(args.method, args.param)
    output = check_output_file(
        Path(args.output), "--output", [args.file, args.labels], force=args.force
    )
    out = read_outputs(args, args.file, args.labels)
    calibrator.fit(out.as_logits(), out.labels)
    calibrator.save(output)
    print(f"fitted {args.method} on {out.n_samples:,} samples ({out.n_classes} classes)")
    if isinstance(calibrator, AutoCalibrator):
        print(calibrator.summary())
        calibrator = calibrator.chosen
    params = summarize_params(calibrator)
    for name, value in params.items():
        print(f"  {name} = {value:.6g}")
    if not params:
        print("  (fitted arrays only: see the JSON file)")
    print(f"calibrator: {output}")
    return 0
