"""``calibkit demo``: one overconfident MLP on digits, every calibrator compared.

``--out`` follows the report folder rule of ``compare`` (:mod:`calibkit.io.atomic`): a new
or empty folder, or a report folder calibkit wrote, checked before the model is trained.
The report is ``compare``'s, its verdict the comparison's recommendation (chosen on the
calibration part, never by the lowest test ECE), with the training described first.
"""

from __future__ import annotations

import argparse
import dataclasses

from calibkit.cli.common import finish, method_list, output_folder, report_inputs, report_options
from calibkit.cli.options import (
    EVERY_METHOD,
    Subparsers,
    add_format,
    add_numbers,
    add_out,
    number,
    opt,
)
from calibkit.core.validation import TRAINED_EPOCHS

TITLE = "calibkit demo: an overconfident MLP on digits"


def add_arguments(sub: Subparsers) -> None:
    """The ``demo`` subcommand and its options."""
    p = sub.add_parser("demo", help="train an overconfident MLP on digits, compare the fixes")
    add_out(p, "the report")
    opt(p, "--epochs", "N", "default %(default)s", type=number(TRAINED_EPOCHS), default=100)
    opt(p, "--methods", "A,B,C", EVERY_METHOD)
    add_numbers(p)
    add_format(p)


def run(args: argparse.Namespace) -> int:
    """Train the demo model, compare the calibrators, write the report."""
    methods = method_list(args.methods, ("logits",))  # the demo has no groups
    folder = output_folder(args)
    from calibkit.reporting.compare_report import demo_report
    from calibkit.workflows.demo import DemoSettings, run_demo

    given = {f.name: getattr(args, f.name, None) for f in dataclasses.fields(DemoSettings)}
    given["methods"] = None if methods is None else tuple(methods)
    settings = DemoSettings(**{k: v for k, v in given.items() if v is not None})
    res = run_demo(seed=args.seed, settings=settings)
    report = demo_report(res, title=TITLE, inputs=report_inputs(args), options=report_options(args))
    return finish(report, args, folder)
