"""``calibkit compare``: fit calibrators on a calibration part, judge them on a test part.

``--groups KEY`` reads one group per sample from FILE (or from ``--cal`` and ``--test``),
carried through the same split as the rows (stratified by label; the groups follow their
rows, so each is split about in proportion, not exactly). Every calibrator then gets its
per-group results on the test part, the calibrators that take the groups (group-wise
temperature scaling, multicalibration) join the default methods, and the report gains a
"Calibration per group" section and a per-group reliability figure. Each group needs at
least 2 samples in each part.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from calibkit.cli.common import (
    check_inputs,
    finish,
    method_list,
    output_folder,
    read_groups,
    read_outputs,
    renamed,
    report_inputs,
    report_options,
)
from calibkit.cli.options import (
    EVERY_METHOD,
    FILES,
    Subparsers,
    add_cal_size,
    add_format,
    add_groups,
    add_input_options,
    add_numbers,
    add_out,
    binning_of,
    opt,
    resampling_of,
)
from calibkit.core.errors import InputError

if TYPE_CHECKING:
    from calibkit.workflows.comparison import Comparison

#: Library argument -> the option a refusal names.
_OPTIONS = {"cal_size": "--cal-size", "methods": "--methods", "groups": "--groups"}


def _check_sources(args: argparse.Namespace) -> bool:
    """Whether the input is a ``--cal`` / ``--test`` pair (else one FILE to split)."""
    pair = args.cal is not None or args.test is not None
    if pair and (args.file is not None or args.cal is None or args.test is None):
        raise InputError("FILE/--cal/--test", "either FILE or both --cal and --test", "a mix")
    if not pair and args.file is None:
        raise InputError("FILE", "a prediction file (or --cal and --test)", "neither")
    if pair and args.cal_size is not None:
        raise InputError("--cal-size", "no size with --cal and --test (already split)", "a size")
    if args.labels is not None and pair:
        raise InputError("--labels", "only beside FILE (use --cal-labels/--test-labels)", "--cal")
    return pair


def add_arguments(sub: Subparsers) -> None:
    """The ``compare`` subcommand and its options."""
    text = "fit calibrators on one part, judge them on another"
    p = sub.add_parser("compare", help=text, description=FILES)
    p.add_argument("file", metavar="FILE", nargs="?", help="split into calibration / test")
    parts = p.add_argument_group("already split", "the two parts as separate files, not FILE")
    opt(parts, "--cal", "FILE", "calibration part (with --test)")
    opt(parts, "--test", "FILE", "test part (with --cal)")
    opt(parts, "--cal-labels", "L.npy", "labels beside a .npy --cal file")
    opt(parts, "--test-labels", "L.npy", "labels beside a .npy --test file")
    add_input_options(p)
    add_cal_size(p, None, shown="0.5 of FILE")
    opt(p, "--methods", "A,B,C", EVERY_METHOD)
    add_out(p, "the report")
    add_format(p)
    add_numbers(p)
    add_groups(p, "per-group results for every method, and the group-aware calibrators")


def read_parts(args: argparse.Namespace) -> dict[str, Any]:
    """The outputs (``whole``, or ``cal`` and ``test``), their groups and where they came
    from, as :func:`~calibkit.workflows.compare.compare_parts` takes them."""
    if not _check_sources(args):
        whole = read_outputs(args, args.file, args.labels)
        groups = None
        if args.groups is not None:
            groups = read_groups(args.file, args.groups, whole.n_samples, args=args)
        source = str(args.file) + (f", groups {args.groups!r}" if groups is not None else "")
        return {"whole": whole, "groups": groups, "source": source}
    cal = read_outputs(args, args.cal, args.cal_labels)
    test = read_outputs(args, args.test, args.test_labels)
    groups_pair = None
    if args.groups is not None:
        cal_g = read_groups(args.cal, args.groups, cal.n_samples, check=False, args=args)
        test_g = read_groups(args.test, args.groups, test.n_samples, check=False, args=args)
        groups_pair = (cal_g, test_g)
    source = f"calibration part {args.cal}, test part {args.test}"
    source += f", groups {args.groups!r}" if groups_pair is not None else ""
    return {"cal": cal, "test": test, "groups": groups_pair, "source": source}


def _title(args: argparse.Namespace) -> tuple[str, str]:
    """The report's title and what its figures show (a file's name, not its path)."""
    if args.file is not None:
        return f"Calibration report: {args.file}", Path(args.file).name
    name = f"{Path(args.cal).name} / {Path(args.test).name}"
    return f"Calibration report: calibration part {args.cal}", name


def _compare(args: argparse.Namespace, methods: list[str] | None) -> Comparison:
    from calibkit.workflows.compare import compare_parts

    try:
        return compare_parts(
            **read_parts(args),
            cal_size=args.cal_size,
            methods=methods,
            binning=binning_of(args),
            resampling=resampling_of(args),
        )
    except InputError as exc:
        raise renamed(exc, _OPTIONS[exc.argument]) if exc.argument in _OPTIONS else exc from None


def run(args: argparse.Namespace) -> int:
    """Compare the methods and write the report folder."""
    _check_sources(args)
    check_inputs(args)
    # the group calibrators (kind groups) need each row's group
    methods = method_list(args.methods, ("logits", "groups") if args.groups else ("logits",))
    folder = output_folder(args)
    from calibkit.reporting.compare_report import compare_report

    comp = _compare(args, methods)
    title, name = _title(args)
    report = compare_report(
        comp,
        title=title,
        name=name,
        inputs=report_inputs(args),
        options=report_options(args),
    )
    return finish(report, args, folder)
