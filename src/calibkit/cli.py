"""The ``calibkit`` command line.

Subcommands: ``evaluate`` (every metric of one prediction file, plus a reliability
diagram), ``compare`` (fit every calibrator on a calibration part, judge them on a test
part, write a report), ``fit`` and ``apply`` (one calibrator, saved as JSON), ``demo``
(the built-in example), ``methods`` (the registered calibrators). Prediction file layouts
are described in :mod:`calibkit.predfile`.

Any bad input (a :class:`~calibkit.errors.CalibkitError`, an unreadable or unwritable path,
a malformed command line) prints one line ``calibkit: error: <message>`` on stderr and
exits with status 2, leaving no output behind (every output is written atomically, after
the work is done). Results go to stdout; progress lines go to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import math
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from calibkit import __version__
from calibkit.calibrators import CALIBRATORS, Calibrator
from calibkit.errors import CalibkitError, InputError
from calibkit.outputs import ClassifierOutputs

PROG = "calibkit"
EXIT_INPUT = 2


class UsageError(CalibkitError):
    """The command line itself is malformed (reported like any other input error)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


def _say(message: str) -> None:
    print(f"{PROG}: {message}", file=sys.stderr, flush=True)


def _renamed(exc: InputError, argument: str) -> InputError:
    """The same complaint, naming the command-line option instead of the library argument."""
    return InputError(argument, exc.expected, exc.got)


