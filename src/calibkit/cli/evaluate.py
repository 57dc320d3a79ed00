"""``calibkit evaluate FILE``: every metric of one prediction file, plus a reliability diagram."""

from __future__ import annotations

import argparse
from pathlib import Path

from calibkit.cli.common import check_output_file, read_outputs, say
from calibkit.cli.options import FILES, Subparsers, add_force, add_input_options, add_numbers, opt
from calibkit.io.jsonfile import json_text


def add_arguments(sub: Subparsers) -> None:
    """The ``evaluate`` subcommand and its options."""
    p = sub.add_parser("evaluate", help="every metric of one prediction file", description=FILES)
    p.add_argument("file", metavar="FILE")
    add_input_options(p)
    add_numbers(p)
    p.add_argument("--format", choices=("table", "json"), default="table")
    opt(p, "--plot", "PNG", "write the reliability diagram there (default: no file)")
    add_force(p)


def run(args: argparse.Namespace) -> int:
    """Print the metrics table (or JSON) and write the reliability diagram."""
    from calibkit.metrics import evaluate, reliability_stats
    from calibkit.reporting.figures import reliability_figure, save_figure
    from calibkit.reporting.tables import format_evaluation_table

    plot = None if args.plot is None or args.plot.lower() == "none" else Path(args.plot)
    if plot is not None:
        check_output_file(plot, "--plot", [args.file, args.labels], force=args.force)
    out = read_outputs(args, args.file, args.labels)
    say(f"evaluating {out.n_samples:,} samples ({args.n_boot} bootstrap resamples)")
    ev = evaluate(out, n_bins=args.n_bins, n_boot=args.n_boot, seed=args.seed, mode=args.mode)
    if plot is not None:
        stats = reliability_stats(out, n_bins=args.n_bins, mode=args.mode)
        fig = reliability_figure(stats, title=Path(args.file).name, ece=ev.values["ece"])
        save_figure(fig, plot)
    if args.format == "json":
        print(json_text(ev.to_dict()))
    else:
        print(f"{args.file}: {out.n_samples:,} samples, {out.n_classes} classes, {out.kind}")
        print(format_evaluation_table(ev))
        if plot is not None:
            print(f"reliability diagram: {plot}")
    return 0
