"""Prediction files: read a classifier's scores and labels from disk, write them back.

Supported layouts (the score kind is never guessed from the values):

``.npz``
    Arrays ``logits`` or ``probs`` plus ``labels`` (names overridable with ``logits_key``,
    ``probs_key`` and ``labels_key``). A file holding both ``logits`` and ``probs`` is read
    as logits (softmax gives the probabilities, so nothing is lost); pass ``kind="probs"``
    to read its ``probs`` instead. The returned ``ClassifierOutputs.kind`` says which.
``.npy``
    A score matrix alone: the caller gives its ``kind`` and a ``labels_path`` (``.npy``).
``.csv``
    A header row, then one row per sample: a ``label`` column and score columns
    ``logit_0 .. logit_{K-1}`` or ``prob_0 .. prob_{K-1}`` (one kind per file, any column
    order, no other columns but those named by ``extra_columns``), comma-separated in
    standard CSV quoting (read by :func:`calibkit.io.csv_table.read_csv_table`: a quoted
    cell may hold commas, as pandas writes ``"Paris, FR"``), with decimal points (another
    separator or decimal commas are refused, named). Labels may be written as ``3`` or
    ``3.0``.
``.pt`` / ``.pth``
    A dict of tensors saved with ``torch.save``, same keys as ``.npz``. It is read with
    ``torch.load(weights_only=True)``: a pickle holding other objects is refused, never run.

Files of language-model evaluation tools (lm-evaluation-harness ``samples_*.jsonl`` or their
folder, chat responses with ``top_logprobs``, tables of option log-probabilities or of stated
confidences) are read with ``layout=`` (:data:`calibkit.io.lm_files.LAYOUTS`, never guessed
from the file): :func:`load_lm` gives each question's task besides the outputs, and
:func:`load_groups` reads its ``task`` as the groups.

Every array load refuses pickles (``allow_pickle=False``). Bad files raise
:class:`~calibkit.core.errors.InputError` naming the file.

>>> import tempfile
>>> tmp = tempfile.TemporaryDirectory()
>>> path = Path(tmp.name) / "p.npz"
>>> save_predictions(path, [0, 1], probs=[[0.9, 0.1], [0.2, 0.8]])
>>> out = load_predictions(path)
>>> out.kind, out.n_samples, out.labels.tolist()
('probs', 2, [0, 1])
>>> load_predictions(path, kind="logits")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
calibkit.core.errors.InputError: kind: expected 'probs' (p.npz holds ...), got 'logits'
>>> tmp.cleanup()
"""

from __future__ import annotations

import io
import re
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from calibkit.core.errors import InputError
from calibkit.core.groups import group_names
from calibkit.core.outputs import ClassifierOutputs, ScoreKind, check_labels, check_scores
from calibkit.core.validation import check_file_path
from calibkit.io.atomic import atomic_write_bytes
from calibkit.io.csv_table import missing_name, read_csv_table
from calibkit.io.lm_files import check_layout, read_lm_file
from calibkit.io.lm_outputs import LMOutputs
from calibkit.io.numpy_files import load_npy, load_npz

SUFFIXES: tuple[str, ...] = (".npz", ".npy", ".csv", ".pt", ".pth")
#: A score column's name: its prefix and class.
_SCORE_COLUMN = re.compile(r"(logit|prob)_(\d+)")


