"""Declarations of a fitted state, and the check of a loaded one.

A calibrator declares its fitted attributes as it declares its parameters: a mapping
``name -> Constraint`` (see :mod:`calibkit.core.validation`). Arrays are declared with
:class:`Array`, whose shape may name dimensions (``"k"`` for the classes, say): a name
given in ``dims`` must match, one not given is bound by the first array that uses it.
:func:`check_state` checks a whole loaded state, refusing unknown and missing fields.

>>> state = {"weights_": np.eye(2), "bias_": np.zeros(3)}
>>> declared = {"weights_": Array(shape=("k", "k")), "bias_": Array(shape=("k",))}
>>> check_state(declared, state, {})  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
calibkit.core.errors.InputError: bias_: expected ... of shape (k=2) ..., got shape (3,)
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np

from calibkit.core.errors import InputError
from calibkit.core.validation import Constraint, Constraints, describe_range

#: Lengths of named dimensions, e.g. ``{"k": 3, "n_bins": 15}`` (see :class:`Array`).
Dims = dict[str, int]


def _length(entry: int | str | None, dims: Dims, size: int) -> int | None:
    """The length ``entry`` requires (binding a new name to ``size``); None: any."""
    if entry is None or isinstance(entry, int):
        return entry
    base, _, plus = entry.partition("+")
    extra = int(plus) if plus else 0
    if base not in dims:
        dims[base] = size - extra
    return dims[base] + extra


class Array(Constraint):
    """A numpy array of ``dtype`` ("float64" or "int64") with a declared ``shape``.

    A ``shape`` entry is an int, ``None`` (any length) or the name of a dimension, with an
    optional ``+1``: a name found in the ``dims`` given to :meth:`check_shaped` must match;
    a name not found there is bound by this array, so a later one must agree. Values are
    finite, in ``[low, high]``, and with ``sorted=True`` non-decreasing along the last axis;
    ``nonempty`` refuses an array with no values.

    >>> Array(shape=("k", "k+1")).check_shaped("w", np.zeros((2, 3)), {"k": 2}).shape
    (2, 3)
    >>> b = Array(shape=("k",), low=0)
    >>> b.describe({"k": 2})
    'a float64 array of shape (k=2) of finite values >= 0'
    >>> b.check_shaped("b", np.array([-1.0, 0.0]), {"k": 2})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calibkit.core.errors.InputError: b: expected a float64 array ..., got -1.0 at index 0
    """

    def __init__(
        self,
        dtype: str = "float64",
        shape: Sequence[int | str | None] = (),
        *,
        low: float | None = None,
        high: float | None = None,
        sorted: bool = False,
        nonempty: bool = False,
        allow_inf: bool = False,
    ) -> None:
        self.dtype, self.shape, self.low, self.high = dtype, tuple(shape), low, high
        self.sorted, self.nonempty, self.allow_inf = sorted, nonempty, allow_inf

    def check(self, name: str, value: object) -> np.ndarray:
        return self.check_shaped(name, value, {})

    def check_shaped(self, name: str, value: object, dims: Dims) -> np.ndarray:
        """``value`` checked, its named dimensions looked up in (or added to) ``dims``."""
        if not isinstance(value, np.ndarray) or value.dtype != np.dtype(self.dtype):
            got = f"{value.dtype} array" if isinstance(value, np.ndarray) else type(value).__name__
            raise InputError(name, self.describe(dims), got)
        if value.ndim != len(self.shape):
            raise InputError(name, self.describe(dims), f"shape {value.shape}")
        for entry, size in zip(self.shape, value.shape, strict=True):
            if _length(entry, dims, size) not in (None, size):
                raise InputError(name, self.describe(dims), f"shape {value.shape}")
        if self.nonempty and not value.size:
            raise InputError(name, self.describe(dims), "an empty array")
        bad = np.isnan(value) if self.allow_inf else ~np.isfinite(value)
        if self.low is not None:
            bad |= value < self.low
        if self.high is not None:
            bad |= value > self.high
        if self.sorted and value.size:
            bad[..., 1:] |= np.diff(value, axis=-1) < 0
        if bad.any():
            at = tuple(int(i) for i in np.argwhere(bad)[0])
            where = ", ".join(map(str, at))
            raise InputError(name, self.describe(dims), f"{value[at].item()!r} at index {where}")
        return value

    def describe(self, dims: Dims | None = None) -> str:
        dims = dims or {}
        parts = [
            "any length" if e is None else str(e) if isinstance(e, int) else _named(e, dims)
            for e in self.shape
        ]
        text = f"a {self.dtype} array of shape ({', '.join(parts)})"
        finite = "non-NaN" if self.allow_inf else "finite"
        text += f" of {finite} values" if self.dtype == "float64" else " of values"
        text += describe_range(self.low, self.high)
        return text + (", non-decreasing" if self.sorted else "")


def _named(entry: str, dims: Dims) -> str:
    base, _, plus = entry.partition("+")
    return f"{entry}={dims[base] + int(plus or 0)}" if base in dims else entry


class ArrayList(Constraint):
    """A list of ``length`` arrays, each checked by ``item``; a dimension name bound by one
    item holds for that item only (``x[i]`` and ``y[i]`` of the same length, say)."""

    def __init__(self, item: Array, length: int | str) -> None:
        self.item, self.length = item, length

    def check(self, name: str, value: object) -> list[np.ndarray]:
        return self.check_shaped(name, value, {})

    def check_shaped(self, name: str, value: object, dims: Dims) -> list[np.ndarray]:
        """``value`` checked; item ``i`` binds its own names as ``name[i]`` in ``dims``."""
        if not isinstance(value, list):
            raise InputError(name, self.describe(dims), type(value).__name__)
        if _length(self.length, dims, len(value)) != len(value):
            raise InputError(name, self.describe(dims), f"a list of {len(value)}")
        out = []
        for i, item in enumerate(value):
            own = {k[: -len(f"[{i}]")]: n for k, n in dims.items() if k.endswith(f"[{i}]")}
            local = {**dims, **own}
            out.append(self.item.check_shaped(f"{name}[{i}]", item, local))
            dims.update({f"{k}[{i}]": n for k, n in local.items() if k not in dims})
        return out

    def describe(self, dims: Dims | None = None) -> str:
        length = self.length if isinstance(self.length, int) else _named(self.length, dims or {})
        return f"a list of {length} arrays, each {self.item.describe(dims)}"


class MappingOf(Constraint):
    """A dict from strings to values ``value`` accepts (each refused one named ``name.key``)."""

    def __init__(self, value: Constraint) -> None:
        self.value = value

    def check(self, name: str, value: object) -> dict[str, Any]:
        if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
            raise InputError(name, self.describe(), type(value).__name__)
        return {k: self.value.check(f"{name}.{k}", v) for k, v in value.items()}

    def describe(self) -> str:
        return f"a mapping from names to {self.value.describe()}"


def check_state(
    constraints: Constraints,
    state: Mapping[str, object],
    dims: Dims,
    prefix: str = "",
    optional: Collection[str] = (),
) -> dict[str, Any]:
    """The values of ``state`` checked against ``constraints``, every declared name present
    but those in ``optional``.

    Unlike :func:`check_params`, a missing name is refused (naming it), and :class:`Array`
    and :class:`ArrayList` constraints look up and bind dimensions in ``dims``. Values are
    checked in the declared order, so a dimension bound by one field holds for later ones.
    """
    unknown = [key for key in state if key not in constraints]
    if unknown:
        expected = "fields among " + ", ".join(constraints) if constraints else "no fields"
        raise InputError(prefix.rstrip(".") or "document", expected, ", ".join(map(repr, unknown)))
    out: dict[str, Any] = {}
    for key, constraint in constraints.items():
        if key not in state:
            if key in optional:
                continue
            raise InputError(prefix + key, constraint.describe(), "nothing: the field is missing")
        if isinstance(constraint, Array | ArrayList):
            out[key] = constraint.check_shaped(prefix + key, state[key], dims)
        else:
            out[key] = constraint.check(prefix + key, state[key])
    return out
