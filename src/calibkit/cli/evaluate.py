"""``calibkit evaluate FILE``: every metric of one prediction file, plus a reliability diagram.

``--extra NAME`` adds a metric outside the default suite: any of the metric registry's extras
(:func:`calibkit.metrics.extra_names`: the smooth ECE with its bootstrap interval at the
fitted bandwidth, the calibration / refinement parts of NLL and Brier, Murphy's parts of
the Brier score, and any registered since), or ``decomposition``, the calibration /
refinement split of NLL and Brier. They are opt-in, so the default output (and every report
built on :func:`calibkit.metrics.evaluate`) keeps its keys. ``--extra risk_at_coverage`` and
``--extra coverage_at_risk`` take ``--coverage C`` (in (0, 1]) and ``--risk R`` (in [0, 1]).

``--rc-plot PNG`` writes the risk-coverage curves (selective risk and generalized risk
against coverage, :func:`calibkit.reporting.figures.risk_coverage_figure`).

``--groups KEY`` reads one group per sample from the file (an array of a ``.npz`` / ``.pt``,
a column of a ``.csv``: :func:`calibkit.io.predictions.load_groups`) and adds each group's
accuracy, ECE (interval and noise floor), NLL (interval) and mean confidence, and the
worst-group ECE gap (:func:`calibkit.metrics.groups.evaluate_groups`); ``--format json``
holds them under ``"groups"``.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from calibkit.cli.common import check_output_file, read_groups, read_outputs, say
from calibkit.cli.options import (
    FILES,
    Subparsers,
    add_force,
    add_groups,
    add_input_options,
    add_numbers,
    opt,
)
from calibkit.core.errors import InputError
from calibkit.io.jsonfile import json_text

#: The calibration tests (:mod:`calibkit.metrics.calibration_tests`), for ``--extra tests``.
TEST_NAMES = ("spiegelhalter", "ks", "kuiper", "hosmer_lemeshow")

if TYPE_CHECKING:
    from calibkit.core.outputs import ClassifierOutputs
    from calibkit.metrics import Evaluation

#: ``--extra`` names that stand for several registered extras.
GROUPS = {
    "decomposition": ("nll_calibration", "nll_refinement", "brier_calibration", "brier_refinement"),
    "tests": tuple(f"{t}_{p}" for t in TEST_NAMES for p in ("statistic", "p")),
}


def extra_choices() -> tuple[str, ...]:
    """``--extra`` choices: the registry's extras now, then :data:`GROUPS` (read when the
    command runs: building the parser imports no metric)."""
    from calibkit.metrics import extra_names

    return (*extra_names(), *GROUPS)


def add_arguments(sub: Subparsers) -> None:
    """The ``evaluate`` subcommand and its options."""
    p = sub.add_parser("evaluate", help="every metric of one prediction file", description=FILES)
    p.add_argument("file", metavar="FILE")
    add_input_options(p)
    add_numbers(p)
    p.add_argument("--format", choices=("table", "json"), default="table")
    opt(p, "--plot", "PNG", "write the reliability diagram there (default: no file)")
    extra = (
        "also compute a metric outside the default suite, e.g. smooth_ece (smooth ECE, "
        "Błasiok & Nakkiran 2023), brier_reliability (Murphy), or decomposition (NLL and "
        "Brier = calibration + refinement, by an in-sample temperature); repeatable"
    )
    opt(p, "--extra", "NAME", extra, action="append", default=[])  # checked by run()
    interval = "per-bin interval drawn on --plot (default: wilson)"
    opt(p, "--interval", "METHOD", interval, choices=("wilson", "clopper-pearson", "none"))
    corp = "add the CORP (isotonic) reliability curve and its consistency band to --plot"
    p.add_argument("--corp", action="store_true", help=corp)
    smooth = "write the kernel-smoothed reliability diagram there (implies --extra smooth_ece)"
    opt(p, "--smooth-plot", "PNG", smooth)
    opt(p, "--rc-plot", "PNG", "write the risk-coverage curves there (selective prediction)")
    cov = "coverage of --extra risk_at_coverage, in (0, 1] (default %(default)s)"
    opt(p, "--coverage", "C", cov, type=float, default=0.8)
    risk = "risk of --extra coverage_at_risk, in [0, 1] (default %(default)s)"
    opt(p, "--risk", "R", risk, type=float, default=0.05)
    add_groups(p, "adds ECE, NLL and accuracy per group and the worst-group gap")
    add_force(p)


def _with_extras(ev: Evaluation, out: ClassifierOutputs, args: argparse.Namespace) -> Evaluation:
    """``ev`` with the ``--extra`` metrics added (and the smoothed diagram written)."""
    import inspect

    from calibkit.metrics import METRICS, extra_names, smooth_reliability

    asked = {m for name in args.extra for m in GROUPS.get(name, (name,))}
    if args.smooth_plot is not None:
        asked.add("smooth_ece")
    values, ci = dict(ev.values), dict(ev.ci)
    for name in (n for n in extra_names() if n in asked):  # in report order
        if name != "smooth_ece":
            function = METRICS.get(name).function
            accepted = inspect.signature(function).parameters
            given = {
                "n_bins": args.n_bins,
                "mode": args.mode,
                "coverage": args.coverage,
                "risk": args.risk,
            }
            options = {k: v for k, v in given.items() if k in accepted}
            values[name] = float(function(out, **options))
            continue
        rel = smooth_reliability(out, mode=args.mode, n_boot=max(1, args.n_boot), seed=args.seed)
        values["smooth_ece"] = rel.value
        if args.n_boot:
            ci["smooth_ece"] = rel.interval
        if args.smooth_plot is not None:
            from calibkit.reporting.figures import save_figure, smooth_reliability_figure

            title = f"{Path(args.file).name}: smoothed reliability"
            save_figure(smooth_reliability_figure(rel, title=title), Path(args.smooth_plot))
    return replace(ev, values=values, ci=ci)


def run(args: argparse.Namespace) -> int:
    """Print the metrics table (or JSON) and write the reliability diagram."""
    from calibkit.metrics import evaluate, reliability_stats
    from calibkit.metrics.selective import check_fraction
    from calibkit.reporting.tables import format_evaluation_table, format_group_table

    plot = None if args.plot is None or args.plot.lower() == "none" else Path(args.plot)
    inputs = [args.file, args.labels]
    check_fraction("--coverage", args.coverage, low_open=True)
    check_fraction("--risk", args.risk, low_open=False)
    if plot is not None:
        check_output_file(plot, "--plot", inputs, force=args.force)
    rc_plot = None if args.rc_plot is None else Path(args.rc_plot)
    if rc_plot is not None:
        taken = [p.resolve() for p in (plot, args.smooth_plot and Path(args.smooth_plot)) if p]
        if rc_plot.resolve() in taken:
            raise InputError(
                "--rc-plot", "a path other than --plot's and --smooth-plot's", str(rc_plot)
            )
        check_output_file(rc_plot, "--rc-plot", inputs, force=args.force)
    if args.smooth_plot is not None:
        smooth_plot = Path(args.smooth_plot)
        if plot is not None and smooth_plot.resolve() == plot.resolve():
            raise InputError("--smooth-plot", "a path other than --plot's", str(smooth_plot))
        check_output_file(smooth_plot, "--smooth-plot", inputs, force=args.force)
    unknown = [name for name in args.extra if name not in extra_choices()]
    if unknown:
        raise InputError("--extra", "one of " + ", ".join(extra_choices()), repr(unknown[0]))
    out = read_outputs(args, args.file, args.labels)
    groups = None if args.groups is None else read_groups(args.file, args.groups, out.n_samples)
    say(f"evaluating {out.n_samples:,} samples ({args.n_boot} bootstrap resamples)")
    ev = evaluate(out, n_bins=args.n_bins, n_boot=args.n_boot, seed=args.seed, mode=args.mode)
    per_group = None
    if groups is not None:
        from calibkit.metrics.groups import evaluate_groups

        per_group = evaluate_groups(
            out,
            groups=groups,
            n_bins=args.n_bins,
            mode=args.mode,
            n_boot=args.n_boot,
            seed=args.seed,
        )
    if args.extra or args.smooth_plot is not None:
        ev = _with_extras(ev, out, args)
    if plot is not None:  # matplotlib is imported only when a figure is written
        from calibkit.metrics.reliability_bands import IntervalMethod, corp_reliability
        from calibkit.reporting.figures import reliability_figure, save_figure

        stats = reliability_stats(out, n_bins=args.n_bins, mode=args.mode)
        corp = corp_reliability(out, mode=args.mode, seed=args.seed) if args.corp else None
        interval: IntervalMethod | None = "wilson" if args.interval is None else args.interval
        if args.interval == "none":
            interval = None
        fig = reliability_figure(
            stats, title=Path(args.file).name, ece=ev.values["ece"], interval=interval, corp=corp
        )
        save_figure(fig, plot)
    if rc_plot is not None:
        from calibkit.metrics.selective import risk_coverage_curve
        from calibkit.reporting.figures import risk_coverage_figure, save_figure

        name = Path(args.file).name
        rc = risk_coverage_figure({name: risk_coverage_curve(out)}, title=f"{name}: risk-coverage")
        save_figure(rc, rc_plot)
    if args.format == "json":
        result = ev.to_dict()
        if per_group is not None:
            result["groups"] = per_group.to_dict()
        print(json_text(result))
    else:
        print(f"{args.file}: {out.n_samples:,} samples, {out.n_classes} classes, {out.kind}")
        print(format_evaluation_table(ev))
        if per_group is not None:
            print(f"\nper group ({args.groups}):")
            print(format_group_table(per_group))
        if plot is not None:
            print(f"reliability diagram: {plot}")
        if args.smooth_plot is not None:
            print(f"smoothed reliability diagram: {args.smooth_plot}")
        if rc_plot is not None:
            print(f"risk-coverage curves: {rc_plot}")
    return 0
