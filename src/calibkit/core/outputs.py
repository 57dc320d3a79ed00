"""Validated classifier outputs: the one place where user arrays enter calibkit.

Scores are never guessed from their values: the caller says whether they are ``probs``
(rows on the simplex) or ``logits`` (any real numbers; softmax gives the probabilities).
Inputs may be numpy arrays, torch tensors (any device; float16, bfloat16, float32, float64)
or nested lists. A 1-D score array is read as a binary problem: the positive class's
probability (``probs``) or its logit against a zero logit for class 0 (``logits``).

Probability rows must be non-negative and sum to 1 within ``PROBS_ATOL`` (``1e-2`` for
float16 and bfloat16 inputs, whose rounding is coarser). Accepted rows are kept as given,
except that an entry above 1 (possible within the tolerance) is clipped to 1, so that no
confidence, and no calibration error, ever exceeds 1.

>>> out = as_outputs([0, 1], probs=[[0.8, 0.2], [0.3, 0.7]])
>>> out.n_samples, out.n_classes
(2, 2)
>>> out.confidence.tolist(), out.predictions.tolist()
([0.8, 0.7], [0, 1])
>>> try:
...     as_outputs([0, 2], probs=[[0.8, 0.2], [0.3, 0.7]])
... except InputError as err:
...     print(err)
labels: expected integers in [0, 2) (the number of columns of probs), got a label of 2
"""

from __future__ import annotations

import numbers
import sys
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from calibkit.core.errors import InputError

ScoreKind = Literal["probs", "logits"]
FloatArray = npt.NDArray[np.floating[Any]]
IntArray = npt.NDArray[np.int64]

PROBS_ATOL = 1e-4
_LOW_PRECISION_ATOL = 1e-2


def _tensor_dtype(x: object) -> str | None:
    """The dtype name of a torch tensor (``"float16"``, ...), None for anything else.

    torch is never imported here: a tensor exists only if its caller imported torch.
    """
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(x, torch.Tensor):
        return None
    return str(x.dtype).removeprefix("torch.")


def to_numpy(x: object, name: str) -> np.ndarray:
    """Convert a tensor, array or nested list to a numpy array without copying if possible."""
    if _tensor_dtype(x) is not None:
        t = x.detach()  # type: ignore[attr-defined]
        if _tensor_dtype(t) in ("float16", "bfloat16"):
            t = t.float()
        return np.asarray(t.cpu().numpy())
    if isinstance(x, np.ndarray):
        return x.astype(np.float32) if x.dtype == np.float16 else x
    try:
        arr = np.asarray(x)
    except (ValueError, TypeError) as exc:
        raise InputError(name, "an array, a tensor or a nested list of numbers", str(exc)) from None
    if arr.dtype == object:
        raise InputError(name, "a rectangular array of numbers", "ragged or non-numeric data")
    return arr


def _describe(arr: np.ndarray) -> str:
    return f"an array of shape {arr.shape} and dtype {arr.dtype}"


def label_types(labels: object) -> tuple[str, str] | None:
    """What a list, tuple or array of labels holds that is no class index: ``("mixed", text)``
    when it mixes strings (or bytes) with numbers, ``("strings", text)`` when it holds strings
    only, ``text`` showing the first of each with its index; None for anything else.

    >>> label_types([0, "1", 2])
    ('mixed', "strings and numbers ('1' at index 1, 0 at index 0)")
    >>> label_types(np.array(["cat", "dog"])), label_types([0, 1])
    (('strings', "strings ('cat' at index 0)"), None)
    """
    if isinstance(labels, np.ndarray) and labels.dtype.kind in "OUS":
        values = labels.ravel().tolist()
    elif isinstance(labels, list | tuple):
        values = list(labels)
    else:
        return None
    first: dict[str, tuple[int, object]] = {}
    for i, v in enumerate(values):
        if isinstance(v, str | bytes | np.str_ | np.bytes_):
            first.setdefault("string", (i, v))
        elif isinstance(v, numbers.Number):
            first.setdefault("number", (i, v))
        else:
            return None
        if len(first) == 2:
            break

    def shown(kind: str) -> str:
        i, v = first[kind]
        return f"{v!r} at index {i}"

    if len(first) == 2:
        return "mixed", f"strings and numbers ({shown('string')}, {shown('number')})"
    return ("strings", f"strings ({shown('string')})") if "string" in first else None


