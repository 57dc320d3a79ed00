"""``calibkit labelshift``: adapt a calibrated model to a target's class frequencies.

``--cal FILE`` (labelled) fits the calibrator (``--method``, default bcts), the source
priors and BBSE's confusion matrix; ``--target FILE``'s scores give the target priors,
estimated by ``--estimator`` (em or bbse) or given by ``--priors``. The target's labels are
optional (an ``.npz`` without a ``labels`` array, a ``.csv`` without a ``label`` column,
or a ``.npy`` without ``--target-labels``); with labels the report also scores the
unadapted, adapted and oracle posteriors, with bootstrap intervals (``--n-boot``,
``--level``, ``--seed``). ``--kind`` says what both files' scores are; ``--target-kind``
overrides it for the target (logits on one side, probabilities on the other).

An estimate to read with care (EM not converged, BBSE's confusion matrix singular: the
source priors kept, fewer target rows than classes) is said as a ``calibkit: warning:``
line and in the report (its verdict, a caution paragraph, ``results.json``'s ``caveats``).

The report opens with its verdict (how much adapting helped, or how far the priors moved);
with ``--out DIR`` the folder holds ``report.md``, ``report.html``, ``results.json`` and the
fitted adapter, ``adapter.json``: ``calibkit apply`` adapts new predictions with it.

``--method em`` / ``--method bbse`` (``--method`` names the calibrator) is refused with a
message naming ``--estimator``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from calibkit.cli.common import (
    check_input,
    check_method,
    finish,
    output_folder,
    read_outputs,
    read_scores,
    renamed,
    report_inputs,
    report_options,
)
from calibkit.cli.options import (
    FILES,
    Subparsers,
    add_format,
    add_input_options,
    add_numbers,
    add_out,
    binning_of,
    key_values,
    opt,
    resampling_of,
)
from calibkit.core import catalog
from calibkit.core.errors import InputError

if TYPE_CHECKING:
    from calibkit.calibrators.priors.estimators import PriorEstimator
    from calibkit.cli.common import Scores
    from calibkit.core.outputs import ClassifierOutputs
    from calibkit.workflows.label_shift import LabelShiftResult

#: The prior estimators (read from the catalog, so that the parser imports no numpy).
ESTIMATORS = catalog.PRIOR_ESTIMATORS
#: The fitted adapter in the report folder (``calibkit.reporting.label_shift_report``).
ADAPTER_FILE = "adapter.json"
#: The files of the report folder.
REPORT_FILES = ("report.md", "report.html", "results.json", ADAPTER_FILE)


def add_arguments(sub: Subparsers) -> None:
    """The ``labelshift`` subcommand and its options."""
    text = "estimate a target's class priors and adapt the calibrated posteriors to them"
    p = sub.add_parser("labelshift", help=text, description=FILES)
    opt(p, "--cal", "FILE", "labelled source predictions: the calibrator and priors' fit")
    opt(p, "--cal-labels", "L.npy", "labels beside a .npy --cal file")
    opt(p, "--target", "FILE", "target predictions to adapt to (labels optional)")
    opt(p, "--target-labels", "L.npy", "labels beside a .npy --target file (optional)")
    add_input_options(p, labels=False)
    what = "score kind of --target when it differs from --cal's (default: --kind's)"
    p.add_argument("--target-kind", choices=("logits", "probs"), help=what)
    what = "calibrator of logits fitted on --cal, or none (default %(default)s)"
    opt(p, "--method", "NAME", what, default="bcts")
    what = "prior estimator: " + " or ".join(ESTIMATORS) + " (default %(default)s)"
    opt(p, "--estimator", "NAME", what, choices=ESTIMATORS, default="em")
    what = "a parameter of the estimator, e.g. tol=1e-6 (em) or soft=true (bbse; repeatable)"
    opt(p, "--estimator-param", "KEY=VALUE", what, action="append", default=[])
    what = "known target priors P0,P1,... (>= 0, summing to 1) instead of estimating them"
    opt(p, "--priors", "P,P", what)
    add_numbers(p, mode=False)
    add_out(p, f"report.md, report.html, results.json and the fitted adapter ({ADAPTER_FILE})")
    add_format(p)


def estimator_of(args: argparse.Namespace) -> PriorEstimator:
    """``--estimator`` with its ``--estimator-param`` values (checked before any work)."""
    from calibkit.calibrators.priors.estimators import ESTIMATORS as LIBRARY
    from calibkit.core.validation import check_params

    params = key_values(args.estimator_param, "--estimator-param")
    klass = LIBRARY.get(args.estimator)
    try:
        return klass(**check_params(klass.param_constraints, params, args.estimator))
    except InputError as exc:  # a key the estimator does not declare, or a value refused
        where = "" if exc.argument == args.estimator else f" {exc.argument}"
        raise renamed(exc, "--estimator-param" + where) from None


def _priors(text: str | None, n_classes: int | None = None) -> list[float] | None:
    """``--priors`` as numbers, as many as the source's ``n_classes`` if given (checked before
    any fit; the rest of the rule, >= 0 and summing to 1, by the library)."""
    if text is None:
        return None
    try:
        priors = [float(v) for v in text.split(",")]
    except ValueError:
        raise InputError("--priors", "comma-separated numbers", repr(text)) from None
    if n_classes is not None and len(priors) != n_classes:
        expected = f"{n_classes} priors >= 0 summing to 1 (one per class of --cal)"
        raise InputError("--priors", expected, f"{len(priors)} values")
    return priors


def check_args(args: argparse.Namespace) -> None:
    """The inputs as ``--cal`` / ``--target``, each file existing, ``--method`` a calibrator
    of logits: before any work."""
    for value, option in ((args.cal, "--cal"), (args.target, "--target")):
        if value is None:
            raise InputError(option, "a prediction file", "none")
    for option in ("cal", "cal_labels", "target", "target_labels"):
        check_input(getattr(args, option), "--" + option.replace("_", "-"))
    if args.method in ESTIMATORS:
        raise InputError(
            "--method",
            f"a calibrator (--method now names the calibrator; use --estimator {args.method})",
            repr(args.method),
        )
    if args.method != "none":
        check_method(args.method, "--method", ("logits",))
    estimator_of(args)


def _read_target(args: argparse.Namespace) -> Scores:
    """``--target`` read as ``--target-kind`` says (``--kind`` by default); a kind its
    columns contradict is blamed on the option that gave it."""
    as_target = argparse.Namespace(**{**vars(args), "kind": args.target_kind or args.kind})
    try:
        return read_scores(as_target, args.target, args.target_labels, "--target")
    except InputError as exc:
        if exc.argument not in ("kind", "--kind"):
            raise
        if args.target_kind:
            raise renamed(exc, "--target-kind") from None
        hint = f"{exc.expected}, or --target-kind for the target's own kind"
        raise InputError("--kind", hint, exc.got) from None


def adapt(args: argparse.Namespace, source: ClassifierOutputs) -> LabelShiftResult:
    """:func:`~calibkit.workflows.label_shift.label_shift` of the parsed options, its
    complaints naming the options."""
    from calibkit.workflows.label_shift import label_shift

    target = _read_target(args)
    if target.n_classes != source.n_classes:
        expected = f"scores of the source's {source.n_classes} classes"
        raise InputError("--target", expected, f"{target.n_classes} classes")
    calibrator = None if args.method == "none" else args.method
    try:
        return label_shift(
            source,
            target.logits,
            target.labels,
            estimator=estimator_of(args),
            calibrator=calibrator,
            priors=_priors(args.priors),
            binning=binning_of(args),
            resampling=resampling_of(args),
        )
    except InputError as exc:
        names = {"priors": "--priors", "labels": "--cal labels", "target labels": "--target labels"}
        if exc.argument in names:
            raise renamed(exc, names[exc.argument]) from None
        raise


def run(args: argparse.Namespace) -> int:
    """Estimate (or take) the target priors, score with target labels, report."""
    _priors(args.priors)  # refused before any work
    check_args(args)
    folder = output_folder(args)
    source = read_outputs(args, args.cal, args.cal_labels)  # numpy only (no torch yet)
    _priors(args.priors, source.n_classes)
    from calibkit.reporting.label_shift_report import label_shift_report

    result = adapt(args, source)
    title = f"Label shift: {Path(args.cal).name} -> {Path(args.target).name}"
    inputs, options = report_inputs(args), report_options(args)
    report = label_shift_report(result, title=title, inputs=inputs, options=options)
    finish(report, args, folder)
    if folder is not None and args.format == "table":
        print(f"prior adapter: {folder / ADAPTER_FILE} (calibkit apply adapts with it)")
    return 0
