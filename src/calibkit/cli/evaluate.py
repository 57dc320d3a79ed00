"""``calibkit evaluate FILE``: every metric of one prediction file, plus a reliability diagram.

``--extra NAME`` adds a metric outside the default suite: any of the metric registry's extras
(:func:`calibkit.metrics.extra_names`), or ``decomposition``, the calibration / refinement split
of NLL and Brier. They are opt-in, so the default output (and every report built on
:func:`calibkit.metrics.evaluate`) keeps its keys. ``--extra risk_at_coverage`` and ``--extra
coverage_at_risk`` take ``--coverage C`` (in (0, 1]) and ``--risk R`` (in [0, 1]).

``--rc-plot PNG`` writes the risk-coverage curves (selective risk and generalized risk
against coverage, :func:`calibkit.reporting.curves.risk_coverage_figure`). ``--plot``,
``--smooth-plot`` and ``--rc-plot`` given ``none`` write no file
(:func:`calibkit.cli.common.file_or_none`).

``--groups KEY`` reads one group per sample from the file (an array of a ``.npz`` / ``.pt``, a
column of a ``.csv``: :func:`calibkit.io.predictions.load_groups`) and adds the per-group
evaluation (:func:`calibkit.metrics.groups.evaluate_groups`); ``--format json`` holds it under
``"groups"``.

The verdict comes first (overconfident or underconfident, by how much against the noise
floor, what to run next: :func:`calibkit.reporting.evaluate_report.evaluation_verdict`), then
the tables. ``--out DIR`` writes the report folder (report.md, report.html, results.json,
figures/); ``--format json`` prints results.json's content.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from calibkit.cli.common import (
    check_inputs,
    check_output_file,
    file_or_none,
    finish,
    output_folder,
    read_groups,
    read_outputs,
    renamed,
    report_inputs,
    report_options,
    say,
)
from calibkit.cli.options import (
    FILES,
    Subparsers,
    add_force,
    add_format,
    add_groups,
    add_input_options,
    add_numbers,
    add_out,
    binning_of,
    opt,
    reading_words,
    resampling_of,
)
from calibkit.core.errors import InputError
from calibkit.core.words import plural


def add_arguments(sub: Subparsers) -> None:
    """The ``evaluate`` subcommand and its options."""
    p = sub.add_parser("evaluate", help="every metric of one prediction file", description=FILES)
    p.add_argument("file", metavar="FILE")
    add_input_options(p)
    add_numbers(p)
    add_out(p, "the report (verdict, metrics, figures)")
    add_format(p)
    opt(p, "--plot", "PNG", "write the reliability diagram there (default, or none: no file)")
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
    smooth = (
        "write the kernel-smoothed reliability diagram there (implies --extra smooth_ece; "
        "none: no file)"
    )
    opt(p, "--smooth-plot", "PNG", smooth)
    rc = "write the risk-coverage curves there (selective prediction; none: no file)"
    opt(p, "--rc-plot", "PNG", rc)
    cov = "coverage of --extra risk_at_coverage, in (0, 1] (default %(default)s)"
    opt(p, "--coverage", "C", cov, type=float, default=0.8)
    risk = "risk of --extra coverage_at_risk, in [0, 1] (default %(default)s)"
    opt(p, "--risk", "R", risk, type=float, default=0.05)
    add_groups(p, "adds ECE, NLL and accuracy per group and the worst-group gap")
    add_force(p)


def checked(args: argparse.Namespace) -> tuple[tuple[str, ...], dict[str, Path]]:
    """Check the options before any work: the inputs, the extras asked for (expanded), and
    each figure file to write (by its name in the report), never an input, another figure's
    path, or an existing file without ``--force``."""
    check_inputs(args)
    # the registry, not a copy of its names: a metric registered at run time is an extra too
    # (the metrics layer loads no torch, scipy or matplotlib)
    from calibkit.metrics.extras import expand_extras
    from calibkit.metrics.selective import check_fraction
    from calibkit.reporting.evaluate_report import RELIABILITY, RISK_COVERAGE, SMOOTH

    check_fraction("--coverage", args.coverage, low_open=True)
    check_fraction("--risk", args.risk, low_open=False)
    try:
        extras = expand_extras(args.extra)
    except InputError as exc:
        raise renamed(exc, "--extra") from None
    given = {
        "--plot": file_or_none(args.plot),
        "--smooth-plot": file_or_none(args.smooth_plot),
        "--rc-plot": file_or_none(args.rc_plot),
    }
    names = {"--plot": RELIABILITY, "--smooth-plot": SMOOTH, "--rc-plot": RISK_COVERAGE}
    paths: dict[str, Path] = {}
    taken: list[tuple[str, Path]] = []
    for option, value in given.items():
        if value is None:
            continue
        path = check_output_file(Path(value), option, [args.file, args.labels], force=args.force)
        for other, seen in taken:
            if path.resolve() == seen.resolve():
                raise InputError(option, f"a path other than {other}'s", str(path))
        taken.append((option, path))
        paths[names[option]] = path
    return extras, paths


def run(args: argparse.Namespace) -> int:
    """Print the verdict and the metrics table (or JSON); write the report and figures."""
    extras, plots = checked(args)
    folder = output_folder(args)
    from calibkit.reporting.evaluate_report import SMOOTH, evaluation_report, write_figures
    from calibkit.workflows.evaluate import evaluate_outputs

    out = read_outputs(args, args.file, args.labels)
    groups = None
    if args.groups is not None:
        groups = read_groups(args.file, args.groups, out.n_samples, min_groups=2, args=args)
    resamples = plural(args.n_boot, "bootstrap resample")
    say(f"evaluating {plural(out.n_samples, 'sample')} ({resamples})")
    figures = folder is not None or bool(plots)
    result = evaluate_outputs(
        out,
        groups=groups,
        extras=extras,
        smooth=SMOOTH in plots,
        corp=args.corp and figures,
        binning=binning_of(args),
        resampling=resampling_of(args),
        coverage=args.coverage,
        risk=args.risk,
    )
    report = evaluation_report(
        result,
        source=args.file,
        group_key=args.groups,
        figures=figures,
        interval=args.interval or "wilson",
        inputs=report_inputs(args),
        options=report_options(args),
        reading=reading_words(args),
    )
    return finish(write_figures(report, plots), args, folder)