def _refuse_label_types(labels: object, name: str) -> None:
    """An InputError naming ``name`` if ``labels`` are strings, or strings mixed with
    numbers (what :func:`label_types` finds); else nothing."""
    found = label_types(labels)
    if found is not None:
        how = "encode each class as its score column's index, 0 .. K-1"
        raise InputError(name, "integer class indices", f"{found[1]}: {how}")


def check_labels(
    labels: object,
    *,
    n_samples: int | None = None,
    n_classes: int | None = None,
    name: str = "labels",
    scores_name: str = "scores",
) -> IntArray:
    """Validate class labels: 1-D integers in ``[0, n_classes)``; returns int64.

    Floats are accepted only when every value is integral (as read from a CSV file).
    Strings, or strings mixed with numbers, are refused, saying so.
    """
    try:
        arr = to_numpy(labels, name)
    except InputError:
        _refuse_label_types(labels, name)  # the cause, where it is strings
        raise
    if arr.dtype.kind in "USO":  # strings, maybe beside numbers (numpy made strings of them)
        _refuse_label_types(labels, name)
    if arr.ndim == 2 and arr.shape[1] == 1:  # MedMNIST and others store (N, 1)
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise InputError(name, "a 1-D array of class indices", _describe(arr))
    if arr.size == 0:
        raise InputError(name, "at least one sample", "an empty array")
    if arr.dtype == bool:
        arr = arr.astype(np.int64)
    elif np.issubdtype(arr.dtype, np.floating):
        if not np.all(np.isfinite(arr)):
            raise InputError(name, "finite integer class indices", "NaN or infinity")
        if not np.all(arr == np.round(arr)):
            bad = arr[arr != np.round(arr)][0]
            raise InputError(name, "integer class indices", f"a non-integer value {bad!r}")
        if np.max(np.abs(arr)) >= 2.0**62:  # would overflow int64
            bad = arr[np.argmax(np.abs(arr))]
            raise InputError(name, "class indices that fit in int64", f"a label of {bad!r}")
    elif not np.issubdtype(arr.dtype, np.integer):
        raise InputError(name, "integer class indices", _describe(arr))
    elif arr.dtype.kind == "u" and int(arr.max()) > np.iinfo(np.int64).max:  # would wrap
        raise InputError(name, "class indices that fit in int64", f"a label of {arr.max()}")
    out = arr.astype(np.int64, copy=False)
    if n_samples is not None and out.shape[0] != n_samples:
        raise InputError(
            name, f"one label per row of {scores_name} ({n_samples})", f"{out.shape[0]} labels"
        )
    lo, hi = int(out.min()), int(out.max())
    if lo < 0 or (n_classes is not None and hi >= n_classes):
        bad = lo if lo < 0 else hi
        where = f" (the number of columns of {scores_name})" if n_classes is not None else ""
        limit = f"[0, {n_classes})" if n_classes is not None else "[0, inf)"
        raise InputError(name, f"integers in {limit}{where}", f"a label of {bad}")
    return out