def load_predictions(
    path: str | Path,
    *,
    kind: ScoreKind | None = None,
    labels_path: str | Path | None = None,
    logits_key: str | None = None,
    probs_key: str | None = None,
    labels_key: str | None = None,
    extra_columns: tuple[str, ...] = (),
    layout: str | None = None,
    length_norm: str | None = None,
    letters: str | None = None,
) -> ClassifierOutputs:
    """Read labels and scores from a prediction file (layouts in the module docstring);
    ``extra_columns``: ``.csv`` columns left for another reader (:func:`load_groups`);
    ``layout`` (with ``length_norm`` and ``letters``): a language-model file, read by
    :func:`load_lm`.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = Path(folder) / "predictions.npz"
    ...     save_predictions(path, [0, 1], logits=[[2.0, 0.0], [0.0, 1.0]])
    ...     out = load_predictions(path)
    >>> out.kind, out.labels.tolist(), out.n_classes
    ('logits', [0, 1], 2)
    """
    p = check_file_path("path", path)
    if layout is not None or length_norm is not None or letters is not None:
        given = [k for k, v in (("labels_path", labels_path), ("logits_key", logits_key),
                 ("probs_key", probs_key), ("labels_key", labels_key)) if v]  # fmt: skip
        if given or extra_columns:
            got = ", ".join(given or ["extra_columns"])
            raise InputError("layout", "no labels file, key names or extra columns", got)
        out = load_lm(p, layout, length_norm=length_norm, letters=letters).outputs
        if kind is not None and kind != out.kind:
            got = f"{kind!r} for layout {layout!r}, whose scores are {out.kind}"
            raise InputError("kind", f"{out.kind!r} (or no kind)", got)
        return out
    suffix = p.suffix.lower()
    if suffix not in SUFFIXES:
        raise InputError("predictions file", "a file ending in " + ", ".join(SUFFIXES), p.name)
    if kind is not None and kind not in ("logits", "probs"):
        raise InputError("kind", "'logits' or 'probs'", repr(kind))
    _check_exists(p, "predictions file")
    if suffix == ".npy":
        if kind is None:  # a .npy holds one unnamed array: its kind cannot be read
            expected = f"'logits' or 'probs': what the scores of the .npy file {p.name} are"
            raise InputError("kind", expected, "none")
        if labels_path is None:
            raise InputError("labels_path", f"a labels file beside the .npy file {p.name}", "none")
        if logits_key or probs_key or labels_key:
            raise InputError("keys", "no key names for a .npy file (it holds one array)", "some")
        scores = load_npy(p)
        lp = check_file_path("labels_path", labels_path)
        _check_exists(lp, "labels file")
        labels = load_npy(lp)
        if kind == "logits" and are_probabilities(scores):
            expected = f"'probs' ({p.name}'s rows are probabilities: in [0, 1], summing to 1)"
            raise InputError("kind", expected, "'logits'")
        return _validate(scores, labels, kind, f"{kind} in {p}", f"labels in {lp}")
    if labels_path is not None:
        raise InputError(
            "labels file", "a labels file only beside a .npy score file", f"one beside {p.name}"
        )
    if suffix == ".csv":
        if logits_key or probs_key or labels_key:
            raise InputError("keys", "no key names for a .csv file (see its column layout)", "some")
        return _load_csv(p, kind, extra_columns)
    arrays = load_npz(p) if suffix == ".npz" else _load_torch(p)
    score_key, kind = _choose_scores(arrays, p, kind, logits_key, probs_key)
    lkey = labels_key or "labels"
    if lkey not in arrays:
        raise InputError(str(p), f"a {lkey!r} array", _keys_present(arrays))
    return _validate(arrays[score_key], arrays[lkey], kind, f"{score_key} in {p}", f"{lkey} in {p}")


def save_predictions(
    path: str | Path, labels: object, *, probs: object = None, logits: object = None
) -> None:
    """Write labels and scores to an ``.npz`` file atomically.

    ``labels`` may be a :class:`~calibkit.core.outputs.ClassifierOutputs` (its scores are written
    under its kind); otherwise give ``probs`` (written as float64), ``logits``, or both.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = Path(folder) / "scores.npz"
    ...     save_predictions(path, [1], probs=np.array([[0.25, 0.75]], dtype=np.float32))
    ...     sorted(np.load(path).files), np.load(path)["probs"].dtype
    (['labels', 'probs'], dtype('float64'))
    """
    p = check_file_path("path", path)
    if p.suffix.lower() != ".npz":
        raise InputError("output", "a file name ending in .npz", p.name)
    if isinstance(labels, ClassifierOutputs):
        if probs is not None or logits is not None:
            raise InputError("probs/logits", "nothing beside a ClassifierOutputs", "arrays")
        out = labels
        probs, logits = (out.scores, None) if out.kind == "probs" else (None, out.scores)
        labels = out.labels
    if probs is None and logits is None:
        raise InputError("probs/logits", "at least one of probs= or logits=", "neither")
    arrays: dict[str, np.ndarray] = {}
    if logits is not None:
        arrays["logits"] = check_scores(logits, "logits")
    if probs is not None:
        arrays["probs"] = np.asarray(check_scores(probs, "probs"), dtype=np.float64)
    shapes = {a.shape for a in arrays.values()}
    if len(shapes) > 1:
        raise InputError("probs/logits", "arrays of the same shape", " and ".join(map(str, shapes)))
    n, k = next(iter(shapes))
    arrays["labels"] = check_labels(labels, n_samples=n, n_classes=k)
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)  # type: ignore[arg-type]
    atomic_write_bytes(p, buf.getvalue())


