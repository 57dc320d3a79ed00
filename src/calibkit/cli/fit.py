"""``calibkit fit --method NAME FILE``: fit one post-hoc object of any kind and save it as JSON.

Every kind the registry holds but ``model`` (which needs the model and its inputs, not a
predictions file): a calibrator of logits; a group calibrator, with ``--groups KEY``; a
conformal predictor (``--method conformal --param alpha=0.1 --param conformity_score=raps
--param calibrator=temperature``; a score's parameters as JSON: ``--param
'conformity_score={"name": "raps", "penalty": 0.05}'``); a prior-shift adapter (``--method
prior_shift``), adapted to the unlabelled predictions of ``--target FILE`` when given, else
saved unadapted (``calibkit apply`` then estimates the target priors from the file it
adapts). ``calibkit apply`` reads every file this command writes.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from calibkit.cli.common import (
    Scores,
    check_input,
    check_method,
    is_a,
    method_class,
    output_file,
    read_groups,
    read_outputs,
    read_scores,
    renamed,
    values_text,
    written,
)
from calibkit.cli.options import (
    FILES,
    Subparsers,
    add_force,
    add_groups,
    add_input_options,
    add_out,
    opt,
    param_value,
)
from calibkit.core import catalog
from calibkit.core.errors import InputError
from calibkit.core.words import plural

if TYPE_CHECKING:
    import numpy as np

    from calibkit.calibrators import (
        AutoCalibrator,
        Calibrator,
        ConformalClassifier,
        PostHoc,
        PriorShiftAdapter,
    )
    from calibkit.core.validation import Constraint

#: The kinds ``calibkit fit`` fits: every kind of :data:`calibkit.core.catalog.KINDS` but
#: ``model`` (a model calibrator is fitted in Python, beside its model).
FIT_KINDS = tuple(kind for kind in catalog.KINDS if kind != "model")
#: Values of ``--param key=VALUE`` read as None, where the parameter accepts None.
NONE_WORDS = ("none", "null")


def _accepts_none(constraint: Constraint, key: str) -> bool:
    try:
        constraint.check(key, None)
    except InputError:
        return False
    return True


def build_calibrator(method: str, params: list[str], klass: type[PostHoc] | None = None) -> PostHoc:
    """A new object of ``method`` (``klass``, its class, if already looked up) with the
    ``key=value`` parameters ``params``.

    The valid names and values are those the method declares (its ``param_constraints``);
    ``none`` is None for a parameter that accepts it (``calibrator=none``).
    """
    from calibkit.core.validation import check_params

    klass = klass or method_class(method, "--method", FIT_KINDS)
    declared = klass.param_constraints
    kwargs: dict[str, Any] = {}
    given: dict[str, str] = {}  # each key's --param
    for item in params:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise InputError("--param", "key=value", repr(item))
        offered = [name for name in declared if name not in klass.python_only]
        if key not in offered:
            valid = ", ".join(offered) or "none"
            python = " (a Python-only parameter)" if key in klass.python_only else ""
            raise InputError("--param", f"a parameter of {method} ({valid})", repr(key) + python)
        if key in given:  # the last would win silently
            twice = f"two: {given[key]!r}, then {item!r}"
            raise InputError(f"--param {key}", "one value (each parameter given once)", twice)
        given[key] = item
        none = value.strip().lower() in NONE_WORDS and _accepts_none(declared[key], key)
        kwargs[key] = None if none else param_value(value)
    checked = check_params(declared, kwargs, "--param", prefix="--param ")
    try:
        return klass(**checked)
    except InputError as exc:  # a relation between parameters (e.g. t_min < t_max)
        raise renamed(exc, f"--param {exc.argument}") from None


def add_arguments(sub: Subparsers) -> None:
    """The ``fit`` subcommand and its options."""
    text = "fit a calibrator, conformal predictor or prior adapter; save it as JSON"
    p = sub.add_parser("fit", help=text, description=FILES)
    p.add_argument("file", metavar="FILE")
    opt(p, "--method", "NAME", "any kind but model: see 'calibkit methods'", required=True)
    add_out(p, "the fitted object (JSON)", file="JSON", short=True)
    text = "a parameter of the method (repeatable; 'none' for None)"
    opt(p, "--param", "KEY=VALUE", text, action="append", default=[])
    add_input_options(p)
    add_groups(p, "needed by the group calibrators (kind groups)")
    text = "prior_shift: unlabelled target predictions to adapt to (read like FILE)"
    opt(p, "--target", "FILE", text)
    add_force(p)


def _check_options(args: argparse.Namespace, kind: str) -> None:
    """``--groups`` exactly for the group kind, ``--target`` only for the prior adapter."""
    from calibkit.calibrators import CALIBRATORS

    if kind == "groups" and args.groups is None:
        expected = "the key of each row's group (a group calibrator fits per group)"
        raise InputError("--groups", expected, f"none for {args.method!r}")
    if kind != "groups" and args.groups is not None:
        takes = ", ".join(CALIBRATORS.names(kind="groups"))
        expected = f"no --groups for {args.method!r}, a {kind} kind (group calibrators: {takes})"
        raise InputError("--groups", expected, repr(args.groups))
    if kind != "priors" and args.target is not None:
        takes = ", ".join(CALIBRATORS.names(kind="priors"))
        expected = f"no --target for {args.method!r}, a {kind} kind (prior adapters: {takes})"
        raise InputError("--target", expected, args.target)


def run(args: argparse.Namespace) -> int:
    """Fit, save, and print what was fitted (its scalar parameters, thresholds or priors)."""
    inputs = [args.file, args.labels, args.target]
    output = output_file(args, inputs)
    check_input(args.file, "FILE", getattr(args, "layout", None) == "lm-eval")
    check_input(args.labels, "--labels")
    check_input(args.target, "--target")
    check_method(args.method, "--method", FIT_KINDS)
    # the paths and the name checked, the registry and the method's module imported (torch
    # only for a method that uses it)
    from calibkit.calibrators import CALIBRATORS

    klass = method_class(args.method, "--method", FIT_KINDS)
    kind = CALIBRATORS.kind_of(args.method)
    _check_options(args, kind)
    fitted = build_calibrator(args.method, args.param, klass)
    out = read_outputs(args, args.file, args.labels)
    z = out.as_logits()
    groups = (
        None
        if args.groups is None
        else read_groups(args.file, args.groups, out.n_samples, args=args)
    )
    target = None
    if args.target is not None:  # read (and checked) before any fit
        target = read_scores(args, args.target, None, "--target")
        if target.n_classes != out.n_classes:
            expected = f"scores of FILE's {out.n_classes} classes"
            raise InputError("--target", expected, f"{target.n_classes} classes")
    _fit(fitted, z, out.labels, groups, target, args.file, out.kind)
    if output is not None:
        fitted.save(output)
    _print_fitted(fitted, args, out.n_samples, out.n_classes, groups, output)
    return 0


def _print_fitted(
    fitted: PostHoc,
    args: argparse.Namespace,
    n_samples: int,
    n_classes: int,
    groups: np.ndarray | None,
    output: Path | None,
) -> None:
    """What was fitted, its parameters, and where it was saved (or that it was not)."""
    from calibkit.calibrators import Calibrator

    count = 0 if groups is None else len(set(groups.tolist()))
    where = "" if groups is None else f", {plural(count, 'group')} in {args.groups!r}"
    print(f"fitted {args.method} on {n_samples:,} samples ({n_classes} classes{where})")
    if is_a(fitted, "ConformalClassifier"):
        _print_sets(cast("ConformalClassifier", fitted))
        print(written("conformal predictor", output))
    elif is_a(fitted, "PriorShiftAdapter"):
        _print_priors(cast("PriorShiftAdapter", fitted), args.target)
        print(written("prior adapter", output))
    else:
        assert isinstance(fitted, Calibrator)
        _print_calibrator(fitted)
        print(written("calibrator", output))


def _fit(
    fitted: PostHoc,
    z: np.ndarray,
    labels: np.ndarray,
    groups: np.ndarray | None,
    target: Scores | None,
    file: str,
    kind: str,
) -> None:
    """Fit ``fitted`` as its kind takes it (groups, or the target to adapt to), declaring
    ``file``'s kind (``kind``: "logits", or "probs" for its log-probabilities) to the fit;
    a conformal predictor's calibration part (``file``'s rows) checked against its alpha
    first, before the calibrator's fit, offering what the command line takes. A target
    of probabilities is refused for a prior adapter whose map underneath was fitted on
    logits and is not shift-invariant (before the adaptation; nothing is written)."""
    from calibkit.calibrators import Calibrator
    from calibkit.cli.apply import check_file_kind

    if is_a(fitted, "ConformalClassifier"):
        try:
            sets = cast("ConformalClassifier", fitted)
            sets.check_calibration_size(labels, z.shape[1], remedy="a larger alpha")
        except InputError as exc:
            raise renamed(exc, f"FILE {file}") from None

    if is_a(fitted, "PriorShiftAdapter"):
        adapter = cast("PriorShiftAdapter", fitted)
        adapter.fit(z, labels, input_kind=kind)
        if target is not None:
            check_file_kind(adapter, target.kind, "--target", f"FILE {file}")
            adapter.adapt(target.logits)
    elif isinstance(fitted, Calibrator) and groups is not None:
        fitted.fit(z, labels, groups=groups, input_kind=kind)
    else:
        assert isinstance(fitted, Calibrator) or is_a(fitted, "ConformalClassifier")
        cast("Calibrator | ConformalClassifier", fitted).fit(z, labels, input_kind=kind)


def _print_calibrator(calibrator: Calibrator, indent: str = "  ") -> None:
    """Its scalar fitted parameters (for ``auto``: which one it chose, and that one's)."""
    from calibkit.workflows.methods import summarize_params

    if is_a(calibrator, "AutoCalibrator"):
        auto = cast("AutoCalibrator", calibrator)
        print(auto.summary())
        calibrator = auto.chosen
    params = summarize_params(calibrator)
    for name, value in params.items():
        print(f"{indent}{name} = {value:.6g}")
    if not params:
        print(f"{indent}(fitted arrays only: see the JSON file)")


def _print_sets(cp: ConformalClassifier) -> None:
    """Score, alpha, the threshold(s) and the calibrator underneath."""
    variant = ", randomized" if cp.randomized else ""
    target = f"target coverage {100 * (1 - cp.alpha):.1f}%"
    print(f"  score = {cp.conformity_score.describe()}{variant}, alpha = {cp.alpha:g} ({target})")
    rows = f"from {cp.n_calibration_:,} rows"
    if cp.mondrian:
        print(f"  thresholds = {values_text(cp.thresholds_)} (one per class, {rows})")
    else:
        print(f"  threshold = {float(cp.thresholds_[0]):.6g} ({rows})")
    if cp.calibrator_ is not None:
        print(f"  calibrator underneath: {cp.calibrator_.name}")
        _print_calibrator(cp.calibrator_, indent="    ")


def _print_priors(adapter: PriorShiftAdapter, target: str | None) -> None:
    """The calibrator underneath, the source priors, and the target priors if estimated."""
    if adapter.calibrator_ is not None:
        print(f"  calibrator underneath: {adapter.calibrator_.name}")
        _print_calibrator(adapter.calibrator_, indent="    ")
    print(f"  source priors = {values_text(adapter.source_priors_)}")
    if adapter.is_adapted:
        em = adapter.estimator.name == "em"
        iterations = f", {adapter.n_iter_} iterations" if em else ""
        how = f"estimated by {adapter.estimator.name} from {target}{iterations}"
        print(f"  target priors = {values_text(adapter.target_priors_)} ({how})")
    else:
        print(
            "  target priors: not estimated (no --target): saved unadapted; calibkit apply "
            "estimates them from the predictions it adapts"
        )