def check_scores(scores: object, kind: ScoreKind, *, name: str | None = None) -> FloatArray:
    """Validate a score matrix of the stated ``kind``; returns float32 or float64, shape (N, K).

    A 1-D array is a binary problem (see the module docstring).
    """
    name = name or kind
    if kind not in ("probs", "logits"):
        raise InputError("kind", "'probs' or 'logits'", repr(kind))
    low_precision = (_tensor_dtype(scores) in ("float16", "bfloat16")) or (
        isinstance(scores, np.ndarray) and scores.dtype == np.float16
    )
    arr = to_numpy(scores, name)
    if arr.dtype == bool or not (
        np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)
    ):
        raise InputError(name, "a float array", _describe(arr))
    if not np.issubdtype(arr.dtype, np.floating) or arr.dtype not in (np.float32, np.float64):
        arr = arr.astype(np.float64)
    if arr.ndim == 1:
        outside = (arr < 0) | (arr > 1)  # NaN is reported below, as for 2-D input
        if kind == "probs" and np.any(outside):
            raise InputError(
                name, "1-D positive-class probabilities in [0, 1]", f"{arr[outside][0]:.6g}"
            )
        if kind == "probs":  # 1 - p in float64: exact for float32 p (float32 would round it)
            arr = np.stack([1.0 - arr.astype(np.float64), arr.astype(np.float64)], axis=1)
        else:
            arr = np.stack([np.zeros_like(arr), arr], axis=1)
    if arr.ndim != 2:
        raise InputError(
            name, "a 2-D array (samples x classes) or a 1-D binary score", _describe(arr)
        )
    if arr.shape[0] == 0:
        raise InputError(name, "at least one sample", "an empty array")
    if arr.shape[1] < 2:
        raise InputError(name, "at least 2 classes (columns)", _describe(arr))
    # A sum is finite only if every entry is (one fast pass); if it overflows, look closer.
    if not np.isfinite(arr.sum()) and not np.all(np.isfinite(arr)):
        n_bad = int(np.size(arr) - np.count_nonzero(np.isfinite(arr)))
        raise InputError(name, "finite values", f"{n_bad} NaN or infinite entries")
    if kind == "probs":
        atol = _LOW_PRECISION_ATOL if low_precision else PROBS_ATOL
        if arr.min() < 0:
            raise InputError(name, "non-negative probabilities", f"a minimum of {arr.min():.6g}")
        sums = arr.sum(axis=1, dtype=np.float64)
        worst = float(np.max(np.abs(sums - 1.0)))
        if worst > atol:
            raise InputError(
                name,
                f"rows summing to 1 within {atol:g} (pass logits= if these are logits)",
                f"a row summing to {sums[np.argmax(np.abs(sums - 1.0))]:.6g}",
            )
        if arr.max() > 1.0:  # accepted within the tolerance: a probability is never above 1
            arr = np.minimum(arr, 1.0)
    return arr