#: The language-model file read last: (path, its size and time, layout, options) -> it.
_LAST_LM: dict[tuple[object, ...], LMOutputs] = {}


def load_lm(
    path: str | Path,
    layout: str | None,
    *,
    length_norm: str | None = None,
    letters: str | None = None,
) -> LMOutputs:
    """The language-model file (or ``lm-eval`` folder) ``path`` of ``layout``
    (:func:`calibkit.io.lm_files.read_lm_file`): its outputs and each question's task.
    The last one read is kept while the file is unchanged, so the outputs and the groups
    of one command read it once.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = Path(folder) / "options.jsonl"
    ...     _ = path.write_text('{"task": "arc", "answer": 1, "logprobs": [-2.0, -0.5]}' + chr(10))
    ...     out = load_predictions(path, layout="option-logprobs")
    ...     groups = load_groups(path, "task", 1, layout="option-logprobs")
    >>> out.kind, out.labels.tolist(), groups.tolist()
    ('logits', [1], ['arc'])
    """
    p = check_file_path("path", path)
    if layout is None:
        raise InputError("layout", "a layout beside length_norm or letters", "none")
    check_layout(layout)
    try:
        stat = p.stat()
        stamp: tuple[object, ...] = (stat.st_size, stat.st_mtime_ns)
        if p.is_dir():
            stamp += tuple((f.name, f.stat().st_mtime_ns) for f in sorted(p.iterdir()))
    except OSError:
        stamp = ()
    key = (str(p.resolve()), stamp, layout, length_norm, letters)
    if key in _LAST_LM:
        return _LAST_LM[key]
    lm = read_lm_file(p, layout, length_norm=length_norm, letters=letters)
    _LAST_LM.clear()
    if stamp:
        _LAST_LM[key] = lm
    return lm


def load_groups(
    path: str | Path,
    key: str,
    n_samples: int,
    *,
    layout: str | None = None,
    length_norm: str | None = None,
    letters: str | None = None,
) -> np.ndarray:
    """The array (``.npz``, ``.pt``) or column (``.csv``) ``key`` of a prediction file: one
    group (integer or string) per sample, checked by
    :func:`calibkit.core.groups.group_names` (an InputError naming ``groups``). With
    ``layout`` (a language-model file, :func:`load_lm`): ``key`` is ``task`` (each
    question's task) or, for ``lm-eval``, ``group`` (the harness group holding the task).

    >>> import tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = Path(tmp.name) / "p.csv"
    >>> rows = ["label,prob_0,prob_1,site", '0,0.9,0.1,"Paris, FR"', '1,0.2,0.8,"Paris, TX"']
    >>> _ = path.write_text(chr(10).join(rows))
    >>> load_predictions(path, extra_columns=("site",)).n_samples
    2
    >>> load_groups(path, "site", 2).tolist()
    ['Paris, FR', 'Paris, TX']
    >>> load_groups(path, "stie", 2)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calibkit.core.errors.InputError: groups: ... (its columns: label, prob_0 .. prob_1, site), ...
    >>> tmp.cleanup()
    """
    p = check_file_path("path", path)
    if layout is not None:
        lm = load_lm(p, layout, length_norm=length_norm, letters=letters)
        found = lm.group(key)
        if found is None:
            got = f"{key!r} (a {layout} file has {', '.join(lm.group_keys)})"
            raise InputError("groups", "the groups of the file: " + ", ".join(lm.group_keys), got)
        return group_names(found, n_samples, "groups")
    suffix = p.suffix.lower()
    if suffix == ".npy":
        raise InputError("groups", "a key of a .npz, .pt or .csv file", "a .npy file")
    _check_exists(p, "predictions file")
    raw: object
    if suffix == ".csv":
        table = read_csv_table(p)
        at = table.column(key, "groups")
        raw = np.array([row[at] for row in table.rows], dtype=str)
    else:
        arrays = load_npz(p) if suffix == ".npz" else _load_torch(p)
        if key not in arrays:
            raise missing_name("groups", key, p, sorted(arrays), "array")
        raw = arrays[key]
    return group_names(raw, n_samples, "groups")


