"""``calibkit labelshift``: adapt a calibrated model to a target's class frequencies.

SOURCE_FILE (labelled) fits the calibrator, the source priors and BBSE's confusion matrix;
TARGET_FILE's scores give the estimated target priors. Its labels are optional (an
``.npz`` without a ``labels`` array, or a ``.npy`` without ``--target-labels``); with
labels the command also scores the unadapted, adapted and oracle posteriors.

With ``--out DIR`` the report folder also holds the fitted adapter, ``adapter.json``
(:data:`ADAPTER_FILE`), adapted to the target's priors: ``calibkit apply`` adapts new
predictions with it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from calibkit.cli.common import check_input, method_class, read_outputs, read_scores, renamed, say
from calibkit.cli.options import FILES, Subparsers, add_input_options, opt
from calibkit.core.errors import InputError
from calibkit.io.atomic import atomic_directory, check_replaceable_folder

if TYPE_CHECKING:
    import numpy as np

#: The prior estimators (``calibkit.calibrators.priors.label_shift.METHODS``, spelled here so that
#: the parser imports no numpy; a test checks they are the same).
METHODS = ("em", "bbse")
#: The fitted adapter in the report folder (a calibkit document: ``calibkit apply`` reads it).
ADAPTER_FILE = "adapter.json"
#: The files of the report folder.
REPORT_FILES = ("report.md", "results.json", ADAPTER_FILE)


def add_arguments(sub: Subparsers) -> None:
    """The ``labelshift`` subcommand and its options."""
    text = "estimate a target's class priors and adapt the calibrated posteriors to them"
    p = sub.add_parser("labelshift", help=text, description=FILES)
    p.add_argument("source", metavar="SOURCE_FILE", help="labelled source predictions")
    p.add_argument("target", metavar="TARGET_FILE", help="target predictions (labels optional)")
    add_input_options(p)
    opt(p, "--target-labels", "L.npy", "labels beside a .npy target file (optional)")
    opt(p, "--method", "M", "prior estimator (default %(default)s)", choices=METHODS, default="em")
    what = "calibrator of logits fitted on the source, or none (default %(default)s)"
    opt(p, "--calibrator", "NAME", what, default="bcts")
    what = "known target priors P0,P1,... (>= 0, summing to 1) instead of estimating them"
    opt(p, "--priors", "P,P", what)
    what = f"write report.md, results.json and the fitted adapter ({ADAPTER_FILE}) to this folder"
    opt(p, "--out", "DIR", what)


def _priors(text: str) -> list[float]:
    try:
        return [float(v) for v in text.split(",")]
    except ValueError:
        raise InputError("--priors", "comma-separated numbers", repr(text)) from None


def read_target(args: argparse.Namespace) -> tuple[np.ndarray, np.ndarray | None]:
    """TARGET_FILE's scores as logits, and its labels or None."""
    import numpy as np

    target = read_scores(args, args.target, args.target_labels, "TARGET_FILE")
    return np.asarray(target.logits, dtype=np.float64), target.labels


def run(args: argparse.Namespace) -> int:
    """Estimate (or take) the target priors; print them and the scores; write the report."""
    from calibkit.workflows.label_shift import (
        format_label_shift,
        label_shift,
        label_shift_json,
        label_shift_markdown,
    )

    out_dir = None if args.out is None else check_replaceable_folder(Path(args.out), "--out")
    priors = None if args.priors is None else _priors(args.priors)
    for path, option in (
        (args.source, "SOURCE_FILE"),
        (args.labels, "--labels"),
        (args.target, "TARGET_FILE"),
        (args.target_labels, "--target-labels"),
    ):
        check_input(path, option)
    if args.calibrator != "none":
        method_class(args.calibrator, "--calibrator", ("logits",))
    source = read_outputs(args, args.source, args.labels)
    z, y = read_target(args)
    if z.shape[1] != source.n_classes:
        raise InputError(
            "TARGET_FILE",
            f"scores of the source's {source.n_classes} classes",
            f"{z.shape[1]} classes",
        )
    calibrator = None if args.calibrator == "none" else args.calibrator
    try:
        r = label_shift(source, z, y, method=args.method, calibrator=calibrator, priors=priors)
    except InputError as exc:
        if exc.argument == "priors":
            raise renamed(exc, "--priors") from None
        if exc.argument == "labels":
            raise renamed(exc, "SOURCE_FILE labels") from None
        if exc.argument == "target labels":
            raise renamed(exc, "TARGET_FILE labels") from None
        raise
    text = f"{args.source} ({source.n_samples:,} rows) -> {args.target} ({z.shape[0]:,} rows)"
    how = "given" if priors is not None else f"estimated by {args.method}"
    print(f"target priors {how}, calibrator {args.calibrator} ({text})")
    print(format_label_shift(r))
    if out_dir is not None:
        say(f"writing the report to {out_dir}")
        title = f"Label shift: {Path(args.source).name} -> {Path(args.target).name}"
        with atomic_directory(out_dir) as tmp:
            md = label_shift_markdown(r, title=title, source=text)
            (tmp / "report.md").write_text(md, "utf-8")
            doc = json.dumps(label_shift_json(r, source=text), indent=1, allow_nan=False)
            (tmp / "results.json").write_text(doc + "\n", "utf-8")
            r.adapter.save(tmp / ADAPTER_FILE)
        print(f"report: {out_dir / 'report.md'}")
        print(f"prior adapter: {out_dir / ADAPTER_FILE} (calibkit apply adapts with it)")
    return 0
