"""``calibkit conformal``: conformal prediction sets fitted on one part, measured on another.

With ``--out DIR`` the report folder also holds each score's fitted predictor,
``conformal_<score>.json`` (:data:`FITTED_FILE`): ``calibkit apply`` makes the sets of new
predictions with it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from calibkit.cli.common import check_input, method_class, read_outputs, renamed, say
from calibkit.cli.options import FILES, Subparsers, add_input_options, add_numbers, opt, split_size
from calibkit.core.errors import InputError
from calibkit.io.atomic import atomic_directory, check_replaceable_folder

#: The score names (``calibkit.calibrators.sets.conformal.SCORES``, spelled here so that
#: building the parser imports no numpy).
SCORES = ("lac", "aps", "raps", "saps")
#: Each score's fitted predictor in the report folder: a calibkit document, which
#: ``calibkit apply`` reads to make the sets of new predictions.
FITTED_FILE = "conformal_{score}.json"
#: The files of the report folder: these, and one :data:`FITTED_FILE` per score.
REPORT_FILES = ("report.md", "results.json")


def _alpha(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {text!r}")
    return value


def _scores(text: str) -> list[str]:
    names = [s.strip() for s in text.split(",") if s.strip()]
    bad = [s for s in names if s not in SCORES and s != "all"]
    if bad or not names:
        raise InputError(
            "--score", "comma-separated scores among " + ", ".join(SCORES) + ", or all", repr(text)
        )
    return list(SCORES) if "all" in names else list(dict.fromkeys(names))


def add_arguments(sub: Subparsers) -> None:
    """The ``conformal`` subcommand and its options."""
    text = "conformal prediction sets: fit on one part of FILE, measure coverage on the rest"
    p = sub.add_parser("conformal", help=text, description=FILES)
    p.add_argument("file", metavar="FILE", help="split into calibration / test")
    add_input_options(p)
    opt(p, "--alpha", "A", "miscoverage in (0, 1) (default %(default)s)", type=_alpha, default=0.1)
    opt(
        p,
        "--score",
        "S,T",
        "scores among " + ", ".join(SCORES) + ", or all (default all)",
        default="all",
    )
    opt(p, "--calibrator", "NAME", "calibrator under the scores (default: none, softmax)")
    p.add_argument("--mondrian", action="store_true", help="one quantile per class")
    p.add_argument(
        "--randomized", action="store_true", help="uniform tie-breaking (aps, raps, saps)"
    )
    text = "calibration part of FILE: fraction or count (default 0.5)"
    opt(p, "--split", "SIZE", text, type=split_size)
    what = "write report.md, results.json and each fitted predictor (conformal_SCORE.json)"
    opt(p, "--out", "DIR", f"{what} to this folder")
    add_numbers(p, bins=False)


def run(args: argparse.Namespace) -> int:
    """Fit and measure each score; print the table; write the report with ``--out``."""
    from calibkit.workflows.compare import split_outputs
    from calibkit.workflows.conformal import (
        conformal_sets,
        format_sets_table,
        sets_json,
        sets_markdown,
    )

    scores = _scores(args.score)
    out_dir = None if args.out is None else check_replaceable_folder(Path(args.out), "--out")
    check_input(args.file, "FILE")
    check_input(args.labels, "--labels")
    if args.calibrator is not None:
        method_class(args.calibrator, "--calibrator", ("logits",))
    whole = read_outputs(args, args.file, args.labels)
    size = 0.5 if args.split is None else args.split
    try:
        cal, test = split_outputs(whole, size, args.seed)
    except InputError as exc:
        raise renamed(exc, "--split") from None
    source = f"{args.file}, split {cal.n_samples:,} / {test.n_samples:,} (seed {args.seed})"
    try:
        rows = conformal_sets(
            cal,
            test,
            scores,
            alpha=args.alpha,
            calibrator=args.calibrator,
            mondrian=args.mondrian,
            randomized=args.randomized,
            n_boot=args.n_boot,
            seed=args.seed,
        )
    except InputError as exc:
        if exc.argument == "calibration part":
            raise renamed(exc, "--split") from None
        raise
    print(f"alpha {args.alpha:g}: target coverage {100 * (1 - args.alpha):.1f}% ({source})")
    print(format_sets_table(rows))
    if out_dir is not None:
        say(f"writing the report to {out_dir}")
        title = f"Conformal prediction sets: {Path(args.file).name}"
        with atomic_directory(out_dir) as tmp:
            (tmp / "report.md").write_text(sets_markdown(rows, title=title, source=source), "utf-8")
            text = json.dumps(sets_json(rows, source=source), indent=1, allow_nan=False)
            (tmp / "results.json").write_text(text + "\n", "utf-8")
            fitted = [FITTED_FILE.format(score=r.score) for r in rows]
            for r, name in zip(rows, fitted, strict=True):
                r.model.save(tmp / name)
        print(f"report: {out_dir / 'report.md'}")
        files = ", ".join(str(out_dir / name) for name in fitted)
        print(f"conformal predictors: {files} (calibkit apply makes sets with them)")
    return 0