def load_unlabelled_csv(
    path: str | Path, kind: ScoreKind | None = None
) -> tuple[np.ndarray, ScoreKind] | None:
    """The scores and their kind of a ``.csv`` prediction file without a ``label`` column
    (rows whose labels are unknown: a label-shift target), or None for a file with one
    (:func:`load_predictions` reads it). ``kind``, if given, must be that of the columns.

    Examples
    --------
    >>> import tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = Path(tmp.name) / "target.csv"
    >>> _ = path.write_text("prob_1,prob_0" + chr(10) + "0.25,0.75" + chr(10))
    >>> scores, kind = load_unlabelled_csv(path)
    >>> scores.tolist(), kind
    ([[0.75, 0.25]], 'probs')
    >>> tmp.cleanup()
    """
    p = check_file_path("path", path)
    _check_exists(p, "predictions file")
    table = read_csv_table(p)
    names = table.names
    if "label" in names:
        return None
    _, cols, csv_kind = _csv_columns(p, ["label", *names])  # the score columns' layout
    if kind is not None and kind != csv_kind:
        raise InputError("kind", f"{csv_kind!r} (the columns of {p.name})", repr(kind))
    if not table.rows:
        raise InputError(str(p), "at least one data row after the header", "no rows")
    prefix = "logit" if csv_kind == "logits" else "prob"
    scores = table.numbers([c - 1 for c in cols])
    return np.asarray(check_scores(scores, csv_kind, name=f"{prefix}_* columns of {p}")), csv_kind


# ----- validation ------------------------------------------------------------------------
def _validate(
    scores: object, labels: object, kind: ScoreKind, scores_name: str, labels_name: str
) -> ClassifierOutputs:
    s = check_scores(scores, kind, name=scores_name)
    y = check_labels(
        labels,
        n_samples=s.shape[0],
        n_classes=s.shape[1],
        name=labels_name,
        scores_name=scores_name,
    )
    return ClassifierOutputs(labels=y, scores=s, kind=kind)


def _check_exists(p: Path, what: str) -> None:
    if not p.exists():
        raise InputError(what, "an existing file", f"{p} (not found)")
    if not p.is_file():
        raise InputError(what, "a regular file", f"{p} (a folder or special file)")


def _keys_present(arrays: Mapping[str, object]) -> str:
    return "keys " + ", ".join(sorted(arrays)) if arrays else "no arrays at all"


def _choose_scores(
    arrays: Mapping[str, object],
    p: Path,
    kind: ScoreKind | None,
    logits_key: str | None,
    probs_key: str | None,
) -> tuple[str, ScoreKind]:
    """The key and kind of the score array, from explicit keys, ``kind`` or the defaults."""
    if logits_key and probs_key:
        raise InputError("logits_key/probs_key", "at most one of them", "both")
    if logits_key or probs_key:
        key_kind: ScoreKind = "logits" if logits_key else "probs"
        if kind is not None and kind != key_kind:
            raise InputError("kind", f"{key_kind!r} (a {key_kind} key was given)", repr(kind))
        key = str(logits_key or probs_key)
        if key not in arrays:
            raise InputError(str(p), f"a {key!r} array", _keys_present(arrays))
        return key, key_kind
    if kind is not None:
        other = "probs" if kind == "logits" else "logits"
        if kind not in arrays and other in arrays:  # the other kind asked for
            expected = f"{other!r} ({p.name} holds a {other!r} array, no {kind!r})"
            raise InputError("kind", expected, repr(kind))
        if kind not in arrays:
            raise InputError(str(p), f"a {kind!r} array", _keys_present(arrays))
        return kind, kind
    if "logits" in arrays:  # preferred: logits hold everything probs do
        return "logits", "logits"
    if "probs" in arrays:
        return "probs", "probs"
    raise InputError(str(p), "a 'logits' or 'probs' array (or name the key)", _keys_present(arrays))


