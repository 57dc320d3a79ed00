"""``calibkit demo``: one overconfident MLP on digits, every calibrator compared.

``--out`` follows the report folder rule of ``compare`` (:mod:`calibkit.io.atomic`): a new
or empty folder, or a report folder calibkit wrote, checked before the model is trained.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from calibkit.cli.common import method_list, say
from calibkit.cli.options import EVERY_METHOD, Subparsers, add_numbers, number, opt
from calibkit.core.validation import TRAINED_EPOCHS

TITLE = "calibkit demo: an overconfident MLP on digits"


def add_arguments(sub: Subparsers) -> None:
    """The ``demo`` subcommand and its options."""
    p = sub.add_parser("demo", help="train an overconfident MLP on digits, compare the fixes")
    opt(p, "--out", "DIR", "report folder (default %(default)s)", default="demo-report")
    opt(p, "--epochs", "N", "default %(default)s", type=number(TRAINED_EPOCHS), default=100)
    opt(p, "--methods", "A,B,C", EVERY_METHOD)
    add_numbers(p, bins=False)


def run(args: argparse.Namespace) -> int:
    """Train the demo model, compare the calibrators, write the report."""
    from calibkit.io.atomic import check_replaceable_folder
    from calibkit.reporting.compare_report import write_compare_report, written_before_manifests
    from calibkit.workflows.demo import DemoSettings, run_demo

    out_dir = check_replaceable_folder(Path(args.out), "--out", written_before_manifests)
    methods = method_list(args.methods, ("logits",))  # the demo has no groups
    settings = DemoSettings(
        n_boot=args.n_boot, epochs=args.epochs, methods=None if methods is None else tuple(methods)
    )
    res = run_demo(seed=args.seed, settings=settings)
    say(f"writing the report to {out_dir}")
    write_compare_report(res.comparison, out_dir, title=TITLE)
    print(res.summary())
    print(f"report: {out_dir / 'report.html'}")
    return 0
