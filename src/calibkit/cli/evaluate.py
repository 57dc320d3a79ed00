"""``calibkit evaluate FILE``: every metric of one prediction file, plus a reliability diagram.

``--extra smooth_ece`` adds the smooth ECE (with its bootstrap interval at the fitted
bandwidth) and ``--extra decomposition`` the calibration / refinement split of NLL and
Brier; they are opt-in, so the default output (and every report built on
:func:`calibkit.metrics.evaluate`) keeps its keys.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from calibkit.cli.common import check_output_file, read_outputs, say
from calibkit.cli.options import FILES, Subparsers, add_force, add_input_options, add_numbers, opt
from calibkit.core.errors import InputError
from calibkit.io.jsonfile import json_text

if TYPE_CHECKING:
    from calibkit.core.outputs import ClassifierOutputs
    from calibkit.metrics import Evaluation

#: ``--extra`` choices: metrics outside the default suite.
EXTRAS = ("smooth_ece", "decomposition")


def add_arguments(sub: Subparsers) -> None:
    """The ``evaluate`` subcommand and its options."""
    p = sub.add_parser("evaluate", help="every metric of one prediction file", description=FILES)
    p.add_argument("file", metavar="FILE")
    add_input_options(p)
    add_numbers(p)
    p.add_argument("--format", choices=("table", "json"), default="table")
    opt(p, "--plot", "PNG", "write the reliability diagram there (default: no file)")
    extra = (
        "also compute smooth_ece (smooth ECE, Błasiok & Nakkiran 2023) or decomposition "
        "(NLL and Brier = calibration + refinement, by an in-sample temperature); repeatable"
    )
    opt(p, "--extra", "NAME", extra, action="append", choices=EXTRAS, default=[])
    smooth = "write the kernel-smoothed reliability diagram there (implies --extra smooth_ece)"
    opt(p, "--smooth-plot", "PNG", smooth)
    add_force(p)


def _with_extras(ev: Evaluation, out: ClassifierOutputs, args: argparse.Namespace) -> Evaluation:
    """``ev`` with the ``--extra`` metrics added (and the smoothed diagram written)."""
    from calibkit.metrics import score_decomposition, smooth_reliability

    values, ci = dict(ev.values), dict(ev.ci)
    if "smooth_ece" in args.extra or args.smooth_plot is not None:
        rel = smooth_reliability(out, mode=args.mode, n_boot=max(1, args.n_boot), seed=args.seed)
        values["smooth_ece"] = rel.value
        if args.n_boot:
            ci["smooth_ece"] = rel.interval
        if args.smooth_plot is not None:
            from calibkit.reporting.figures import save_figure, smooth_reliability_figure

            title = f"{Path(args.file).name}: smoothed reliability"
            save_figure(smooth_reliability_figure(rel, title=title), Path(args.smooth_plot))
    if "decomposition" in args.extra:
        for score in ("nll", "brier"):
            d = score_decomposition(out, score=score)
            values[f"{score}_calibration"] = d.calibration
            values[f"{score}_refinement"] = d.refinement
    return replace(ev, values=values, ci=ci)


def run(args: argparse.Namespace) -> int:
    """Print the metrics table (or JSON) and write the reliability diagram."""
    from calibkit.metrics import evaluate, reliability_stats
    from calibkit.reporting.tables import format_evaluation_table

    plot = None if args.plot is None or args.plot.lower() == "none" else Path(args.plot)
    inputs = [args.file, args.labels]
    if plot is not None:
        check_output_file(plot, "--plot", inputs, force=args.force)
    if args.smooth_plot is not None:
        smooth_plot = Path(args.smooth_plot)
        if plot is not None and smooth_plot.resolve() == plot.resolve():
            raise InputError("--smooth-plot", "a path other than --plot's", str(smooth_plot))
        check_output_file(smooth_plot, "--smooth-plot", inputs, force=args.force)
    out = read_outputs(args, args.file, args.labels)
    say(f"evaluating {out.n_samples:,} samples ({args.n_boot} bootstrap resamples)")
    ev = evaluate(out, n_bins=args.n_bins, n_boot=args.n_boot, seed=args.seed, mode=args.mode)
    if args.extra or args.smooth_plot is not None:
        ev = _with_extras(ev, out, args)
    if plot is not None:  # matplotlib is imported only when a figure is written
        from calibkit.reporting.figures import reliability_figure, save_figure

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
        if args.smooth_plot is not None:
            print(f"smoothed reliability diagram: {args.smooth_plot}")
    return 0
