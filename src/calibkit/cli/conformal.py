"""``calibkit conformal``: conformal prediction sets fitted on one part, measured on another.

The report (:mod:`calibkit.reporting.conformal_report`) opens with the verdict: coverage
against the target, and the score with the smallest sets. With ``--out DIR`` the folder
also holds each score's fitted predictor, ``conformal_<score>.json``: ``calibkit apply``
makes the sets of new predictions with it.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from calibkit.cli.common import (
    check_inputs,
    check_method,
    finish,
    output_folder,
    read_outputs,
    renamed,
    report_inputs,
    report_options,
)
from calibkit.cli.options import (
    FILES,
    Subparsers,
    add_cal_size,
    add_format,
    add_input_options,
    add_numbers,
    add_out,
    key_values,
    miscoverage,
    opt,
    resampling_of,
)
from calibkit.core import catalog
from calibkit.core.errors import InputError, nearest_name

if TYPE_CHECKING:
    from calibkit.calibrators.sets.conformal_scores import ConformalScore

#: The conformity scores (read from the catalog, so that building the parser imports no numpy).
SCORES = tuple(catalog.CONFORMITY_SCORES)


def _scores(text: str) -> list[str]:
    found = [s.strip() for s in text.split(",") if s.strip()]
    bad = [s for s in found if s not in SCORES and s != "all"]
    if bad or not found:
        near = nearest_name(bad[0], SCORES) if bad else None
        got = repr(text) + (f" (did you mean {near!r}?)" if near else "")
        expected = "comma-separated scores among " + ", ".join(SCORES) + ", or all"
        raise InputError("--scores", expected, got)
    return list(SCORES) if "all" in found else list(dict.fromkeys(found))


def _chosen_scores(args: argparse.Namespace) -> list[ConformalScore]:
    """The scores of ``--scores``, each with the ``--score-param`` values it declares (the
    names and the ``--method`` checked first: a mistyped one imports no torch)."""

    names, params = _scores(args.scores), key_values(args.score_param, "--score-param")
    if args.method is not None:
        check_method(args.method, "--method", ("logits",))
    from calibkit.calibrators.sets.conformal_scores import scores_with

    try:
        return scores_with(names, params)
    except InputError as exc:  # a key no chosen score declares, or a value refused
        where = "" if exc.argument == "score parameters" else f" {exc.argument}"
        raise renamed(exc, "--score-param" + where) from None


def add_arguments(sub: Subparsers) -> None:
    """The ``conformal`` subcommand and its options."""
    text = "conformal prediction sets: fit on one part of FILE, measure coverage on the rest"
    p = sub.add_parser("conformal", help=text, description=FILES)
    p.add_argument("file", metavar="FILE", help="split into calibration / test")
    add_input_options(p)
    opt(
        p,
        "--alpha",
        "A",
        "miscoverage in (0, 1) (default %(default)s)",
        type=miscoverage,
        default=0.1,
    )
    text = "conformity scores among " + ", ".join(SCORES) + ", or all (default all)"
    opt(p, "--scores", "S,T", text, default="all")
    opt(p, "--method", "NAME", "calibrator under the scores (default: none, softmax)")
    text = "a parameter of the scores that declare it, e.g. penalty=0.05 (raps; repeatable)"
    opt(p, "--score-param", "KEY=VALUE", text, action="append", default=[])
    p.add_argument("--mondrian", action="store_true", help="one quantile per class")
    p.add_argument(
        "--randomized", action="store_true", help="uniform tie-breaking (aps, raps, saps)"
    )
    add_cal_size(p)
    add_numbers(p, bins=False)
    add_out(p, "report.md, report.html, results.json and each fitted predictor (conformal_S.json)")
    add_format(p)


def run(args: argparse.Namespace) -> int:
    """Fit and measure each score on a split of FILE; print and write the report."""
    check_inputs(args)
    scores = _chosen_scores(args)
    folder = output_folder(args)
    from calibkit.reporting.conformal_report import conformal_report
    from calibkit.workflows.conformal import split_conformal_sets

    whole = read_outputs(args, args.file, args.labels)
    try:
        found = split_conformal_sets(
            whole,
            scores,
            cal_size=args.cal_size,
            alpha=args.alpha,
            calibrator=args.method,
            mondrian=args.mondrian,
            randomized=args.randomized,
            resampling=resampling_of(args),
        )
    except InputError as exc:
        raise renamed(exc, "--cal-size") if exc.argument == "cal_size" else exc from None
    source = f"{args.file}, split {found.n_cal:,} / {found.n_test:,} (seed {args.seed})"
    title = f"Conformal prediction sets: {Path(args.file).name}"
    report = conformal_report(
        found.rows,
        source=source,
        title=title,
        inputs=report_inputs(args),
        options=report_options(args),
        folder=folder,
    )
    return finish(report, args, folder)
