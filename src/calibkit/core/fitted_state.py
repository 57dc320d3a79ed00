"""Declarations of a fitted state, and the check of a loaded one.

A calibrator declares its fitted attributes as it declares its parameters: a mapping
``name -> Constraint`` (see :mod:`calibkit.core.validation`). Arrays are declared with
:class:`Array`, whose shape may name dimensions (``"k"`` for the classes, say): a name
given in ``dims`` must match, one not given is bound by the first array that uses it.
A fitted value the fit keeps within a range its parameters give (a temperature searched
in ``[t_min, t_max]``) declares that range with :class:`Param` ends (:class:`InRange`, or
an :class:`Array`'s ``low`` and ``high``): a loaded value is checked against the range of
the loaded parameters, so a hand-edited value outside it is refused by name before any
code computes with it. :func:`check_state` checks a whole loaded state, refusing unknown
and missing fields.

>>> t = InRange(Param("t_min", log=True), Param("t_max", log=True))
>>> t.describe()
'a finite number in [log t_min, log t_max]'
>>> t.bind({"t_min": 1.0, "t_max": 10.0}).check("log_temperature_", 1000.0)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
calibkit.core.errors.InputError: log_temperature_: expected ... in [log t_min = 0, ...], got 1000.0

>>> state = {"weights_": np.eye(2), "bias_": np.zeros(3)}
>>> declared = {"weights_": Array(shape=("k", "k")), "bias_": Array(shape=("k",))}
>>> check_state(declared, state, {})  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
calibkit.core.errors.InputError: bias_: expected ... of shape (k=2) ..., got shape (3,)
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np

from calibkit.core.errors import InputError
from calibkit.core.validation import Constraint, Constraints, Real, describe_range, is_number

#: Lengths of named dimensions, e.g. ``{"k": 3, "n_bins": 15}`` (see :class:`Array`).
Dims = dict[str, int]


#: How far (relative to the larger of 1 and the bound) a fitted value may lie outside a range
#: its parameters give: the fit computes it in floating point (``1 / (1 / t_max)``, say).
PARAM_SLACK = 1e-9


class Param:
    """An end of a fitted value's range read from a parameter of its owner: the value of
    parameter ``name``, or with ``log=True`` its natural logarithm (the range of a log
    temperature is ``[log t_min, log t_max]``). Bound by :meth:`Constraint.bind
    <calibkit.core.validation.Constraint.bind>` when a state is loaded, widened by
    :data:`PARAM_SLACK` for the rounding of the fit.

    >>> Param("t_max", log=True).value({"t_max": 1.0}), str(Param("t_max", log=True))
    (0.0, 'log t_max')
    """

    def __init__(self, name: str, *, log: bool = False) -> None:
        self.name, self.log = name, log

    def value(self, params: Mapping[str, object]) -> float:
        """The end for these parameters (a positive number where ``log``)."""
        value = params[self.name]
        if not is_number(value):
            raise InputError(f"params.{self.name}", "a number", repr(value))
        x = float(value)  # type: ignore[arg-type]
        return math.log(x) if self.log else x

    def __str__(self) -> str:
        return f"log {self.name}" if self.log else self.name


#: An end of a declared range: a number, a :class:`Param`, or None (unbounded).
End = float | Param | None


def _bound(end: End, params: Mapping[str, object]) -> float | None:
    """``end`` as a number for ``params`` (a :class:`Param` read from them)."""
    return end.value(params) if isinstance(end, Param) else end


def _widened(x: float | None, side: int) -> float | None:
    """``x`` moved outwards by :data:`PARAM_SLACK` (``side`` -1: a low end, +1: a high one)."""
    return None if x is None else x + side * PARAM_SLACK * max(1.0, abs(x))


def _ends(
    low: End, high: End, values: tuple[float | None, float | None] | None
) -> tuple[float | None, float | None]:
    """The ends a value is checked against: a number as declared; a :class:`Param` end as
    its parameter's value (widened by :data:`PARAM_SLACK`) once bound to ``values``, and
    not checked before."""

    def one(end: End, value: float | None, side: int) -> float | None:
        if not isinstance(end, Param):
            return end
        return None if values is None else _widened(value, side)

    bound = values or (None, None)
    return one(low, bound[0], -1), one(high, bound[1], +1)


def _said(end: End, value: float | None) -> str:
    """An end as a message says it: ``t_max``, or ``t_max = 10`` once bound."""
    if value is None or not isinstance(end, Param):
        return str(end)
    return f"{end} = {value:g}"


class InRange(Constraint):
    """A finite number (as ``within`` accepts, default any) in ``[low, high]``, each end a
    number, a :class:`Param` or None.

    Unbound, a :class:`Param` end is not checked (the owner's parameters are not known);
    :meth:`bind` gives the constraint for given parameters, its ends read from them and
    widened by :data:`PARAM_SLACK` (a message names the parameters and their values).

    >>> t = InRange(Param("t_min"), Param("t_max"), within=Real(0.0, closed="neither"))
    >>> t.describe()
    'a finite number > 0 in [t_min, t_max]'
    >>> t.bind({"t_min": 0.5, "t_max": 2.0}).check("temperature_", 2.0)
    2.0
    >>> t.bind({"t_min": 0.5, "t_max": 2.0}).describe()
    'a finite number > 0 in [t_min = 0.5, t_max = 2]'
    >>> t.bind({"t_min": 0.5, "t_max": 2.0}).check("temperature_", 1e308)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calibkit.core.errors.InputError: temperature_: expected ..., got 1e+308
    """

    def __init__(self, low: End = None, high: End = None, *, within: Real | None = None) -> None:
        self.low, self.high = low, high
        self.within = within if within is not None else Real()
        #: The values of the ends once bound (:meth:`bind`), as the parameters give them.
        self._values: tuple[float | None, float | None] | None = None

    def bind(self, params: Mapping[str, object]) -> InRange:
        if not isinstance(self.low, Param) and not isinstance(self.high, Param):
            return self
        bound = InRange(self.low, self.high, within=self.within)
        bound._values = (_bound(self.low, params), _bound(self.high, params))
        return bound

    def check(self, name: str, value: object) -> float:
        x = self.within.check(name, value)
        low, high = _ends(self.low, self.high, self._values)
        if (low is not None and x < low) or (high is not None and x > high):
            self.fail(name, value)
        return x

    def describe(self) -> str:
        values = self._values or (None, None)
        return self.within.describe() + _range_text(self.low, self.high, *values)


def _range_text(low: End, high: End, low_value: float | None, high_value: float | None) -> str:
    """The range ``[low, high]`` as the "expected" part of a message says it (the values
    of :class:`Param` ends where bound)."""
    if not isinstance(low, Param) and not isinstance(high, Param):
        return describe_range(low, high)
    if low is None:
        return f" <= {_said(high, high_value)}"
    if high is None:
        return f" >= {_said(low, low_value)}"
    return f" in [{_said(low, low_value)}, {_said(high, high_value)}]"


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
    finite, in ``[low, high]`` (each end a number, a :class:`Param` read from the owner's
    parameters by :meth:`bind`, or None), and with ``sorted=True`` non-decreasing along the
    last axis; ``nonempty`` refuses an array with no values.

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
        low: End = None,
        high: End = None,
        sorted: bool = False,
        nonempty: bool = False,
        allow_inf: bool = False,
    ) -> None:
        self.dtype, self.shape, self.low, self.high = dtype, tuple(shape), low, high
        self.sorted, self.nonempty, self.allow_inf = sorted, nonempty, allow_inf
        #: The values of the ends once bound (:meth:`bind`), as the parameters give them.
        self._values: tuple[float | None, float | None] | None = None

    def bind(self, params: Mapping[str, object]) -> Array:
        if not isinstance(self.low, Param) and not isinstance(self.high, Param):
            return self
        bound = Array(
            self.dtype,
            self.shape,
            low=self.low,
            high=self.high,
            sorted=self.sorted,
            nonempty=self.nonempty,
            allow_inf=self.allow_inf,
        )
        bound._values = (_bound(self.low, params), _bound(self.high, params))
        return bound

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
        low, high = _ends(self.low, self.high, self._values)
        if low is not None:
            bad |= value < low
        if high is not None:
            bad |= value > high
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
        text += _range_text(self.low, self.high, *(self._values or (None, None)))
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

    def bind(self, params: Mapping[str, object]) -> ArrayList:
        item = self.item.bind(params)
        return self if item is self.item else ArrayList(item, self.length)

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
    params: Mapping[str, object] | None = None,
) -> dict[str, Any]:
    """The values of ``state`` checked against ``constraints``, every declared name present
    but those in ``optional``.

    Unlike :func:`check_params`, a missing name is refused (naming it), and :class:`Array`
    and :class:`ArrayList` constraints look up and bind dimensions in ``dims``. Values are
    checked in the declared order, so a dimension bound by one field holds for later ones.
    With ``params`` (the owner's parameters), each constraint is first bound to them
    (:class:`Param` ends become those parameters' values).
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
        if params is not None:
            constraint = constraint.bind(params)
        if isinstance(constraint, Array | ArrayList):
            out[key] = constraint.check_shaped(prefix + key, state[key], dims)
        else:
            out[key] = constraint.check(prefix + key, state[key])
    return out
