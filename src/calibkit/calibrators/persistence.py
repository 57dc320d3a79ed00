"""The one JSON document of every fitted post-hoc object, read and written in one place.

A fitted object (:class:`~calibkit.calibrators.fitted.PostHoc`: a calibrator, a conformal
predictor, a prior-shift adapter, Neural Clamping) is saved as one JSON document, never
pickle::

    {"calibkit": 3, "kind": "logits", "method": "temperature",
     "params": {...}, "state": {...}}

``kind`` is the object's kind (``logits``, ``groups``, ``model``, ``sets``, ``priors``: see
:data:`KINDS`), ``method`` its registered name, ``params`` its constructor parameters and
``state`` its fitted attributes (names ending in ``_``). numpy arrays are written exactly
(``{"__ndarray__": [...], "dtype": ..., "shape": [...]}``, floats in their shortest
round-trip form, non-finite entries as ``{"__float__": "inf"}``), a nested fitted object as
its own document. A model calibrator adds the name and sha256 of the file that holds its
tensors (``tensors_file``, ``tensors_sha256``).

Format 3 is the format of calibkit 0.1.0, the first release; the documents of the
development versions before it (format 2, and the ``{"calibkit_calibrator": 1, ...}``
headers) are refused by :func:`parse_document` as an unsupported format.

Trust: what a loaded file is checked against
    Every field is checked on load against what its fit can give (ranges, relations and
    the records ``fitted_with_`` and ``input_kind_``: :mod:`~calibkit.calibrators.fitted`),
    and a file that cannot be trusted gets one ``InputError`` naming the file and the
    field, never a raw exception.

    A digest of the parameters and state, written by ``save`` and checked by ``load``, was
    considered and not chosen: anyone can recompute an unkeyed digest, so it stops a
    careless edit but not a hostile, self-consistent file, which the bounds above must
    refuse anyway; and it would refuse every file another tool writes in this documented
    format. The records say which parameter a stored value depends on, and a refusal names
    it. No check can tell a hostile file that is consistent in every field (a conformal
    quantile and its score's parameters both edited, say) from a fit: that takes the
    calibration data.

>>> doc = {"calibkit": 3, "kind": "logits", "method": "temperature",
...        "params": {}, "state": {"n_classes_": 3}}
>>> parse_document(doc).method, parse_document(doc).kind
('temperature', 'logits')
>>> decode(encode({"w_": np.array([1.5, np.inf])}), "state")["w_"].tolist()
[1.5, inf]
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from calibkit.core import catalog
from calibkit.core.errors import InputError
from calibkit.core.validation import check_file_path, is_integer

#: The format version :func:`document` writes (3: the state records what its values were
#: computed with, ``fitted_with_`` and ``input_kind_``, where the method declares them).
FORMAT_VERSION = 3
#: The kinds of fitted object, each with what it maps (``calibkit methods`` lists them so).
KINDS = catalog.KINDS
#: The fields of a document, in the order :func:`document` writes them.
DOCUMENT_KEYS = ("calibkit", "kind", "method", "params", "state")
#: Extra fields of a model calibrator's document (its tensors live in a file beside it).
TENSOR_KEYS = ("tensors_file", "tensors_sha256")
#: The headers of the documents of the development versions before format 2, refused.
OLD_HEADERS = (
    "calibkit_calibrator",
    "calibkit_conformal",
    "calibkit_label_shift",
    "calibkit_neural_clamping",
)
#: Largest file read (a real one is far smaller; a larger one exhausts memory).
MAX_FILE_BYTES = 256 << 20
#: Deepest JSON nesting read (a real file, ``auto`` and nested calibrators included, is
#: under 12 levels deep).
MAX_DEPTH = 32


@dataclass(frozen=True)
class Document:
    """The fields of a parsed document (:func:`parse_document`), values still encoded.

    Attributes
    ----------
    kind : str
        The kind the document states.
    method : str
        The registered name.
    params, state : object
        The encoded parameters and fitted state.
    raw : dict
        The whole document, for the fields a kind adds (a model calibrator's tensor file).

    Examples
    --------
    >>> doc = parse_document({"calibkit": 3, "kind": "sets", "method": "conformal",
    ...                       "params": {}, "state": {}})
    >>> doc.method, doc.kind
    ('conformal', 'sets')
    """

    kind: str
    method: str
    params: Any
    state: Any
    raw: dict[str, Any]


def document(
    kind: str, method: str, params: dict[str, Any], state: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    """The JSON-ready document of a fitted object (arrays and nested objects encoded)."""
    return {
        "calibkit": FORMAT_VERSION,
        "kind": kind,
        "method": method,
        "params": encode(params),
        "state": encode(state),
        **extra,
    }


def parse_document(data: object) -> Document:
    """The fields of a calibkit document of format :data:`FORMAT_VERSION`; an InputError for
    anything else (a foreign JSON, an older or newer format, an unknown or missing field).

    >>> try:
    ...     parse_document({"calibkit": 2, "kind": "logits"})
    ... except InputError as exc:
    ...     print(exc.got)
    format version 2 (unsupported: written before calibkit 0.1.0)
    """
    if not isinstance(data, dict):
        raise InputError("document", "a calibkit JSON document", type(data).__name__)
    expected = f"a calibkit document of format version {FORMAT_VERSION}"
    old = [header for header in OLD_HEADERS if header in data]
    if old:
        raise InputError("document", expected, f"a {old[0]} document {_UNSUPPORTED}")
    if "calibkit" not in data:
        raise InputError("document", expected, "something else")
    version = data["calibkit"]
    if type(version) is not int or version != FORMAT_VERSION:
        got = f"version {version!r}"
        if type(version) is int and version < FORMAT_VERSION:
            got = f"format version {version} {_UNSUPPORTED}"
        raise InputError("document", expected, got)
    keys = DOCUMENT_KEYS + (TENSOR_KEYS if data.get("kind") == "model" else ())
    _check_fields(data, keys)
    kind = data["kind"]
    if kind not in KINDS:
        raise InputError("kind", "one of " + ", ".join(KINDS), repr(kind)[:60])
    method = data["method"]
    if not isinstance(method, str):
        raise InputError("method", "a registered name", repr(method)[:60])
    return Document(kind, method, data["params"], data["state"], data)


#: How an older document is refused.
_UNSUPPORTED = "(unsupported: written before calibkit 0.1.0)"


def _check_fields(data: dict[str, Any], keys: tuple[str, ...]) -> None:
    unknown = [key for key in data if key not in keys]
    missing = [key for key in keys if key not in data]
    if unknown or missing:
        got = f"unknown {unknown[0]!r}" if unknown else f"no {missing[0]!r}"
        raise InputError("document", "the fields " + ", ".join(keys), got)


def read_json_document(path: str | Path, what: str) -> tuple[Any, str]:
    """The JSON document at ``path`` and its name for messages (``"<what> <path>"``): one
    :class:`InputError` for a missing, irregular, unreadable, oversized (over
    :data:`MAX_FILE_BYTES`), non-JSON or too deeply nested file, and for a ``path`` that is
    no path (None, a file object, bytes, a dict, ''). Used by every ``load``.
    """
    p = check_file_path("path", path, from_json="calibkit.PostHoc.from_json")
    source = f"{what} {p}"
    if not p.exists():
        raise InputError(what, "an existing file", str(p))
    if not p.is_file():
        raise InputError(source, "a regular file", "something else")
    if p.stat().st_size > MAX_FILE_BYTES:
        limit = f"a file of at most {MAX_FILE_BYTES >> 20} MB"
        raise InputError(source, limit, f"{p.stat().st_size:,} bytes")
    try:
        return json.loads(p.read_bytes().decode("utf-8")), source
    except OSError as exc:
        raise InputError(source, "a readable file", str(exc.strerror)) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(source, "valid JSON", str(exc)) from None
    except RecursionError:
        raise InputError(
            source, f"JSON nested at most {MAX_DEPTH} levels deep", "deeper nesting"
        ) from None


def write_json_document(path: str | Path, doc: dict[str, Any]) -> None:
    """Write ``doc`` to ``path`` atomically (strict JSON: no NaN or infinity literals)."""
    from calibkit.io.atomic import atomic_write_text

    p = check_file_path("path", path)  # before Path(''), which is '.'
    atomic_write_text(p, json.dumps(doc, indent=1, allow_nan=False))


def encode(obj: Any) -> Any:
    """JSON-encode numpy arrays and scalars exactly (floats use shortest round-trip repr),
    non-finite floats as ``{"__float__": ...}`` and a fitted object as its document."""
    to_json = getattr(obj, "to_json", None)
    if callable(to_json) and hasattr(obj, "param_constraints"):
        return to_json()
    if isinstance(obj, np.ndarray):
        values = obj.tolist()
        if obj.dtype.kind == "f" and not np.isfinite(obj).all():
            values = _encode_floats(values)
        return {"__ndarray__": values, "dtype": str(obj.dtype), "shape": list(obj.shape)}
    if isinstance(obj, dict):
        return {str(k): encode(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [encode(v) for v in obj]
    if isinstance(obj, np.generic):
        return encode(obj.item())
    if isinstance(obj, float) and not math.isfinite(obj):
        return {"__float__": repr(obj)}
    return obj


def _encode_floats(values: Any) -> Any:
    if isinstance(values, list):
        return [_encode_floats(v) for v in values]
    return values if math.isfinite(values) else {"__float__": repr(values)}


def decode(obj: Any, name: str, depth: int = 0) -> Any:
    """The JSON value ``obj`` (field ``name``) with arrays and non-finite floats decoded
    (idempotent: decoded values pass through)."""
    if depth > MAX_DEPTH:
        raise InputError(name, f"JSON nested at most {MAX_DEPTH} levels deep", "deeper nesting")
    if isinstance(obj, dict):
        if "__ndarray__" in obj:
            return _decode_array(obj, name)
        if "__float__" in obj:
            return _decode_float(obj, name)
        return {k: decode(v, f"{name}.{k}", depth + 1) for k, v in obj.items()}
    if isinstance(obj, list):
        return [
            decode(v, f"{name}[{i}]", depth + 1) if isinstance(v, dict | list) else v
            for i, v in enumerate(obj)
        ]
    return obj


def _decode_float(obj: dict[str, Any], name: str) -> float:
    if set(obj) != {"__float__"} or obj["__float__"] not in ("nan", "inf", "-inf"):
        raise InputError(name, "a float encoded as nan, inf or -inf", repr(obj)[:60])
    return float(obj["__float__"])


def _decode_array(obj: dict[str, Any], name: str) -> np.ndarray:
    """An array encoded by :func:`encode`: float64 or int64 numbers of the stated shape."""
    if set(obj) != {"__ndarray__", "dtype", "shape"}:
        raise InputError(name, "an array as __ndarray__, dtype and shape", repr(sorted(obj)))
    dtype, shape, values = obj["dtype"], obj["shape"], obj["__ndarray__"]
    if dtype not in ("float64", "int64"):
        raise InputError(f"{name}.dtype", "float64 or int64", repr(dtype))
    if (
        not isinstance(shape, list)
        or len(shape) > 4
        or not all(is_integer(n) and n >= 0 for n in shape)
    ):
        raise InputError(f"{name}.shape", "a list of at most 4 lengths", repr(shape))
    if dtype == "float64":
        values = _decode_floats(values, name, len(shape))
    try:
        arr = np.array(values)
    except (ValueError, TypeError, OverflowError):
        arr = np.array(None)
    expected = f"{dtype} numbers of shape {tuple(shape)}"
    if arr.dtype.kind not in "ifb":
        raise InputError(name, expected, "values that are not all numbers")
    if arr.shape != tuple(shape):
        raise InputError(name, expected, f"shape {arr.shape}")
    if arr.size and (arr.dtype.kind not in ("if" if dtype == "float64" else "i")):
        raise InputError(name, expected, f"{arr.dtype} values")
    if _has_bool(values, len(shape)):
        raise InputError(name, expected, "true or false among the numbers")
    return arr.astype(dtype)


def _decode_floats(values: Any, name: str, ndim: int) -> Any:
    """``values`` with each ``{"__float__": ...}`` entry (at depth ``ndim``) decoded."""
    if ndim == 0:
        return _decode_float(values, name) if isinstance(values, dict) else values
    if not isinstance(values, list):
        return values  # refused by the shape check
    return [_decode_floats(v, name, ndim - 1) for v in values]


def _has_bool(values: Any, ndim: int) -> bool:
    """Whether a nested list of ``ndim`` levels (shape already checked) holds a JSON bool."""
    flat: Iterable[Any] = [values] if ndim == 0 else values
    for _ in range(ndim - 1):
        flat = itertools.chain.from_iterable(flat)
    return any(type(v) is bool for v in flat)
