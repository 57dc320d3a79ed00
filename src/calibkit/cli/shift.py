"""``calibkit shift``: a model's calibrators fitted on clean images, judged on every
corruption x severity (calibration under distribution shift, Ovadia et al. 2019)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from calibkit.cli.common import method_class, renamed, say
from calibkit.cli.options import Subparsers, number, opt, split_size
from calibkit.core.errors import InputError
from calibkit.core.validation import Integer
from calibkit.io.atomic import atomic_directory, check_replaceable_folder

#: The conformal scores (``calibkit.calibrators.sets.conformal.SCORES``; no numpy at parse time).
SCORES = ("lac", "aps", "raps", "saps")
#: The normalisation of the pretrained CIFAR ResNets (``../shared/data/README.md``).
IMAGENET_MEAN = "0.485,0.456,0.406"
IMAGENET_STD = "0.229,0.224,0.225"


def _alpha(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {text!r}")
    return value


def _severities(text: str) -> list[int]:
    """``1-5``, ``3`` or ``1,3,5``: severities in 1..5."""
    what = f"severities in 1..5 as 1-5 or 1,3,5, got {text!r}"
    try:
        if "-" in text:
            low, high = (int(t) for t in text.split("-"))
            values = list(range(low, high + 1))
        else:
            values = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}") from None
    if not values or any(not 1 <= v <= 5 for v in values):
        raise argparse.ArgumentTypeError(f"expected {what}")
    return list(dict.fromkeys(values))


def _floats(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(t) for t in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated numbers, got {text!r}"
        ) from None


def _names(text: str) -> list[str]:
    return list(dict.fromkeys(t.strip() for t in text.split(",") if t.strip()))


def _add_data_options(p: argparse.ArgumentParser) -> None:
    """The model, its data and the two parts."""
    opt(p, "--model", "NAME", "registered model (calibkit's models, e.g. resnet20)", required=True)
    opt(p, "--weights", "PATH", "the model's checkpoint (state dict)", required=True)
    opt(p, "--data", "SPEC", "image dataset (default %(default)s)", default="cifar10-jpeg")
    opt(p, "--data-dir", "DIR", "its folder (default $CALIBKIT_DATA)")
    opt(p, "--split", "NAME", "the split to use (default %(default)s)", default="test")
    text = "clean calibration part: count or fraction, stratified (default %(default)s)"
    opt(p, "--cal-size", "N", text, type=split_size, default=5000)
    text = "test images kept of the rest, stratified (default: all)"
    opt(p, "--test-size", "N", text, type=number(Integer(low=1)))


def add_arguments(sub: Subparsers) -> None:
    """The ``shift`` subcommand and its options."""
    text = "calibrators fitted on clean images, judged on every corruption x severity"
    about = (
        "Fit each calibrator on a clean calibration part of --data's split, then evaluate it "
        "on the clean rest and on its CIFAR-10-C corruptions at each severity."
    )
    p = sub.add_parser("shift", help=text, description=about)
    _add_data_options(p)
    opt(p, "--corruptions", "A,B", "corruptions, or all (default all)", default="all")
    text = "severities: 1-5, 3 or 1,3,5 (default 1-5)"
    opt(p, "--severities", "S", text, type=_severities, default=[1, 2, 3, 4, 5])
    text = (
        "calibrators (none: the model's softmax; default none,temperature,vector,ms_odir,dirichlet)"
    )
    opt(p, "--methods", "A,B", text)
    text = "conformal scores on temperature scaling, or none (default raps,lac)"
    opt(p, "--conformal", "S,T", text, default="raps,lac")
    opt(
        p,
        "--alpha",
        "A",
        "conformal miscoverage in (0, 1) (default %(default)s)",
        type=_alpha,
        default=0.1,
    )
    opt(
        p,
        "--mean",
        "M,M,M",
        "input normalisation mean (default %(default)s)",
        type=_floats,
        default=IMAGENET_MEAN,
    )
    opt(
        p,
        "--std",
        "S,S,S",
        "input normalisation std (default %(default)s)",
        type=_floats,
        default=IMAGENET_STD,
    )
    opt(p, "--device", "DEV", "cpu, cuda, cuda:N or auto (default %(default)s)", default="auto")
    opt(
        p,
        "--batch-size",
        "N",
        "images per forward pass (default %(default)s)",
        type=number(Integer(low=1)),
        default=500,
    )
    opt(
        p,
        "--n-floor-draws",
        "N",
        "draws of the ECE noise floor (default %(default)s)",
        type=number(Integer(low=0)),
        default=100,
    )
    opt(
        p,
        "--seed",
        "N",
        "seed of the split, corruptions and conformal split (default %(default)s)",
        type=number(Integer(low=0)),
        default=0,
    )
    opt(
        p,
        "--out",
        "DIR",
        "write report.md, results.csv, results.json, config.json and figures here",
    )


def _checked(args: argparse.Namespace) -> dict[str, Any]:
    """Every name checked before any work (an unknown one refused with the valid ones)."""
    from calibkit.data.corruptions import CORRUPTIONS, check_corruption
    from calibkit.models import MODELS
    from calibkit.workflows.shift import DEFAULT_METHODS

    corruptions = (
        list(CORRUPTIONS.names()) if args.corruptions == "all" else _names(args.corruptions)
    )
    if not corruptions:
        raise InputError(
            "--corruptions", "comma-separated corruption names, or all", repr(args.corruptions)
        )
    for c in corruptions:
        try:
            check_corruption(c, 1)
        except InputError as exc:
            raise renamed(exc, "--corruptions") from None
    methods = list(DEFAULT_METHODS) if args.methods is None else _names(args.methods)
    if not methods:
        raise InputError("--methods", "comma-separated calibrator names", repr(args.methods))
    for m in methods:
        if m != "none":
            method_class(m, "--methods", ("logits",))
    conformal = [] if args.conformal == "none" else _names(args.conformal)
    bad = [s for s in conformal if s not in SCORES]
    if bad or (args.conformal != "none" and not conformal):
        raise InputError(
            "--conformal", "scores among " + ", ".join(SCORES) + ", or none", repr(args.conformal)
        )
    try:
        MODELS.get(args.model)
    except InputError as exc:
        raise renamed(exc, "--model") from None
    if not Path(args.weights).is_file():
        raise InputError("--weights", "an existing checkpoint file", repr(args.weights))
    for name, values in (("--mean", args.mean), ("--std", args.std)):
        if name == "--std" and any(v <= 0 for v in values):
            raise InputError(name, "positive numbers", repr(values))
    return {"corruptions": corruptions, "methods": methods, "conformal": conformal}


def _model(name: str, weights: str, n_classes: int, channels: int) -> Any:
    from calibkit.models import MODELS, create_model, load_checkpoint, load_pretrained_cifar_resnet

    info = MODELS.info(name)
    if info.get("family") == "cifar_resnet":
        return load_pretrained_cifar_resnet(weights, int(info["depth"]))
    return load_checkpoint(create_model(name, n_classes, in_channels=channels), weights)


def _split(labels: Any, args: argparse.Namespace) -> tuple[Any, Any]:
    """Stratified seeded ``(calibration, test)`` indices, the test part cut to
    ``--test-size`` (stratified) when that is smaller."""
    from calibkit.core.splits import stratified_split

    try:
        test_idx, cal_idx = stratified_split(labels, args.cal_size, args.seed)
    except InputError as exc:
        raise renamed(exc, "--cal-size") from None
    if args.test_size is not None and args.test_size < len(test_idx):
        keep, _ = stratified_split(labels[test_idx], len(test_idx) - args.test_size, args.seed)
        test_idx = test_idx[keep]
    return cal_idx, test_idx


def _config(
    args: argparse.Namespace, names: dict[str, Any], n_cal: int, n_test: int, device: str
) -> dict[str, Any]:
    """The resolved settings, written as config.json."""
    keys = ("model", "weights", "data", "split", "test_size", "severities", "alpha", "seed")
    return {
        "command": "calibkit shift",
        **{k: getattr(args, k) for k in keys},
        "n_calibration": n_cal,
        "n_test": n_test,
        **names,
        "mean": list(args.mean),
        "std": list(args.std),
        "device": device,
        "n_floor_draws": args.n_floor_draws,
    }


def run(args: argparse.Namespace) -> int:
    """Load, split, corrupt, fit, judge; print the summary; write the report with ``--out``."""
    from calibkit.core.outputs import as_outputs
    from calibkit.data import load_dataset, parse_dataset_spec
    from calibkit.reporting.shift_report import format_summary, write_shift_report
    from calibkit.study.definition.components import resolve_device
    from calibkit.workflows.shift import model_logits, shift_table, shifted_logits

    names = _checked(args)
    out_dir = None if args.out is None else check_replaceable_folder(Path(args.out), "--out")
    try:
        device = resolve_device(args.device)
    except InputError as exc:
        raise renamed(exc, "--device") from None
    spec = parse_dataset_spec(args.data)
    if spec.corruption is not None:
        raise InputError(
            "--data", "a clean dataset (corruptions come from --corruptions)", repr(args.data)
        )
    started = time.perf_counter()
    try:
        data = load_dataset(args.data, args.data_dir)
    except InputError as exc:
        raise renamed(exc, "--data") if exc.argument == "spec" else exc from None
    if args.split not in data:
        raise InputError("--split", f"a split among {', '.join(data)}", repr(args.split))
    arrays = data[args.split]
    channels = int(arrays.images.shape[-1])
    for name, values in (("--mean", args.mean), ("--std", args.std)):
        if len(values) != channels:
            raise InputError(name, f"{channels} values (one per channel)", repr(values))
    cal_idx, test_idx = _split(arrays.labels, args)
    model = _model(args.model, args.weights, len(arrays.classes), channels)
    n_sets = len(names["corruptions"]) * len(args.severities)
    say(
        f"{args.model} on {args.data}:{args.split}: {len(cal_idx):,} clean calibration images, "
        f"{len(test_idx):,} test images, {n_sets} corrupted sets, on {device}"
    )

    kw = {"device": device, "batch_size": args.batch_size}
    y = arrays.labels
    cal = as_outputs(
        y[cal_idx], logits=model_logits(model, arrays.images[cal_idx], args.mean, args.std, **kw)
    )
    test = as_outputs(
        y[test_idx], logits=model_logits(model, arrays.images[test_idx], args.mean, args.std, **kw)
    )
    shifted = shifted_logits(
        model,
        arrays.images[test_idx],
        y[test_idx],
        names["corruptions"],
        args.severities,
        mean=args.mean,
        std=args.std,
        seed=args.seed,
        key=f"{spec.name}/{args.split}",
        indices=test_idx,
        **kw,
    )
    say("fitting the calibrators on the clean calibration part and judging every set")
    rows = shift_table(
        cal,
        test,
        shifted,
        names["methods"],
        conformal=names["conformal"],
        alpha=args.alpha,
        n_floor_draws=args.n_floor_draws,
        seed=args.seed,
    )
    wall = time.perf_counter() - started
    print(
        f"{args.model} on {args.data}:{args.split} "
        f"({len(test_idx):,} test images; mean over the corruptions)"
    )
    print(format_summary(rows))
    print(f"wall time {wall:.0f}s")
    if out_dir is not None:
        config = _config(args, names, len(cal_idx), len(test_idx), str(device))
        config |= {"wall_seconds": round(wall, 1), "classes": list(arrays.classes)}
        say(f"writing the report to {out_dir}")
        title = f"Calibration under shift: {args.model} on {args.data}"
        with atomic_directory(out_dir) as tmp:
            write_shift_report(
                tmp,
                rows,
                title=title,
                config=config,
                alpha=args.alpha if names["conformal"] else None,
            )
        print(f"report: {out_dir / 'report.md'}")
    return 0
