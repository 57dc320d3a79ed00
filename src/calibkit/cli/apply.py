"""``calibkit apply FITTED.json FILE``: apply any saved calibkit file to predictions.

The file is read by the one loader (:func:`calibkit.calibrators.load`), whatever its kind
(``calibkit.calibrators.persistence.KINDS``) and version:

- a calibrator (kind ``logits``; kind ``groups`` with ``--groups KEY``): the calibrated
  probabilities (and logits, for a map of logits), and the ECE before and after;
- a conformal predictor (kind ``sets``): the prediction sets as a boolean matrix ``sets``
  (N x K) with their sizes ``set_size``, beside the probabilities they come from; the
  coverage (with labels) and the mean set size;
- a prior-shift adapter (kind ``priors``): the probabilities adapted to its target priors
  (estimated from FILE itself when the adapter was saved unadapted).

A map that is not shift-invariant (vector and matrix scaling, MS-ODIR, also underneath a
conformal predictor, a prior adapter or ``auto``) fitted on logits gives other numbers on
probabilities: a file of probabilities (``--kind probs``, or its ``probs`` array) is
refused for it before any work, naming FILE (:func:`check_file_kind`); fitted on
probabilities, it takes either kind (the log-softmax of every row). A model calibrator
(kind ``model``, Neural Clamping) needs the model and its inputs, not a predictions file:
refused. FILE's labels are optional (an ``.npz`` without ``labels``, a
``.npy`` without ``--labels``): without them the output has none, and nothing is scored.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, cast

from calibkit.cli.common import (
    Scores,
    check_input,
    is_a,
    output_file,
    read_groups,
    read_scores,
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
)
from calibkit.core.errors import InputError

if TYPE_CHECKING:
    import numpy as np

    from calibkit.calibrators import (
        Calibrator,
        ConformalClassifier,
        PostHoc,
        PriorShiftAdapter,
    )

#: What ``calibkit apply`` reads: any file ``calibkit fit`` (or ``conformal`` / ``labelshift``
#: ``--out``) writes.
FITTED_FILE = "calibkit file"


def add_arguments(sub: Subparsers) -> None:
    """The ``apply`` subcommand and its options."""
    text = "apply a saved calibrator, conformal predictor or prior adapter to predictions"
    p = sub.add_parser("apply", help=text, description=FILES)
    what = "written by calibkit fit, or by calibkit conformal / labelshift --out"
    p.add_argument("calibrator", metavar="FITTED.json", help=what)
    p.add_argument("file", metavar="FILE")
    what = "probs, labels (+ logits for logit maps; + sets, set_size for conformal sets)"
    add_out(p, what, file="NPZ", short=True)
    add_force(p)
    add_input_options(p)
    add_groups(p, "needed by the group calibrators (kind groups)")


def read_fitted(path: str) -> PostHoc:
    """The fitted object saved in ``path``, of any kind but ``model`` (refused, saying why)."""
    from calibkit.calibrators.fitted import load_document
    from calibkit.calibrators.persistence import parse_document, read_json_document

    data, source = read_json_document(path, FITTED_FILE)
    try:
        doc = parse_document(data)
    except InputError:
        doc = None  # load_document says what is wrong, naming the file and the field
    if doc is not None and doc.kind == "model":
        raise InputError(
            source,
            "a calibrator, conformal predictor or prior adapter applied to predictions",
            f"a saved {doc.method!r}, of kind 'model': it needs the model and its inputs "
            "(calibkit.load(path, model=...) in Python)",
        )
    return load_document(data, source)


def check_file_kind(fitted: PostHoc, kind: str, option: str, source: str) -> None:
    """Refuse a file of probabilities (``kind``, its declared kind, is ``"probs"``) for
    ``fitted`` (read from ``source``) whose map was fitted on logits and is not
    shift-invariant (:meth:`~calibkit.calibrators.fitted.PostHoc.fitted_input_kind`): one
    InputError naming ``option`` (``FILE <path>``). Nothing is read from the values."""
    if kind == "probs" and fitted.fitted_input_kind() == "logits":
        raise InputError(
            option,
            f"logits: the map of {source} ({fitted.name!r}) was fitted on logits and is not "
            "shift-invariant, so it gives other numbers on probabilities (fit it on "
            "probabilities, or give the logits)",
            "probabilities",
        )


def run(args: argparse.Namespace) -> int:
    """Apply the saved object and write the result (``.npz``); print its one-line summary."""
    inputs = [args.calibrator, args.file, args.labels]
    output = output_file(args, inputs, ".npz")
    check_input(args.calibrator, FITTED_FILE)
    check_input(args.file, "FILE", getattr(args, "layout", None) == "lm-eval")
    check_input(args.labels, "--labels")
    # the paths checked, the loader and the method's module imported (torch only for a
    # method that uses it)
    from calibkit.calibrators import Calibrator

    fitted = read_fitted(args.calibrator)
    if fitted.kind == "groups" and args.groups is None:
        expected = "the key of each row's group (a group calibrator maps each group its way)"
        raise InputError("--groups", expected, f"none for {fitted.name!r}")
    if fitted.kind != "groups" and args.groups is not None:
        expected = f"no --groups for {fitted.name!r}, a {fitted.kind} kind"
        raise InputError("--groups", expected, repr(args.groups))
    rows = read_scores(args, args.file, args.labels)
    if rows.n_classes != fitted.n_classes_:
        expected = f"{fitted.n_classes_} columns, as {args.calibrator} was fitted on"
        raise InputError(f"FILE {args.file}", expected, f"{rows.n_classes} columns")
    check_file_kind(fitted, rows.kind, f"FILE {args.file}", args.calibrator)
    if is_a(fitted, "ConformalClassifier"):
        _apply_sets(cast("ConformalClassifier", fitted), rows, output)
    elif is_a(fitted, "PriorShiftAdapter"):
        _apply_priors(cast("PriorShiftAdapter", fitted), rows, output, args.file)
    else:
        assert isinstance(fitted, Calibrator)
        groups = None
        if args.groups is not None:
            groups = read_groups(args.file, args.groups, rows.n_samples, check=False, args=args)
        _apply_calibrator(fitted, rows, output, groups)
    return 0


def _write(output: Path | None, rows: Scores, **arrays: np.ndarray) -> None:
    """``arrays`` and the labels (if any) to ``output``, atomically (nothing without it)."""
    import io

    import numpy as np

    from calibkit.io.atomic import atomic_write_bytes

    if output is None:
        return
    if rows.labels is not None:
        arrays["labels"] = rows.labels
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)  # type: ignore[arg-type]
    atomic_write_bytes(output, buf.getvalue())


def _ece_line(rows: Scores, probs: np.ndarray) -> None:
    from calibkit.metrics import ece

    if rows.outputs is not None and rows.labels is not None:
        before, after = ece(rows.outputs), ece(rows.labels, probs=probs)
        print(f"ECE {100 * before:.2f}% -> {100 * after:.2f}% (15 bins)")


def _apply_calibrator(
    calibrator: Calibrator, rows: Scores, output: Path | None, groups: np.ndarray | None
) -> None:
    """Calibrated probabilities (and logits, for a map of logits)."""
    from calibkit.io.predictions import save_predictions

    z = rows.logits
    metadata = {} if groups is None else {"groups": groups}
    probs = calibrator.predict_proba(z, **metadata)
    logits = calibrator.transform(z) if calibrator.maps_logits else None
    if output is not None and rows.labels is not None:
        save_predictions(output, rows.labels, probs=probs, logits=logits)
    else:
        _write(output, rows, probs=probs, **({} if logits is None else {"logits": logits}))
    print(f"applied {calibrator.name} to {rows.n_samples:,} samples{_unseen(calibrator, groups)}")
    _ece_line(rows, probs)
    print(written("calibrated predictions", output))


def _unseen(calibrator: Calibrator, groups: np.ndarray | None) -> str:
    """``" (N of them in groups unseen at fit time: what they get)"``, or ``""``."""
    import numpy as np

    codes, gets = getattr(calibrator, "group_codes", None), getattr(calibrator, "global_map", "")
    if groups is None or codes is None:
        return ""
    n = int(np.count_nonzero(codes(groups) < 0))
    return f" ({n:,} of them in groups unseen at fit time: {gets})" if n else ""


def _apply_sets(cp: ConformalClassifier, rows: Scores, output: Path | None) -> None:
    """The sets (bool N x K), their sizes and the probabilities; coverage and mean size."""
    import numpy as np

    sets = cp.predict_set(rows.logits)
    size = sets.sum(axis=1).astype(np.int64)
    _write(output, rows, sets=sets, set_size=size, probs=cp.predict_proba(rows.logits))
    score = cp.conformity_score.name
    print(f"applied {cp.name} ({score}, alpha {cp.alpha:g}) to {rows.n_samples:,} samples")
    mean = f"mean set size {float(size.mean()):.3g}"
    if rows.labels is not None:
        covered = float(sets[np.arange(rows.n_samples), rows.labels].mean())
        target = f"target {100 * (1 - cp.alpha):.1f}%"
        print(f"coverage {100 * covered:.2f}% ({target}), {mean}")
    else:
        print(f"{mean} (no labels: coverage not measured)")
    print(written("prediction sets", output))


def _apply_priors(adapter: PriorShiftAdapter, rows: Scores, output: Path | None, file: str) -> None:
    """The probabilities adapted to the adapter's target priors (estimated from ``file``
    when it was saved unadapted)."""
    how = "saved with the adapter"
    if not adapter.is_adapted:
        adapter.adapt(rows.logits)
        how = f"estimated by {adapter.estimator.name} from {file}: the adapter was saved unadapted"
    probs = adapter.predict_proba(rows.logits)
    _write(output, rows, probs=probs)
    print(f"applied {adapter.name} ({adapter.estimator.name}) to {rows.n_samples:,} samples")
    print(f"target priors {values_text(adapter.target_priors_)} ({how})")
    _ece_line(rows, probs)
    print(written("adapted predictions", output))
