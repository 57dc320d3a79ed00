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
from typing import TYPE_CHECKING

from calibkit.cli.common import method_list, read_groups, read_outputs, renamed, say
from calibkit.cli.options import (
    EVERY_METHOD,
    FILES,
    Subparsers,
    add_groups,
    add_input_options,
    add_numbers,
    opt,
    split_size,
)
from calibkit.core.errors import InputError
from calibkit.io.atomic import check_replaceable_folder

if TYPE_CHECKING:
    import numpy as np


def _check_sources(args: argparse.Namespace) -> bool:
    """Whether the input is a ``--cal`` / ``--test`` pair (else one FILE to split)."""
    pair = args.cal is not None or args.test is not None
    if pair and (args.file is not None or args.cal is None or args.test is None):
        raise InputError("FILE/--cal/--test", "either FILE or both --cal and --test", "a mix")
    if not pair and args.file is None:
        raise InputError("FILE", "a prediction file (or --cal and --test)", "neither")
    if pair and args.split is not None:
        raise InputError("--split", "no split with --cal and --test (already split)", "--split")
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
    text = "calibration part of FILE: fraction or count (default 0.5)"
    opt(p, "--split", "SIZE", text, type=split_size)
    opt(p, "--methods", "A,B,C", EVERY_METHOD)
    opt(p, "--out", "DIR", "report folder (default %(default)s)", default="calibkit-report")
    add_numbers(p)
    add_groups(p, "per-group results for every method, and the group-aware calibrators")


def _part_groups(groups: np.ndarray, part: str) -> np.ndarray:
    """``groups`` of one part, checked: every group there at least 2 samples."""
    from calibkit.core.groups import check_groups

    try:
        check_groups(groups, groups.shape[0])
    except InputError as exc:
        raise InputError("--groups", f"{exc.expected} of the {part}", exc.got) from None
    return groups


def run(args: argparse.Namespace) -> int:
    """Compare the methods and write the report folder."""
    from calibkit.reporting.compare_report import write_compare_report, written_before_manifests
    from calibkit.reporting.tables import format_comparison_summary, format_group_summary
    from calibkit.workflows.compare import compare, resolve_methods, split_indices, split_outputs

    pair = _check_sources(args)
    # the group calibrators (kind groups) need each row's group
    methods = method_list(args.methods, ("logits", "groups") if args.groups else ("logits",))
    out_dir = check_replaceable_folder(Path(args.out), "--out", written_before_manifests)
    groups = None
    if pair:
        cal = read_outputs(args, args.cal, args.cal_labels)
        test = read_outputs(args, args.test, args.test_labels)
        if args.groups is not None:
            cal_g = read_groups(args.cal, args.groups, cal.n_samples, check=False)
            test_g = read_groups(args.test, args.groups, test.n_samples, check=False)
            groups = (_part_groups(cal_g, "calibration part"), _part_groups(test_g, "test part"))
        source = f"calibration part {args.cal}, test part {args.test}"
        name = f"{Path(args.cal).name} / {Path(args.test).name}"
    else:
        whole = read_outputs(args, args.file, args.labels)
        size = 0.5 if args.split is None else args.split
        every = None
        if args.groups is not None:
            every = read_groups(args.file, args.groups, whole.n_samples)
        try:
            cal, test = split_outputs(whole, size, args.seed)
            cal_idx, test_idx = split_indices(whole.labels, size, args.seed)
        except InputError as exc:
            raise renamed(exc, "--split") from None
        if every is not None:
            cal_g = _part_groups(every[cal_idx], "calibration part")
            groups = (cal_g, _part_groups(every[test_idx], "test part"))
        source = f"{args.file}, split {cal.n_samples:,} / {test.n_samples:,} (seed {args.seed})"
        name = Path(args.file).name
    if groups is not None:
        source += f", groups {args.groups!r}"
    if len(set(cal.labels.tolist())) < 2:
        raise InputError(
            "calibration part", "at least 2 distinct labels", f"only label {int(cal.labels[0])}"
        )
    try:
        every_class = len(set(cal.labels.tolist())) == cal.n_classes
        names = resolve_methods(methods, cal.n_classes, cal.n_samples, every_class)
    except InputError as exc:
        raise renamed(exc, "--methods") from None
    numbers = {"n_bins": args.n_bins, "n_boot": args.n_boot, "seed": args.seed, "mode": args.mode}
    if groups is not None and methods is None:
        from calibkit.workflows.compare import group_methods

        names += [m for m in group_methods(cal.n_classes) if m not in names]
    cal_groups, test_groups = (None, None) if groups is None else groups
    comp = compare(
        cal,
        test,
        names,
        source=source,
        recommend=True,
        cal_groups=cal_groups,
        test_groups=test_groups,
        **numbers,
    )
    say(f"writing the report to {out_dir}")
    title = f"Calibration report: {source.split(',')[0]}"
    write_compare_report(comp, out_dir, title=title, name=name)
    print(format_comparison_summary(comp))
    if groups is not None:
        print(format_group_summary(comp))
    print(f"report: {out_dir / 'report.html'}")
    return 0
