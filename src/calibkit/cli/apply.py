"""``calibkit apply CALIBRATOR.json FILE``: calibrate predictions with a saved calibrator."""

from __future__ import annotations

import argparse
from pathlib import Path

from calibkit.cli.common import check_output_file, read_outputs
from calibkit.cli.options import FILES, Subparsers, add_force, add_input_options, opt
from calibkit.core.errors import InputError


def add_arguments(sub: Subparsers) -> None:
    """The ``apply`` subcommand and its options."""
    text = "calibrate predictions with a saved calibrator"
    p = sub.add_parser("apply", help=text, description=FILES)
    p.add_argument("calibrator", metavar="CALIBRATOR.json")
    p.add_argument("file", metavar="FILE")
    out = "probs, labels (+ logits for logit maps); default %(default)s"
    opt(p, "-o --output", "NPZ", out, default="calibrated.npz")
    add_force(p)
    add_input_options(p)


def run(args: argparse.Namespace) -> int:
    """Apply the calibrator and write the calibrated predictions (``.npz``)."""
    from calibkit.calibrators import Calibrator
    from calibkit.io.predictions import save_predictions
    from calibkit.metrics import ece

    inputs = [args.calibrator, args.file, args.labels]
    output = check_output_file(Path(args.output), "--output", inputs, force=args.force)
    if output.suffix.lower() != ".npz":
        raise InputError("--output", "a file name ending in .npz", output.name)
    calibrator = Calibrator.load(args.calibrator)
    out = read_outputs(args, args.file, args.labels)
    z = out.as_logits()
    probs = calibrator.predict_proba(z)
    logits = calibrator.transform(z) if calibrator.maps_logits else None
    save_predictions(output, out.labels, probs=probs, logits=logits)
    before, after = ece(out), ece(out.labels, probs=probs)
    print(f"applied {calibrator.name} to {out.n_samples:,} samples")
    print(f"ECE {100 * before:.2f}% -> {100 * after:.2f}% (15 bins)")
    print(f"calibrated predictions: {output}")
    return 0
