"""Pieces every subcommand shares: messages, output checks, reading prediction files.

Errors are raised as :class:`~calibkit.core.errors.InputError` naming the command-line
option; :func:`calibkit.cli.main` turns them into one line and exit status 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from calibkit.core.errors import InputError
from calibkit.io.atomic import check_parent

if TYPE_CHECKING:
    import numpy as np

    from calibkit.calibrators import PostHoc
    from calibkit.core.outputs import ClassifierOutputs


def say(message: str) -> None:
    """A progress line on stderr (results go to stdout)."""
    print(f"calibkit: {message}", file=sys.stderr, flush=True)


def renamed(exc: InputError, argument: str) -> InputError:
    """The same complaint, naming the command-line option instead of the library argument."""
    return InputError(argument, exc.expected, exc.got)


def check_output(path: Path, option: str, *, folder: bool = False) -> Path:
    """Fail early, naming ``option``, when ``path`` cannot be written."""
    check_parent(path, option)
    if folder and path.exists() and not path.is_dir():
        raise InputError(option, "a folder path", f"{path} (an existing file)")
    if not folder and path.is_dir():
        raise InputError(option, "a file path", f"{path} (an existing folder)")
    return path


def check_output_file(
    path: Path, option: str, inputs: Sequence[str | None], *, force: bool = False
) -> Path:
    """Fail early unless ``path`` may be written: never an input, and an existing file only
    with ``--force`` (calibkit never replaces a file it was not told to)."""
    check_output(path, option)
    for given in inputs:
        if given is not None and _same_file(path, Path(given)):
            raise InputError(option, "a path other than the inputs", f"{path}, which is {given}")
    if path.exists() and not force:
        raise InputError(option, "a new file (or --force to replace it)", f"{path} exists")
    return path


def _same_file(a: Path, b: Path) -> bool:
    if a.exists() and b.exists():
        return os.path.samefile(a, b)
    return a.resolve() == b.resolve()


def read_outputs(args: argparse.Namespace, path: str, labels: str | None) -> ClassifierOutputs:
    """The prediction file ``path`` as the input options of ``args`` describe it."""
    from calibkit.io.predictions import load_predictions

    if args.scores_key and not args.kind:
        raise InputError("--scores-key", "--kind logits or --kind probs beside it", "no --kind")
    key = {"logits_key": None, "probs_key": None}
    if args.scores_key:
        key[f"{args.kind}_key"] = args.scores_key
    kind, labels_key = args.kind, args.labels_key
    groups = getattr(args, "groups", None)
    return load_predictions(
        path,
        kind=kind,
        labels_path=labels,
        labels_key=labels_key,
        logits_key=key["logits_key"],
        probs_key=key["probs_key"],
        extra_columns=() if groups is None else (groups,),
    )


def read_groups(path: str, key: str, n_samples: int, *, check: bool = True) -> np.ndarray:
    """Each sample's group (a str array) from the array or column ``key`` of the prediction
    file ``path`` (``--groups``): a missing key, a wrong length, a missing value or (with
    ``check``) a group of one sample is blamed on ``--groups``."""
    from calibkit.core.groups import check_groups
    from calibkit.io.predictions import load_groups

    try:
        groups = load_groups(path, key, n_samples)
        if check:
            check_groups(groups, n_samples)
    except InputError as exc:
        raise renamed(exc, "--groups") from None
    return groups


def method_class(name: str, option: str) -> type[PostHoc]:
    """The calibrator class registered as ``name``; an unknown name is blamed on ``option``."""
    from calibkit.calibrators import CALIBRATORS

    try:
        klass = CALIBRATORS.get(name)
    except InputError as exc:
        raise renamed(exc, option) from None
    if klass.needs_model:  # Neural Clamping refits on the model's inputs, not on logits
        raise InputError(option, "a calibrator of logits", f"{name!r}, which takes the model")
    return klass


def method_list(text: str | None) -> list[str] | None:
    """``--methods A,B,C`` as checked names (``None``: the default methods)."""
    if text is None:
        return None
    names = [m.strip() for m in text.split(",") if m.strip()]
    if not names:
        raise InputError("--methods", "comma-separated method names", repr(text))
    for name in names:
        if name != "none":
            method_class(name, "--methods")
    return names