def top_label_from_logits(
    logits: FloatArray, *, chunk_elements: int = 1 << 16
) -> tuple[npt.NDArray[np.float64], IntArray]:
    """Top-label confidence (float64) and predicted class of softmax(logits), chunked.

    The confidence is ``1 / sum_j exp(z_j - z_max)``: one argmax, one exp and one sum per
    chunk of about ``chunk_elements`` logits (256 KB of float32 stays in L2 cache), at the
    input's precision (float32 in: relative error below 1e-6 with 1,000 classes). Narrow
    rows (fewer than 32 classes) are transposed chunk by chunk so that every reduction runs
    along contiguous memory. Ties go to the lowest class index; a NaN or +inf logit gives a
    NaN confidence. Single-threaded numpy: no thread pool to contend for on a busy machine.
    """
    z = np.ascontiguousarray(logits)
    n, k = z.shape
    conf = np.empty(n, dtype=np.float64)
    pred = np.empty(n, dtype=np.int64)
    rows = max(1, chunk_elements // k)
    wide = k >= 32
    buf = np.empty((min(rows, n), k) if wide else (k, min(rows, n)), dtype=z.dtype)
    with np.errstate(invalid="ignore"):  # inf - inf: a NaN confidence flags the row
        for start in range(0, n, rows):
            chunk = z[start : start + rows]
            out = conf[start : start + rows]
            if wide:
                e = buf[: chunk.shape[0]]
                j = chunk.argmax(axis=1)
                np.subtract(chunk, np.take_along_axis(chunk, j[:, None], axis=1), out=e)
                np.exp(e, out=e)
                np.divide(1.0, e.sum(axis=1), out=out, dtype=np.float64)
                pred[start : start + rows] = j
            else:  # transposed: reductions over k contiguous rows of length `rows`
                e = buf[:, : chunk.shape[0]]
                np.copyto(e, chunk.T)
                top = e.max(axis=0)
                p = pred[start : start + rows]
                p.fill(0)
                for c in range(k - 1, -1, -1):  # descending: the lowest index wins ties
                    p[e[c] == top] = c
                np.subtract(e, top, out=e)
                np.exp(e, out=e)
                np.divide(1.0, e.sum(axis=0), out=out, dtype=np.float64)
    return conf, pred


def log_softmax64(logits: FloatArray) -> npt.NDArray[np.float64]:
    """Row-wise log-softmax in float64."""
    z: npt.NDArray[np.float64] = np.asarray(logits, dtype=np.float64)
    z = z - z.max(axis=1, keepdims=True)
    out: npt.NDArray[np.float64] = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return out


@dataclass
class ClassifierOutputs:
    """Labels and scores of one classifier on one data set, validated.

    Derived quantities (confidence, predictions, float64 probabilities) are computed
    once, on first use; :func:`as_outputs` makes one.

    Examples
    --------
    >>> out = as_outputs([0, 1, 1], probs=[[0.9, 0.1], [0.3, 0.7], [0.6, 0.4]])
    >>> out.kind, out.n_samples, out.n_classes
    ('probs', 3, 2)
    >>> out.predictions.tolist(), out.confidence.tolist(), out.correct.tolist()
    ([0, 1, 0], [0.9, 0.7, 0.6], [1.0, 1.0, 0.0])
    """

    labels: IntArray
    scores: FloatArray
    kind: ScoreKind
    #: dtype name of the scores as passed in (``scores`` may be wider); None if unknown.
    source_dtype: str | None = None

    @property
    def input_dtype(self) -> str:
        """dtype name of the caller's scores (``"float16"`` and ``"bfloat16"`` included)."""
        return self.source_dtype or str(self.scores.dtype)

    @property
    def n_samples(self) -> int:
        return int(self.scores.shape[0])

    @property
    def n_classes(self) -> int:
        return int(self.scores.shape[1])

    @cached_property
    def _top(self) -> tuple[npt.NDArray[np.float64], IntArray]:
        if self.kind == "logits":
            return top_label_from_logits(self.scores)
        pred = np.argmax(self.scores, axis=1)
        conf = np.take_along_axis(self.scores, pred[:, None], axis=1)[:, 0]
        return conf.astype(np.float64), pred.astype(np.int64)

    @property
    def confidence(self) -> npt.NDArray[np.float64]:
        """Top-label confidence, float64."""
        return self._top[0]

    @property
    def predictions(self) -> IntArray:
        """Predicted class (argmax; ties to the lowest index)."""
        return self._top[1]

    @cached_property
    def correct(self) -> npt.NDArray[np.float64]:
        """1.0 where the prediction equals the label, else 0.0."""
        hit: npt.NDArray[np.float64] = (self.predictions == self.labels).astype(np.float64)
        return hit

    @cached_property
    def probs(self) -> npt.NDArray[np.float64]:
        """Class probabilities in float64."""
        if self.kind == "probs":
            return np.asarray(self.scores, dtype=np.float64)
        return np.exp(log_softmax64(self.scores))

    @cached_property
    def log_probs(self) -> npt.NDArray[np.float64]:
        """Log-probabilities in float64 (probabilities of 0 give ``log(tiny)``, not -inf)."""
        if self.kind == "logits":
            return log_softmax64(self.scores)
        tiny = np.finfo(np.float64).tiny
        return np.log(np.maximum(np.asarray(self.scores, dtype=np.float64), tiny))

    def as_logits(self) -> FloatArray:
        """Scores usable as logits: the logits themselves, or log-probabilities."""
        return self.scores if self.kind == "logits" else self.log_probs


def as_outputs(labels: object, probs: object = None, *, logits: object = None) -> ClassifierOutputs:
    """Validate ``labels`` with exactly one of ``probs`` or ``logits``.

    Examples
    --------
    >>> out = as_outputs([0, 1], logits=[[2.0, 0.0], [0.0, 0.0]])
    >>> out.kind, out.probs[1].tolist()  # equal logits: equal probabilities
    ('logits', [0.5, 0.5])
    >>> as_outputs([0, 1])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calibkit.core.errors.InputError: probs/logits: expected exactly one of ..., got neither
    """
    if isinstance(labels, ClassifierOutputs):
        if probs is not None or logits is not None:
            raise InputError("probs/logits", "nothing beside a ClassifierOutputs", "both")
        return labels
    if (probs is None) == (logits is None):
        got = "both" if probs is not None else "neither"
        raise InputError("probs/logits", "exactly one of probs= or logits=", got)
    kind: ScoreKind = "probs" if probs is not None else "logits"
    raw = probs if probs is not None else logits
    scores = check_scores(raw, kind)
    y = check_labels(labels, n_samples=scores.shape[0], n_classes=scores.shape[1], scores_name=kind)
    return ClassifierOutputs(labels=y, scores=scores, kind=kind, source_dtype=_dtype_name(raw))


def _dtype_name(x: object) -> str | None:
    if (name := _tensor_dtype(x)) is not None:
        return name
    if isinstance(x, np.ndarray) and np.issubdtype(x.dtype, np.floating):
        return str(x.dtype)
    return None