def are_probabilities(scores: np.ndarray) -> bool:
    """Whether every row of ``scores`` (2-D, two columns or more) is a distribution: what a
    file of probabilities given as logits holds (logits summing to 1 in every row are not
    met in practice)."""
    if scores.ndim != 2 or scores.shape[1] < 2 or scores.shape[0] == 0:
        return False
    if not np.issubdtype(scores.dtype, np.floating) or not np.isfinite(scores).all():
        return False
    sums = scores.sum(axis=1, dtype=np.float64)
    return bool((scores >= 0).all() and (scores <= 1).all() and np.allclose(sums, 1.0, atol=1e-6))


# ----- readers -----------------------------------------------------------------------------
def _load_torch(p: Path) -> dict[str, object]:
    """A dict of tensors, loaded without executing pickled code."""
    import torch

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            obj: Any = torch.load(p, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises several types for bad files
        text = str(exc)
        if "Weights only load failed" in text or "Unpickl" in type(exc).__name__:
            raise InputError(
                str(p),
                "a dict of tensors saved with torch.save",
                "a pickle with objects other than tensors (refused, not executed)",
            ) from None
        raise InputError(
            str(p),
            "a dict of tensors saved with torch.save",
            f"a truncated or corrupt file ({type(exc).__name__})",
        ) from None
    if not isinstance(obj, dict):
        raise InputError(str(p), "a dict of tensors", f"a {type(obj).__name__}")
    bad = [str(k) for k, v in obj.items() if not isinstance(v, torch.Tensor | np.ndarray)]
    if bad:
        raise InputError(str(p), "a dict whose values are tensors", f"other values at {bad}")
    return {str(k): v for k, v in obj.items()}


def _load_csv(p: Path, kind: ScoreKind | None, extra: tuple[str, ...] = ()) -> ClassifierOutputs:
    table = read_csv_table(p)
    names = table.names
    for name in extra:
        if name == "label" or _SCORE_COLUMN.fullmatch(name):
            got = f"{name!r} (read as the labels or scores)"
            raise InputError("extra_columns", "a column other than the labels and scores", got)
    skipped = {table.column(name, "extra_columns") for name in extra}
    kept = [i for i in range(len(names)) if i not in skipped]
    label_col, score_cols, csv_kind = _csv_columns(p, [names[i] for i in kept])
    label_col, score_cols = kept[label_col], [kept[i] for i in score_cols]
    if kind is not None and kind != csv_kind:
        raise InputError("kind", f"{csv_kind!r} (the columns of {p.name})", repr(kind))
    if not table.rows:
        raise InputError(str(p), "at least one data row after the header", "no rows")
    data = table.numbers([label_col, *score_cols])
    prefix = "logit" if csv_kind == "logits" else "prob"
    return _validate(
        data[:, 1:], data[:, 0], csv_kind, f"{prefix}_* columns of {p}", f"label column of {p}"
    )


def _csv_columns(p: Path, names: list[str]) -> tuple[int, list[int], ScoreKind]:
    """Index of the label column, indices of the score columns in class order, the kind."""
    layout = "a header 'label,logit_0,...,logit_{K-1}' or 'label,prob_0,...,prob_{K-1}'"
    if names.count("label") != 1:
        raise InputError(str(p), f"{layout} (one 'label' column)", f"header {names[:6]}")
    found: dict[str, dict[int, int]] = {"logit": {}, "prob": {}}
    for col, name in enumerate(names):
        if name == "label":
            continue
        prefix, _, idx = name.partition("_")
        if (
            prefix not in found
            or not (idx.isascii() and idx.isdigit())
            or int(idx) in found[prefix]
        ):
            raise InputError(str(p), layout, f"a column named {name!r}")
        found[prefix][int(idx)] = col
    kinds = [k for k, cols in found.items() if cols]
    if len(kinds) != 1:
        raise InputError(str(p), f"{layout} (one kind of score column)", f"header {names[:6]}")
    cols = found[kinds[0]]
    if sorted(cols) != list(range(len(cols))):
        raise InputError(str(p), f"{kinds[0]}_0 .. {kinds[0]}_{len(cols) - 1}", str(sorted(cols)))
    kind: ScoreKind = "logits" if kinds[0] == "logit" else "probs"
    return names.index("label"), [cols[i] for i in range(len(cols))], kind