# ----- argument types ----------------------------------------------------------------------
def _int_at_least(low: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        if not re.fullmatch(r"[+-]?\d+", text.strip()) or int(text) < low:
            raise argparse.ArgumentTypeError(f"expected an integer >= {low}, got {text!r}")
        return int(text)

    return parse


def _split_size(text: str) -> int | float:
    """``--split``: a count of calibration samples (``5000``) or a fraction (``0.5``)."""
    if re.fullmatch(r"\d+", text.strip()) and int(text) >= 1:
        return int(text)
    if re.fullmatch(r"0?\.\d+", text.strip()) and 0.0 < float(text) < 1.0:
        return float(text)
    raise argparse.ArgumentTypeError(f"expected a fraction in (0, 1) or a count, got {text!r}")


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


def _add_input_options(p: argparse.ArgumentParser) -> None:
    _opt(p, "--labels", "L.npy", "labels beside a .npy score file")
    kind = "score kind (never guessed): needed for .npy; picks probs in a file with both"
    p.add_argument("--kind", choices=("logits", "probs"), help=kind)
    _opt(p, "--scores-key", "KEY", "name of the score array (needs --kind)")
    _opt(p, "--labels-key", "KEY", "name of the label array (default labels)")


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


def cmd_methods(args: argparse.Namespace) -> int:
    names = CALIBRATORS.names()
    width = max(len(n) for n in names)
    for name in names:
        klass = CALIBRATORS.get(name)
        line = (inspect.getdoc(klass) or "").split("\n")[0].replace("``", "")
        note = " [2 classes only]" if klass.binary_only else ""
        print(f"{name:<{width}}  {line}{note}")
    return 0


# ----- the parser --------------------------------------------------------------------------
def _opt(p: argparse.ArgumentParser, flags: str, metavar: str, text: str, **kw: Any) -> None:
    """Add an option: ``flags`` space-separated, ``text`` its help (``%(default)s`` allowed)."""
    p.add_argument(*flags.split(), metavar=metavar, help=text, **kw)


def _add_numbers(p: argparse.ArgumentParser, *, bins: bool = True) -> None:
    if bins:
        _opt(p, "--n-bins", "N", "bins (default %(default)s)", type=_int_at_least(1), default=15)
    boot = "bootstrap resamples for 95%% intervals (0: none; default %(default)s)"
    _opt(p, "--n-boot", "N", boot, type=_int_at_least(0), default=1000)
    _opt(p, "--seed", "N", "random seed (default %(default)s)", type=_int_at_least(0), default=0)
    if bins:
        what = "binary problems: top_label or positive_class (default %(default)s)"
        _opt(
            p, "--mode", "MODE", what, choices=("top_label", "positive_class"), default="top_label"
        )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    about = "Measure and fix the confidence calibration of neural-network classifiers."
    parser = _Parser(prog=PROG, description=about)
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    files = "FILE: .npz, .csv, .pt, or .npy with --labels (layouts: see calibkit.predfile)"
    every = "comma-separated (default: every method that applies)"

    p = sub.add_parser("evaluate", help="every metric of one prediction file", description=files)
    p.add_argument("file", metavar="FILE")
    _add_input_options(p)
    _add_numbers(p)
    p.add_argument("--format", choices=("table", "json"), default="table")
    _opt(p, "--plot", "PNG", "reliability diagram (default <FILE stem>.reliability.png; 'none')")
    p.set_defaults(run=cmd_evaluate)

    text = "fit calibrators on one part, judge them on another"
    p = sub.add_parser("compare", help=text, description=files)
    p.add_argument("file", metavar="FILE", nargs="?", help="split into calibration / test")
    _opt(p, "--cal", "FILE", "calibration part (with --test)")
    _opt(p, "--test", "FILE", "test part (with --cal)")
    _opt(p, "--cal-labels", "L.npy", "labels beside a .npy --cal file")
    _opt(p, "--test-labels", "L.npy", "labels beside a .npy --test file")
    _add_input_options(p)
    _opt(
        p,
        "--split",
        "SIZE",
        "calibration part of FILE: fraction or count (default 0.5)",
        type=_split_size,
    )
    _opt(p, "--methods", "A,B,C", every)
    _opt(p, "--out", "DIR", "report folder (default %(default)s)", default="calibkit-report")
    _add_numbers(p)
    p.set_defaults(run=cmd_compare)

    p = sub.add_parser("fit", help="fit one calibrator, save it as JSON", description=files)
    p.add_argument("file", metavar="FILE")
    _opt(p, "--method", "NAME", "see 'calibkit methods'", required=True)
    _opt(p, "-o --output", "JSON", "default %(default)s", default="calibrator.json")
    _opt(
        p,
        "--param",
        "KEY=VALUE",
        "a parameter of the method (repeatable)",
        action="append",
        default=[],
    )
    _add_input_options(p)
    p.set_defaults(run=cmd_fit)

    text = "calibrate predictions with a saved calibrator"
    p = sub.add_parser("apply", help=text, description=files)
    p.add_argument("calibrator", metavar="CALIBRATOR.json")
    p.add_argument("file", metavar="FILE")
    out = "probs, labels (+ logits for logit maps); default %(default)s"
    _opt(p, "-o --output", "NPZ", out, default="calibrated.npz")
    _add_input_options(p)
    p.set_defaults(run=cmd_apply)

    p = sub.add_parser("demo", help="train an overconfident MLP on digits, compare the fixes")
    _opt(p, "--out", "DIR", "report folder (default %(default)s)", default="demo-report")
    _opt(p, "--epochs", "N", "default %(default)s", type=_int_at_least(1), default=100)
    _opt(p, "--methods", "A,B,C", every)
    _add_numbers(p, bins=False)
    p.set_defaults(run=cmd_demo)

    sub.add_parser("methods", help="list the calibrators").set_defaults(run=cmd_methods)
    return parser


def _message(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        where = f": {exc.filename}" if exc.filename else ""
        return f"{exc.strerror}{where}"
    return " ".join(str(exc).split())


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status (0, or 2 for bad input)."""
    try:
        args = build_parser().parse_args(argv)
        return int(args.run(args))
    except SystemExit as exc:  # --help and --version
        return exc.code if isinstance(exc.code, int) else 0
    except BrokenPipeError:  # stdout closed early (| head): stop quietly
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (CalibkitError, OSError) as exc:
        print(f"{PROG}: error: {_message(exc)}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print(f"{PROG}: error: interrupted", file=sys.stderr)
        return 130
