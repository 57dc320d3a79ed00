"""The subcommands of the command line: evaluate, compare, fit, apply, demo, methods.

Each ``cmd_*`` takes the parsed arguments and returns the exit status; errors are raised as
:class:`~calibkit.errors.InputError` and turned into one line and exit status 2 by
:func:`calibkit.cli.main`. Outputs are checked before any work and written atomically.
"""

from __future__ import annotations

import argparse
import inspect
import json
import math
import os
import sys
from pathlib import Path
from typing import Any

from calibkit.calibrators import CALIBRATORS, Calibrator
from calibkit.errors import InputError
from calibkit.outputs import ClassifierOutputs


def _say(message: str) -> None:
    print(f"calibkit: {message}", file=sys.stderr, flush=True)


def _renamed(exc: InputError, argument: str) -> InputError:
    """The same complaint, naming the command-line option instead of the library argument."""
    return InputError(argument, exc.expected, exc.got)


def _param_value(text: str) -> Any:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return text
    scalar = int | float | bool | str
    if isinstance(value, list) and all(isinstance(v, scalar) for v in value):
        return value  # e.g. methods=["temperature","histogram"]
    return value if isinstance(value, scalar) else text


# ----- shared pieces -----------------------------------------------------------------------
def _check_output(path: Path, option: str, *, folder: bool = False) -> Path:
    """Fail early, naming ``option``, when ``path`` cannot be written."""
    parent = path.parent
    if not parent.exists():
        raise InputError(option, "a path in an existing folder", f"{path} ({parent} is missing)")
    if not parent.is_dir():
        raise InputError(option, "a path in a folder", f"{path} ({parent} is not a folder)")
    if not os.access(parent, os.W_OK):
        raise InputError(option, "a path in a writable folder", f"{path} ({parent} is read-only)")
    if folder and path.exists() and not path.is_dir():
        raise InputError(option, "a folder path", f"{path} (an existing file)")
    if not folder and path.is_dir():
        raise InputError(option, "a file path", f"{path} (an existing folder)")
    return path


def _read(args: argparse.Namespace, path: str, labels: str | None) -> ClassifierOutputs:
    from calibkit.predfile import load_predictions

    if args.scores_key and not args.kind:
        raise InputError("--scores-key", "--kind logits or --kind probs beside it", "no --kind")
    key = {"logits_key": None, "probs_key": None}
    if args.scores_key:
        key[f"{args.kind}_key"] = args.scores_key
    kind, labels_key = args.kind, args.labels_key
    return load_predictions(path, kind=kind, labels_path=labels, labels_key=labels_key, **key)


