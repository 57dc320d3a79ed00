"""Pieces every subcommand shares: messages, output checks, reading prediction files.

Errors are raised as :class:`~calibkit.core.errors.InputError` naming the command-line
option; :func:`calibkit.cli.main` turns them into one line and exit status 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from calibkit.core import catalog
from calibkit.core.errors import InputError, UnknownNameError
from calibkit.io.atomic import check_parent, refuse_link, refuse_special

if TYPE_CHECKING:
    import numpy as np

    from calibkit.calibrators import PostHoc
    from calibkit.core.outputs import ClassifierOutputs
    from calibkit.reporting.writer import Report


#: Most values a summary line shows of a per-class array (priors, thresholds).
SHOWN = 10

#: The kinds (``calibkit.calibrators.persistence.KINDS``) a consumer of predictions files
#: calibrates with: calibrators of logits, and those that also take each row's group.
CALIBRATOR_KINDS = ("logits", "groups")


def say(message: str) -> None:
    """A progress line on stderr (results go to stdout)."""
    print(f"calibkit: {message}", file=sys.stderr, flush=True)


def renamed(exc: InputError, argument: str) -> InputError:
    """The same complaint, naming the command-line option instead of the library argument
    (an unknown name keeps its suggestion)."""
    if isinstance(exc, UnknownNameError):
        return UnknownNameError(argument, exc.name, exc.valid)
    return InputError(argument, exc.expected, exc.got)


def check_name(name: str, option: str, valid: Sequence[str]) -> str:
    """``name`` if it is one of ``valid``, else :class:`UnknownNameError` naming ``option``
    and suggesting the nearest valid name ("did you mean ...?")."""
    if name not in valid:
        raise UnknownNameError(option, name, list(valid))
    return name


def check_method(name: str, option: str, kinds: tuple[str, ...] = CALIBRATOR_KINDS) -> None:
    """Refuse, before the registry (and torch) is imported, a method that does not exist
    (suggesting the nearest of ``kinds``) or is of another kind than ``kinds`` (then
    :func:`method_class` says why, importing the registry: a rare case)."""
    kind = catalog.kind_of(name)
    if kind is None:
        raise UnknownNameError(option, name, [*catalog.names(kinds), *catalog.aliases(kinds)])
    if kind not in kinds:
        method_class(name, option, kinds)


def check_output(path: Path, option: str, *, folder: bool = False) -> Path:
    """Fail early, naming ``option``, when ``path`` cannot be written: a missing or read-only
    parent, a symbolic link (calibkit never writes through one, nor replaces it), a special
    file (a device such as ``/dev/null``, a FIFO: never replaced, ``--force`` or not), a
    file where a folder is wanted or the reverse."""
    check_parent(path, option)
    refuse_link(path, option)
    refuse_special(path, option)
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


def output_file(
    args: argparse.Namespace, inputs: Sequence[str | None], suffix: str | None = None
) -> Path | None:
    """``--out`` (``-o``) of a command that writes one file, checked before any work
    (:func:`check_output_file`; ``suffix``: the ending it needs, e.g. ``.npz``), or None
    without it: then the command writes nothing (:data:`calibkit.cli.glossary.OUTPUT_RULE`)."""
    if getattr(args, "out", None) is None:
        return None
    path = check_output_file(Path(args.out), "--out", inputs, force=args.force)
    if suffix is not None and path.suffix.lower() != suffix:
        raise InputError("--out", f"a file name ending in {suffix}", path.name)
    return path


def written(what: str, output: Path | None) -> str:
    """The last line of a command that writes one file: where ``what`` went, or that it
    was not written (no ``--out``)."""
    if output is None:
        return f"{what}: not written (no -o/--out: printed only)"
    return f"{what}: {output}"


#: The value of a file option that asks for no file (``--plot none``), in any case.
NO_FILE = "none"


def file_or_none(value: str | None) -> str | None:
    """The path a file option names, or None when it is absent or :data:`NO_FILE`: one
    rule for every option whose file is optional (``--plot``, ``--smooth-plot``, ...)."""
    return None if value is None or value.strip().lower() == NO_FILE else value


def _same_file(a: Path, b: Path) -> bool:
    if a.exists() and b.exists():
        return os.path.samefile(a, b)
    return a.resolve() == b.resolve()


def read_outputs(args: argparse.Namespace, path: str, labels: str | None) -> ClassifierOutputs:
    """The prediction file ``path`` as the input options of ``args`` describe it (a binary
    ``--mode`` on more than 2 classes refused here, before any work)."""
    from calibkit.io.predictions import load_predictions

    if args.scores_key and not args.kind:
        raise InputError("--scores-key", "--kind logits or --kind probs beside it", "no --kind")
    key = {"logits_key": None, "probs_key": None}
    if args.scores_key:
        key[f"{args.kind}_key"] = args.scores_key
    kind, labels_key = args.kind, args.labels_key
    groups = getattr(args, "groups", None)
    lm = lm_options(args)
    if lm and getattr(args, "mode", None) == "top_label" and lm["layout"] == "stated-confidence":
        args.mode = "positive_class"  # a stated confidence: P(right) against right / wrong
    try:
        out = load_predictions(
            path,
            kind=kind,
            labels_path=labels,
            labels_key=labels_key,
            logits_key=key["logits_key"],
            probs_key=key["probs_key"],
            extra_columns=() if groups is None or lm else (groups,),
            **lm,
        )
    except InputError as exc:  # the groups' column, missing from a .csv: --groups's fault
        if exc.argument in _LM_ARGUMENTS:
            raise renamed(exc, _LM_ARGUMENTS[exc.argument]) from None
        if exc.argument in _FILE_ARGUMENTS:  # the kind or labels file a .npy needs, ...
            raise renamed(exc, _FILE_ARGUMENTS[exc.argument]) from None
        raise renamed(exc, "--groups") if exc.argument == "extra_columns" else exc from None
    if getattr(args, "mode", None) == "positive_class" and out.n_classes != 2:
        got = f"positive_class for {path}, which has {out.n_classes} classes"
        raise InputError("--mode", "top_label for more than 2 classes", got)
    return out


#: Library arguments of the prediction loader -> the options that set them.
_FILE_ARGUMENTS = {"kind": "--kind", "labels_path": "--labels"}
#: Library arguments of a language model's file -> the options that set them.
_LM_ARGUMENTS = {"layout": "--layout", "length_norm": "--length-norm", "letters": "--letters"}


def lm_options(args: argparse.Namespace) -> dict[str, str]:
    """``layout``, ``length_norm`` and ``letters`` as ``args`` give them (a language
    model's file), for :func:`calibkit.io.predictions.load_predictions`; empty without
    ``--layout`` (``--length-norm`` or ``--letters`` alone are refused)."""
    values = {k: getattr(args, k, None) for k in ("layout", "length_norm", "letters")}
    given = {k: str(v) for k, v in values.items() if v is not None}
    if given and "layout" not in given:
        first = _LM_ARGUMENTS[next(iter(given))]
        raise InputError(first, "--layout beside it (a language model's file)", "no --layout")
    return given


def check_input(path: str | None, option: str, folder: bool = False) -> None:
    """Fail early, naming ``option``, unless ``path`` (if given) is an existing file: the
    inputs are checked before anything heavy is imported or computed."""
    if path is None:
        return
    p = Path(path)
    if not p.exists():
        raise InputError(option, "an existing file", f"{p} (not found)")
    if not p.is_file() and not (folder and p.is_dir()):
        raise InputError(option, "a regular file", f"{p} (a folder or special file)")


@dataclass(frozen=True)
class Scores:
    """A prediction file's rows as logits, with its labels where it has them."""

    #: The logits (``as_logits()`` of the file's scores), ``(N, K)``.
    logits: np.ndarray
    #: The labels, or None for a file without them.
    labels: np.ndarray | None
    #: The file as read, when it has labels (its scores in their own kind).
    outputs: ClassifierOutputs | None
    #: The file's declared kind (``--kind``, or its array's key): "logits" or "probs".
    kind: str

    @property
    def n_samples(self) -> int:
        return int(self.logits.shape[0])

    @property
    def n_classes(self) -> int:
        return int(self.logits.shape[1])


def read_scores(
    args: argparse.Namespace, path: str, labels: str | None, option: str = "FILE"
) -> Scores:
    """The prediction file ``path`` as :func:`read_outputs` reads it, its labels optional:
    an ``.npz`` without a labels array, a ``.csv`` without a ``label`` column, or a ``.npy``
    without a labels file (with ``--kind``), gives scores only. A ``.pt`` needs labels."""
    import numpy as np

    from calibkit.core.outputs import ClassifierOutputs, check_scores
    from calibkit.io.numpy_files import load_npy, load_npz
    from calibkit.io.predictions import are_probabilities

    p = Path(path)
    labels_key = args.labels_key or "labels"
    if lm_options(args):  # a language model's file always holds its gold answers
        out = read_outputs(args, path, labels)
        return Scores(out.as_logits(), out.labels, out, out.kind)
    if p.suffix.lower() == ".npy" and labels is None:
        if not args.kind:  # as load_predictions says it, for a file with labels
            expected = f"'logits' or 'probs': what the scores of the .npy file {p.name} are"
            raise InputError("--kind", expected, "none")
        check_input(path, option)
        scores, kind = load_npy(p), args.kind
        if kind == "logits" and are_probabilities(scores):
            expected = f"'probs' ({p.name}'s rows are probabilities: in [0, 1], summing to 1)"
            raise InputError("--kind", expected, "'logits'")
    elif p.suffix.lower() == ".npz" and p.is_file() and labels_key not in load_npz(p):
        arrays = load_npz(p)
        kind = args.kind or ("logits" if "logits" in arrays else "probs")
        key = args.scores_key or kind
        other = "probs" if kind == "logits" else "logits"
        if not args.scores_key and key not in arrays and other in arrays:
            expected = f"{other!r} ({p.name} holds a {other!r} array, no {kind!r})"
            raise InputError("--kind", expected, repr(kind))
        if key not in arrays:
            keys = ", ".join(sorted(arrays)) or "none"
            raise InputError(str(p), "a 'logits' or 'probs' array (or name the key)", keys)
        scores = arrays[key]
    elif p.suffix.lower() == ".csv" and labels is None and (csv := _unlabelled_csv(args, p)):
        scores, kind = csv
    else:
        out = read_outputs(args, path, labels)
        return Scores(out.as_logits(), out.labels, out, out.kind)
    s = check_scores(scores, kind, name=f"{kind} in {p}")
    unlabelled = ClassifierOutputs(labels=np.zeros(s.shape[0], np.int64), scores=s, kind=kind)
    return Scores(unlabelled.as_logits(), None, None, kind)


def _unlabelled_csv(args: argparse.Namespace, p: Path) -> tuple[np.ndarray, str] | None:
    """The scores of a ``.csv`` without a ``label`` column (None for one with it)."""
    from calibkit.io.predictions import load_unlabelled_csv

    try:
        return load_unlabelled_csv(p, args.kind)
    except InputError as exc:
        raise renamed(exc, "--kind") if exc.argument == "kind" else exc from None


def read_groups(
    path: str,
    key: str,
    n_samples: int,
    *,
    check: bool = True,
    min_groups: int = 1,
    args: argparse.Namespace | None = None,
) -> np.ndarray:
    """Each sample's group (a str array) from the array or column ``key`` of the prediction
    file ``path`` (``--groups``; of a language model's file, as ``args``'s ``--layout``
    reads it: ``task``): a missing key, a wrong length, a missing value or (with ``check``)
    a group of one sample, or fewer than ``min_groups`` groups, is blamed on ``--groups``."""
    from calibkit.core.groups import check_groups
    from calibkit.io.predictions import load_groups

    try:
        lm = {} if args is None else lm_options(args)
        groups = load_groups(path, key, n_samples, **lm)
        if check:
            check_groups(groups, n_samples, min_groups=min_groups)
    except InputError as exc:
        raise renamed(exc, "--groups") from None
    return groups


#: Why a method of a kind is refused where it does not apply (the generic reason otherwise).
_KIND_REFUSED = {
    "model": "which takes the model and its inputs, not a predictions file "
    "(fit it in Python, or with calibkit study)",
}


#: The classes :func:`is_a` tells apart, by name -> their module and class name.
_CLASSES = {
    "ConformalClassifier": ("calibkit.calibrators.sets.conformal", "ConformalClassifier"),
    "PriorShiftAdapter": ("calibkit.calibrators.priors.label_shift", "PriorShiftAdapter"),
    "AutoCalibrator": ("calibkit.calibrators.logit.auto", "AutoCalibrator"),
}


def is_a(obj: object, name: str) -> bool:
    """``isinstance(obj, <the class name>)`` without importing its module (an instance of a
    class exists only once its module is imported): so that fitting or applying temperature
    scaling never imports the conformal scores, and with them torch.

    >>> is_a(object(), "ConformalClassifier")
    False
    """
    module, attribute = _CLASSES[name]
    loaded = sys.modules.get(module)
    return loaded is not None and isinstance(obj, getattr(loaded, attribute))


def method_class(
    name: str, option: str, kinds: tuple[str, ...] = CALIBRATOR_KINDS
) -> type[PostHoc]:
    """The class registered as ``name`` (or an alias), of one of ``kinds`` (asked of the
    registry); an unknown name (with the nearest of ``kinds``) or another kind is blamed on
    ``option``."""
    from calibkit.calibrators import CALIBRATORS
    from calibkit.calibrators.persistence import KINDS

    if name not in CALIBRATORS:
        raise renamed(UnknownNameError(CALIBRATORS.kind, name, CALIBRATORS.names(kinds)), option)
    kind = CALIBRATORS.kind_of(name)
    if kind not in kinds:
        why = _KIND_REFUSED.get(kind, f"of kind {kind!r} ({KINDS[kind]})")
        others = [k for k in KINDS if k not in kinds]
        wanted = "kind " + " or ".join(repr(k) for k in kinds)
        if len(others) == 1:
            wanted = f"any kind but {others[0]!r}"
        raise InputError(option, f"a method of {wanted}", f"{name!r}, {why}")
    return CALIBRATORS.get(name)


def method_list(text: str | None, kinds: tuple[str, ...] = CALIBRATOR_KINDS) -> list[str] | None:
    """``--methods A,B,C`` as checked names of ``kinds`` (``None``: the default methods)."""
    if text is None:
        return None
    names = [m.strip() for m in text.split(",") if m.strip()]
    if not names:
        raise InputError("--methods", "comma-separated method names", repr(text))
    for name in names:
        if name != "none":
            check_method(name, "--methods", kinds)
    return names


def values_text(values: Sequence[float] | np.ndarray) -> str:
    """Per-class values on one line (``0.5, 0.25, 0.25``), the first :data:`SHOWN` of more."""
    shown = ", ".join(f"{float(v):.6g}" for v in list(values)[:SHOWN])
    more = len(values) - SHOWN
    return shown + (f", ... ({more} more)" if more > 0 else "")


#: The options that name input files (``args`` attribute -> what the user typed).
INPUT_OPTIONS = {
    "file": "FILE",
    "labels": "--labels",
    "cal": "--cal",
    "cal_labels": "--cal-labels",
    "test": "--test",
    "test_labels": "--test-labels",
    "target": "--target",
    "target_labels": "--target-labels",
    "weights": "--weights",
    "config": "CONFIG",
}
#: Attributes of ``args`` that are not options of the run (where output goes, how shown).
_NOT_OPTIONS = {"command", "threads", "format", "out", "force", "quiet"}


def check_inputs(args: argparse.Namespace) -> None:
    """Fail early, naming its option, unless every input file ``args`` names
    (:data:`INPUT_OPTIONS`) exists: before anything heavy is imported or computed."""
    folder = getattr(args, "layout", None) == "lm-eval"  # a folder of samples files
    for attribute, option in INPUT_OPTIONS.items():
        check_input(getattr(args, attribute, None), option, folder and attribute != "config")


def report_inputs(args: argparse.Namespace) -> dict[str, str]:
    """The input files of ``args`` by the option that named them (``results.json``)."""
    given = {k: getattr(args, k, None) for k in INPUT_OPTIONS}
    return {INPUT_OPTIONS[k]: str(v) for k, v in given.items() if v is not None}


def report_options(args: argparse.Namespace) -> dict[str, object]:
    """Every resolved option of ``args`` but the inputs and where output goes."""
    skip = _NOT_OPTIONS | set(INPUT_OPTIONS)
    out: dict[str, object] = {}
    for k, v in sorted(vars(args).items()):
        if k not in skip:
            out[k] = str(v) if isinstance(v, Path) else list(v) if isinstance(v, tuple) else v
    return out


def output_folder(args: argparse.Namespace) -> Path | None:
    """``--out`` checked before any work (None without it): new, empty, or a folder calibkit
    wrote; an input's folder, or one holding foreign files, is refused."""
    from calibkit.io.atomic import check_replaceable_folder

    if getattr(args, "out", None) is None:
        return None
    return check_replaceable_folder(Path(args.out), "--out")


def lm_words(report: Report, args: argparse.Namespace) -> Report:
    """``report`` in the words of a language model's file (``--layout``: questions and
    options, or answers), with how each input file was read; unchanged without it."""
    lm = lm_options(args)
    if not lm:
        return report
    from calibkit.io.predictions import load_lm
    from calibkit.reporting.vocabulary import in_words

    notes: list[str] = []
    answers = "options"
    paths = [getattr(args, a, None) for a in ("file", "cal", "test")]
    for path in paths:
        if path is not None:
            read = load_lm(path, **lm)
            answers = read.answers
            tasks = len(read.task_names)
            head = (
                f"{path}: {read.n_questions:,} {'answers' if answers == 'stated' else 'questions'}"
            )
            head += f", {tasks} task{'s' * (tasks != 1)}, layout {read.layout}."
            notes += [head, *read.notes]
    keep = [str(p) for p in paths if p is not None]
    return in_words(report, answers, notes, keep=keep, groups=getattr(args, "groups", None))


def finish(report: Report, args: argparse.Namespace, folder: Path | None) -> int:
    """Write ``report`` under ``folder`` (``--out``, when given) and print it as
    ``--format`` says; the command's exit status (0)."""
    from calibkit.reporting.writer import print_report, results_document, write_report

    report = lm_words(report, args)
    fmt = getattr(args, "format", "table")
    # results.json's content (inputs hashed) once, for the folder and for --format json
    results = results_document(report) if folder is not None or fmt == "json" else None
    if folder is not None:
        say(f"writing the report to {folder}")
        write_report(report, folder, results=results)
    print_report(report, fmt, folder, results)
    return 0