def _json_ready(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _json_ready(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_json_ready(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def _method_class(name: str, option: str) -> type[Calibrator]:
    try:
        return CALIBRATORS.get(name)
    except InputError as exc:
        raise _renamed(exc, option) from None


# ----- evaluate ----------------------------------------------------------------------------
def cmd_evaluate(args: argparse.Namespace) -> int:
    from calibkit.metrics import evaluate, reliability_stats
    from calibkit.plots import reliability_figure, save_figure
    from calibkit.tables import format_evaluation_table

    plot: Path | None = None
    if args.plot is None:
        plot = Path(Path(args.file).stem + ".reliability.png")
    elif args.plot.lower() != "none":
        plot = Path(args.plot)
    if plot is not None:
        _check_output(plot, "--plot")
    out = _read(args, args.file, args.labels)
    _say(f"evaluating {out.n_samples:,} samples ({args.n_boot} bootstrap resamples)")
    ev = evaluate(out, n_bins=args.n_bins, n_boot=args.n_boot, seed=args.seed, mode=args.mode)
    if plot is not None:
        stats = reliability_stats(out, n_bins=args.n_bins, mode=args.mode)
        fig = reliability_figure(stats, title=Path(args.file).name, ece=ev.values["ece"])
        save_figure(fig, plot)
    if args.format == "json":
        print(json.dumps(_json_ready(ev.to_dict()), indent=1, allow_nan=False))
    else:
        print(f"{args.file}: {out.n_samples:,} samples, {out.n_classes} classes, {out.kind}")
        print(format_evaluation_table(ev))
        if plot is not None:
            print(f"reliability diagram: {plot}")
    return 0


# ----- compare -----------------------------------------------------------------------------
def _method_list(text: str | None) -> list[str] | None:
    if text is None:
        return None
    names = [m.strip() for m in text.split(",") if m.strip()]
    if not names:
        raise InputError("--methods", "comma-separated method names", repr(text))
    for name in names:
        if name != "none":
            _method_class(name, "--methods")
    return names


def cmd_compare(args: argparse.Namespace) -> int:
    from calibkit.compare import compare, resolve_methods, split_outputs
    from calibkit.report import write_compare_report
    from calibkit.tables import format_comparison_summary

    pair = args.cal is not None or args.test is not None
    if pair and (args.file is not None or args.cal is None or args.test is None):
        raise InputError("FILE/--cal/--test", "either FILE or both --cal and --test", "a mix")
    if not pair and args.file is None:
        raise InputError("FILE", "a prediction file (or --cal and --test)", "neither")
    if pair and args.split is not None:
        raise InputError("--split", "no split with --cal and --test (already split)", "--split")
    if args.labels is not None and pair:
        raise InputError("--labels", "only beside FILE (use --cal-labels/--test-labels)", "--cal")
    methods = _method_list(args.methods)
    out_dir = _check_output(Path(args.out), "--out", folder=True)
    if pair:
        cal, test = _read(args, args.cal, args.cal_labels), _read(args, args.test, args.test_labels)
        source = f"calibration part {args.cal}, test part {args.test}"
    else:
        whole = _read(args, args.file, args.labels)
        size = 0.5 if args.split is None else args.split
        try:
            cal, test = split_outputs(whole, size, args.seed)
        except InputError as exc:
            raise _renamed(exc, "--split") from None
        source = f"{args.file}, split {cal.n_samples:,} / {test.n_samples:,} (seed {args.seed})"
    if len(set(cal.labels.tolist())) < 2:
        raise InputError(
            "calibration part", "at least 2 distinct labels", f"only label {int(cal.labels[0])}"
        )
    try:
        names = resolve_methods(methods, cal.n_classes)
    except InputError as exc:
        raise _renamed(exc, "--methods") from None
    numbers = {"n_bins": args.n_bins, "n_boot": args.n_boot, "seed": args.seed, "mode": args.mode}
    comp = compare(cal, test, names, source=source, progress=_say, **numbers)
    _say(f"writing the report to {out_dir}")
    write_compare_report(comp, out_dir, title=f"Calibration report: {source.split(',')[0]}")
    print(format_comparison_summary(comp))
    print(f"report: {out_dir / 'report.html'}")
    return 0


# ----- fit / apply -------------------------------------------------------------------------
def _build_calibrator(method: str, params: list[str]) -> Calibrator:
    klass = _method_class(method, "--method")
    accepted = [n for n in inspect.signature(klass.__init__).parameters if n != "self"]
    kwargs: dict[str, Any] = {}
    for item in params:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError("--param", "key=value", repr(item))
        if key.strip() not in accepted:
            valid = ", ".join(accepted) or "none"
            raise InputError("--param", f"a parameter of {method} ({valid})", repr(key.strip()))
        kwargs[key.strip()] = _param_value(value)
    try:
        return klass(**kwargs)
    except (TypeError, ValueError) as exc:
        if isinstance(exc, InputError):
            raise _renamed(exc, f"--param {exc.argument}") from None
        raise InputError("--param", f"valid parameters of {method}", str(exc)) from None


def cmd_fit(args: argparse.Namespace) -> int:
    from calibkit.calibrators import AutoCalibrator
    from calibkit.compare import summarize_params

    calibrator = _build_calibrator(args.method, args.param)
    output = _check_output(Path(args.output), "--output")
    out = _read(args, args.file, args.labels)
    calibrator.fit(out.as_logits(), out.labels)
    calibrator.save(output)
    print(f"fitted {args.method} on {out.n_samples:,} samples ({out.n_classes} classes)")
    if isinstance(calibrator, AutoCalibrator):
        print(calibrator.summary())
        calibrator = calibrator.chosen
    params = summarize_params(calibrator)
    for name, value in params.items():
        print(f"  {name} = {value:.6g}")
    if not params:
        print("  (fitted arrays only: see the JSON file)")
    print(f"calibrator: {output}")
    return 0


def cmd_apply(args: argparse.Namespace) -> int:
    from calibkit.metrics import ece
    from calibkit.predfile import save_predictions

    output = _check_output(Path(args.output), "--output")
    if output.suffix.lower() != ".npz":
        raise InputError("--output", "a file name ending in .npz", output.name)
    calibrator = Calibrator.load(args.calibrator)
    out = _read(args, args.file, args.labels)
    z = out.as_logits()
    probs = calibrator.predict_proba(z)
    logits = calibrator.transform(z) if calibrator.maps_logits else None
    save_predictions(output, out.labels, probs=probs, logits=logits)
    before, after = ece(out), ece(out.labels, probs=probs)
    print(f"applied {calibrator.name} to {out.n_samples:,} samples")
    print(f"ECE {100 * before:.2f}% -> {100 * after:.2f}% (15 bins)")
    print(f"calibrated predictions: {output}")
    return 0


# ----- demo / methods ----------------------------------------------------------------------
def cmd_demo(args: argparse.Namespace) -> int:
    from calibkit.demo import DemoSettings, run_demo

    out_dir = _check_output(Path(args.out), "--out", folder=True)
    methods = _method_list(args.methods)
    settings = DemoSettings(
        n_boot=args.n_boot, epochs=args.epochs, methods=None if methods is None else tuple(methods)
    )
    res = run_demo(out_dir, seed=args.seed, settings=settings, progress=_say)
    print(res.summary())
    print(f"report: {out_dir / 'report.html'}")
    return 0


def _int_list(text: str, option: str) -> list[int]:
    try:
        return [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise InputError(option, "comma-separated integers", repr(text)) from None


def cmd_study(args: argparse.Namespace) -> int:
    from calibkit.study import load_study_config, run
    from calibkit.study.config import DEFAULT_CONFIG

    path = Path(args.config) if args.config else DEFAULT_CONFIG
    cfg = load_study_config(path)
    cfg = cfg.select(
        models=[m.strip() for m in args.models.split(",")] if args.models else None,
        seeds=_int_list(args.seeds, "--seeds") if args.seeds else None,
        epochs=args.epochs,
        data_dir=str(Path(args.data_dir).resolve()) if args.data_dir else None,
    )
    out = _check_output(Path(args.out or f"study-{path.stem}"), "--out", folder=True)
    runs = run(cfg, out, progress=not args.quiet, log=_say, report_only=args.report_only)
    print(f"{len(runs.records)} runs; report: {out / 'report.html'}")
    return 0


def cmd_methods(args: argparse.Namespace) -> int:
    names = CALIBRATORS.names()
    width = max(len(n) for n in names)
    for name in names:
        klass = CALIBRATORS.get(name)
        line = (inspect.getdoc(klass) or "").split("\n")[0].replace("``", "")
        note = " [2 classes only]" if klass.binary_only else ""
        print(f"{name:<{width}}  {line}{note}")
    return 0
