"""Parameter checks with one semantics, and parameter declarations built from them.

A :class:`Constraint` checks one value: ``check(name, value)`` returns it normalised (numpy
scalars become Python ones) or raises :class:`~calibkit.core.errors.InputError` naming
``name``; ``describe()`` says what it accepts. Everywhere in calibkit:

- a number is a Python or numpy int or float, never a bool;
- an integer is a Python or numpy int, never a bool or a float;
- NaN and infinities are refused unless a :class:`Real` is built with ``finite=False``.

A component declares its parameters as a mapping ``name -> Constraint`` (as scikit-learn's
estimators do); :func:`check_params` checks a whole mapping of values against it, so
constructors, configuration files and the command line read the same declaration.

>>> import numpy as np
>>> N_BINS.check("n_bins", np.int64(10))
10
>>> SEED.describe()
'an integer in [0, 4294967295]'

>>> Real(0, 1, closed="left").describe()
'a finite number in [0, 1)'
>>> check_params({"n_bins": N_BINS}, {"n_bins": True}, owner="histogram")
Traceback (most recent call last):
...
calibkit.core.errors.InputError: n_bins: expected an integer in [1, 100000], got True
>>> check_params({"n_bins": N_BINS}, {"bins": 3}, owner="histogram")
Traceback (most recent call last):
...
calibkit.core.errors.InputError: histogram: expected parameters among n_bins, got 'bins'
"""

from __future__ import annotations

import math
import numbers
import os
import reprlib
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, NoReturn, cast

from calibkit.core.errors import InputError, UnknownNameError, nearest_name

Closed = Literal["both", "left", "right", "neither"]
#: A parameter declaration: parameter name -> its constraint, in signature order.
Constraints = Mapping[str, "Constraint"]


def _numpy_type(name: str) -> type | tuple[()]:
    """``numpy.<name>``, or no type at all while numpy is not imported (then no value can be
    a numpy one): this module stays importable without numpy, as the CLI's parser needs."""
    np = sys.modules.get("numpy")
    return getattr(np, name) if np is not None else ()


def is_bool(value: object) -> bool:
    """True for Python and numpy bools."""
    return isinstance(value, (bool, _numpy_type("bool_")))


def is_integer(value: object) -> bool:
    """True for Python and numpy integers, False for bools and everything else."""
    return isinstance(value, numbers.Integral) and not is_bool(value)


def is_number(value: object) -> bool:
    """True for Python and numpy ints and floats, False for bools and everything else."""
    return isinstance(value, numbers.Real) and not is_bool(value)


class Constraint(ABC):
    """What one parameter accepts."""

    @abstractmethod
    def check(self, name: str, value: object) -> Any:
        """``value`` normalised, or an InputError naming ``name``."""

    @abstractmethod
    def describe(self) -> str:
        """What is accepted, as the "expected ..." part of an error message."""

    def fail(self, name: str, value: object) -> NoReturn:
        raise InputError(name, self.describe(), repr(value))

    def bind(self, params: Mapping[str, object]) -> Constraint:
        """This constraint with whatever it reads from the owner's parameters filled in
        from ``params`` (a fitted value bounded by a parameter:
        :class:`calibkit.core.fitted_state.Param`); itself when it reads none."""
        return self

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: {self.describe()}>"


def _show(x: float) -> str:
    return str(x) if isinstance(x, int) else f"{x:g}"  # integers exactly, however large


def _bounds(low: float | None, high: float | None, closed: Closed) -> str:
    left, right = closed in ("both", "left"), closed in ("both", "right")
    if low is not None and high is not None:
        return f" in {'[' if left else '('}{_show(low)}, {_show(high)}{']' if right else ')'}"
    if low is not None:
        return f" {'>=' if left else '>'} {_show(low)}"
    if high is not None:
        return f" {'<=' if right else '<'} {_show(high)}"
    return ""


def describe_range(low: float | None, high: float | None) -> str:
    """The closed range ``[low, high]`` as an error message says it (" >= 0", ...)."""
    return _bounds(low, high, "both")


def _inside(x: float, low: float | None, high: float | None, closed: Closed) -> bool:
    left, right = closed in ("both", "left"), closed in ("both", "right")
    if low is not None and not (x >= low if left else x > low):
        return False
    return high is None or (x <= high if right else x < high)


class Integer(Constraint):
    """An integer in ``[low, high]`` (``None``: unbounded), returned as an ``int``."""

    def __init__(self, low: int | None = None, high: int | None = None) -> None:
        self.low, self.high = low, high

    def check(self, name: str, value: object) -> int:
        if not is_integer(value):
            self.fail(name, value)
        x = int(cast(int, value))
        if not _inside(x, self.low, self.high, "both"):
            self.fail(name, value)
        return x

    def describe(self) -> str:
        return "an integer" + _bounds(self.low, self.high, "both")


class Real(Constraint):
    """A number between ``low`` and ``high``, ends included as ``closed`` says; a ``float``.

    With ``finite=False`` infinities (and NaN, when unbounded) are accepted too.
    """

    def __init__(
        self,
        low: float | None = None,
        high: float | None = None,
        closed: Closed = "both",
        *,
        finite: bool = True,
    ) -> None:
        self.low, self.high, self.closed, self.finite = low, high, closed, finite

    def check(self, name: str, value: object) -> float:
        if not is_number(value):
            self.fail(name, value)
        x = float(cast(float, value))
        unbounded = self.low is None and self.high is None
        if self.finite and not math.isfinite(x):
            self.fail(name, value)
        if not (math.isnan(x) and unbounded) and not _inside(x, self.low, self.high, self.closed):
            self.fail(name, value)
        return x

    def describe(self) -> str:
        return ("a finite number" if self.finite else "a number") + _bounds(
            self.low, self.high, self.closed
        )


class Choice(Constraint):
    """One of a fixed set of values (compared by type and value)."""

    def __init__(self, *options: object) -> None:
        self.options = options

    def check(self, name: str, value: object) -> Any:
        for option in self.options:
            if type(value) is type(option) and value == option:
                return value
        self.fail(name, value)

    def describe(self) -> str:
        return "one of " + ", ".join(str(o) for o in self.options)


class Boolean(Constraint):
    """``True`` or ``False`` (a Python or numpy bool)."""

    def check(self, name: str, value: object) -> bool:
        if not is_bool(value):
            self.fail(name, value)
        return bool(value)

    def describe(self) -> str:
        return "true or false"


class String(Constraint):
    """Any string."""

    def check(self, name: str, value: object) -> str:
        if not isinstance(value, str):
            self.fail(name, value)
        return value

    def describe(self) -> str:
        return "a string"


class NoneOr(Constraint):
    """``None`` or what ``inner`` accepts."""

    def __init__(self, inner: Constraint) -> None:
        self.inner = inner

    def check(self, name: str, value: object) -> Any:
        if value is None:
            return None
        try:
            return self.inner.check(name, value)
        except InputError:
            self.fail(name, value)

    def describe(self) -> str:
        return f"{self.inner.describe()}, or None"

    def bind(self, params: Mapping[str, object]) -> Constraint:
        inner = self.inner.bind(params)
        return self if inner is self.inner else NoneOr(inner)


class AnyOf(Constraint):
    """What the first accepting constraint of ``options`` returns."""

    def __init__(self, *options: Constraint) -> None:
        self.options = options

    def check(self, name: str, value: object) -> Any:
        for option in self.options:
            try:
                return option.check(name, value)
            except InputError:
                continue
        self.fail(name, value)

    def describe(self) -> str:
        return " or ".join(o.describe() for o in self.options)


class ListOf(Constraint):
    """A non-empty sequence (not a string) of items ``item`` accepts, as a tuple or list."""

    def __init__(self, item: Constraint, *, as_list: bool = False) -> None:
        self.item, self.as_list = item, as_list

    def check(self, name: str, value: object) -> tuple[Any, ...] | list[Any]:
        array = _numpy_type("ndarray")
        if isinstance(value, str) or not isinstance(value, (Sequence, array)):
            self.fail(name, value)
        values = cast("Sequence[object]", value)
        if not len(values):
            self.fail(name, value)
        try:
            items = [self.item.check(name, v) for v in values]
        except InputError:
            self.fail(name, value)
        return items if self.as_list else tuple(items)

    def describe(self) -> str:
        return f"a non-empty list, each {self.item.describe()}"


class TupleOf(Constraint):
    """A sequence (not a string) of items ``item`` accepts, as a tuple; a refused item gives
    the item's error. ``min_len``: at least so many items; ``order``: ``"increasing"``
    (strictly), ``"distinct"`` (no repeats) or ``"dedupe"`` (repeats dropped, first kept);
    ``single``: one item alone is taken as a list of it.

    >>> TupleOf(Integer(1, 5), order="dedupe", single=True).check("severities", [3, 1, 3])
    (3, 1)
    >>> TupleOf(Integer(1), order="increasing").check("milestones", [3, 2])
    Traceback (most recent call last):
    ...
    calibkit.core.errors.InputError: milestones: expected a list of increasing values, each an \
integer >= 1, got [3, 2]
    """

    def __init__(
        self,
        item: Constraint,
        *,
        min_len: int = 0,
        order: Literal["any", "increasing", "distinct", "dedupe"] = "any",
        single: bool = False,
    ) -> None:
        self.item, self.min_len, self.order, self.single = item, min_len, order, single

    def check(self, name: str, value: object) -> tuple[Any, ...]:
        array = _numpy_type("ndarray")
        if self.single and not isinstance(value, (Sequence, array)):
            value = (value,)
        if isinstance(value, str) or not isinstance(value, (Sequence, array)):
            self.fail(name, value)
        items = tuple(self.item.check(name, v) for v in cast("Sequence[object]", value))
        if self.order == "dedupe":
            items = tuple(dict.fromkeys(items))
        if len(items) < self.min_len:
            self.fail(name, value)
        if self.order == "distinct" and len(set(items)) != len(items):
            raise InputError(name, self.describe(), repr(list(items)))
        if self.order == "increasing" and list(items) != sorted(set(items)):
            raise InputError(name, self.describe(), repr(list(items)))
        return items

    def describe(self) -> str:
        size = {0: "a list", 1: "a non-empty list"}.get(self.min_len, f"{self.min_len}+ items")
        kind = {"increasing": " of increasing values", "distinct": " of distinct values"}
        return f"{size}{kind.get(self.order, '')}, each {self.item.describe()}"


class Table(Constraint):
    """A table (a mapping, from TOML or Python), as a ``dict``: ``what`` says of what.

    >>> Table("loss parameters").check("loss_params", [1])
    Traceback (most recent call last):
    ...
    calibkit.core.errors.InputError: loss_params: expected a table of loss parameters, got [1]
    """

    def __init__(self, what: str) -> None:
        self.what = what

    def check(self, name: str, value: object) -> dict[str, Any]:
        if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
            self.fail(name, value)
        return dict(value)

    def describe(self) -> str:
        return f"a table of {self.what}"


class Names(Constraint):
    """Names, as a tuple in the order given with repeats dropped: a sequence of strings, or
    one string of comma-separated names (blank ones dropped), at least ``min_len`` of them.
    With ``among`` (a function giving the valid names, called when a value is checked so
    that a registry is read only then), any other name is refused naming the nearest valid
    one; ``what`` says what the names are. A subclass refines :meth:`check_name`.

    >>> Names(lambda: ["fog", "snow"], what="corruptions").check("c", "snow, fog,snow")
    ('snow', 'fog')
    >>> Names(lambda: ["fog", "snow"], what="corruptions").check("c", ["frog"])
    Traceback (most recent call last):
    ...
    calibkit.core.errors.InputError: c: expected corruptions among fog, snow, got 'frog' \
(did you mean 'fog'?)
    """

    def __init__(
        self,
        among: Callable[[], Sequence[str]] | None = None,
        *,
        what: str = "names",
        min_len: int = 0,
    ) -> None:
        self.among, self.what, self.min_len = among, what, min_len

    def check(self, name: str, value: object) -> tuple[str, ...]:
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, Sequence) or not all(isinstance(v, str) for v in items):
            self.fail(name, value)
        names = tuple(dict.fromkeys(v.strip() for v in items if v.strip()))
        if len(names) < self.min_len:
            self.fail(name, value)
        for item in names:
            self.check_name(name, item)
        return names

    def check_name(self, name: str, item: str) -> None:
        """Refuse ``item`` unless it is among the valid names (naming ``name``)."""
        if self.among is None:
            return
        valid = list(self.among())
        if item not in valid:
            near = nearest_name(item, valid)
            got = repr(item) + (f" (did you mean {near!r}?)" if near else "")
            raise InputError(name, f"{self.what} among {', '.join(valid)}", got)

    def describe(self) -> str:
        least = {0: "", 1: "one or more "}.get(self.min_len, f"at least {self.min_len} ")
        return f"{least}{self.what} (a list, or one string of comma-separated names)"


class Registered(Constraint):
    """The name of an entry of a registry (``registry()``, called when a value is checked,
    so that the registry's module is imported only then), ``kind`` saying of what; an
    unknown name is refused listing the valid ones and the nearest.

    >>> from calibkit.core.registry import Registry
    >>> colors = Registry("color")
    >>> _ = colors.register("red")(object), colors.register("blue")(object)
    >>> Registered("color", lambda: colors).check("paint", "rde")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calibkit.core.errors.UnknownNameError: paint: expected one of blue, red, got 'rde' (...)
    """

    def __init__(self, kind: str, registry: Callable[[], Any]) -> None:
        self.kind, self.registry = kind, registry

    def check(self, name: str, value: object) -> str:
        if not isinstance(value, str):
            self.fail(name, value)
        registry = self.registry()
        if value not in registry:
            raise UnknownNameError(name, value, registry.names())
        return value

    def describe(self) -> str:
        return f"the name of a registered {self.kind}"


class FilePath(Constraint):
    """A path (a ``str`` or an ``os.PathLike`` of ``str``), returned as given; ``what``
    says of what; with ``exists``, that of an existing file.

    >>> FilePath("checkpoint file", exists=True).check("weights", "w.th")
    Traceback (most recent call last):
    ...
    calibkit.core.errors.InputError: weights: expected an existing checkpoint file, got 'w.th'
    """

    def __init__(self, what: str = "file", *, exists: bool = False) -> None:
        self.what, self.exists = what, exists

    def check(self, name: str, value: object) -> Any:
        if not isinstance(value, str | os.PathLike) or not isinstance(os.fspath(value), str):
            self.fail(name, value)
        if not os.fspath(value) or (self.exists and not Path(value).is_file()):
            raise InputError(name, self.describe(), repr(os.fspath(value)))
        return value

    def describe(self) -> str:
        return f"an existing {self.what}" if self.exists else f"the path of a {self.what}"


class InstanceOf(Constraint):
    """An instance of ``cls`` (a table of settings, made by its class), returned as given.

    >>> InstanceOf(Path).check("where", "a.txt")
    Traceback (most recent call last):
    ...
    calibkit.core.errors.InputError: where: expected a Path, got 'a.txt'
    """

    def __init__(self, cls: type) -> None:
        self.cls = cls

    def check(self, name: str, value: object) -> Any:
        if not isinstance(value, self.cls):
            self.fail(name, value)
        return value

    def describe(self) -> str:
        return f"a {self.cls.__name__}"


class Device(Constraint):
    """A device name: ``auto``, ``cpu``, ``cuda`` or ``cuda:N`` (whether this machine has
    it is known only when it is used: :func:`calibkit.core.devices.resolve_device`).

    >>> DEVICE.check("device", "cuda:1"), DEVICE.describe()
    ('cuda:1', 'auto, cpu, cuda or cuda:N')
    """

    def check(self, name: str, value: object) -> str:
        if not isinstance(value, str):
            self.fail(name, value)
        index = value[5:]
        cuda_n = value.startswith("cuda:") and index.isascii() and index.isdigit()
        if value not in ("auto", "cpu", "cuda") and not cuda_n:
            self.fail(name, value)
        return value

    def describe(self) -> str:
        return "auto, cpu, cuda or cuda:N"


def check_int(name: str, value: object, low: int | None = None, high: int | None = None) -> int:
    """``value`` as an int in ``[low, high]``, else an InputError naming ``name``."""
    return Integer(low, high).check(name, value)


def check_real(
    name: str,
    value: object,
    low: float | None = None,
    high: float | None = None,
    closed: Closed = "both",
) -> float:
    """``value`` as a finite float between ``low`` and ``high``, else an InputError."""
    return Real(low, high, closed).check(name, value)


def check_choice(name: str, value: object, options: Sequence[object]) -> Any:
    """``value`` if it is one of ``options``, else an InputError listing them."""
    return Choice(*options).check(name, value)


def check_bool(name: str, value: object) -> bool:
    """``value`` as a bool, else an InputError."""
    return Boolean().check(name, value)


#: The common ranges, stated once: a finite number > 0, >= 0, and in [0, 1).
POSITIVE = Real(0.0, closed="neither")
NON_NEGATIVE = Real(0.0)
FRACTION = Real(0.0, 1.0, closed="left")


#: The ranges of calibkit's counts and seeds, stated once: constructors, configuration files
#: and the command line (its option types) all check these, before any work is done.
#: Bins of a calibration metric or calibrator (``core.binning`` re-exports it).
N_BINS = Integer(1, 100_000)
#: A random seed: what every generator calibkit seeds accepts (numpy's ``default_rng`` and
#: legacy ``RandomState``, torch's ``manual_seed``, Python's ``random``).
SEED = Integer(0, 2**32 - 1)
#: Bootstrap resamples and noise-floor draws (0: none).
RESAMPLES = Integer(0, 100_000)
#: The confidence level of an interval.
LEVEL = Real(0.0, 1.0, closed="neither")
#: The miscoverage ``alpha`` of prediction sets (their target coverage is ``1 - alpha``).
MISCOVERAGE = Real(0.0, 1.0, closed="neither")
#: Training epochs (0: not trained), and epochs of a model that must be trained.
EPOCHS = Integer(0, 100_000)
TRAINED_EPOCHS = Integer(1, 100_000)
#: Samples per training or evaluation batch.
BATCH_SIZE = Integer(1, 1 << 20)
#: A part of a split: a count of samples, or a fraction of the split in (0, 1).
SPLIT_SIZE = AnyOf(Integer(1, 10**9), Real(0.0, 1.0, closed="neither"))
#: Where a computation runs (:class:`Device`).
DEVICE = Device()


def check_fraction(name: str, value: object) -> float:
    """``value`` as a float in ``[0, 1)``, else an InputError."""
    return FRACTION.check(name, value)


def check_file_path(name: str, value: object, from_json: str = "") -> Path:
    """``value``, a file's path (a non-empty ``str`` or ``os.PathLike`` of ``str``), as a
    ``Path``; else one InputError naming ``name`` and saying what came (None, bytes, a file
    object, a dict, an empty string) and, given ``from_json`` (the function that rebuilds a
    JSON document already read), how to pass a document held in memory.

    >>> check_file_path("path", "ts.json").name
    'ts.json'
    >>> check_file_path("path", {"kind": "logits"}, "f")
    Traceback (most recent call last):
    ...
    calibkit.core.errors.InputError: path: expected a file path (str or os.PathLike), got a dict: a document already read goes to f(doc)
    >>> check_file_path("path", "")
    Traceback (most recent call last):
    ...
    calibkit.core.errors.InputError: path: expected a file path (str or os.PathLike), got '' (an empty string)
    """  # noqa: E501
    expected = "a file path (str or os.PathLike)"
    text = os.fspath(value) if isinstance(value, str | os.PathLike) else None
    if isinstance(text, str) and text:
        return Path(text)
    if isinstance(text, str):
        got = f"{text!r} (an empty string)"
    elif isinstance(text, bytes):
        got = f"a path of bytes ({text!r}): pass it as str (os.fsdecode)"
    elif value is None:
        got = "None"
    elif isinstance(value, bytes | bytearray):
        got = f"{type(value).__name__} ({len(value):,} of them)"
        got += f": pass the file's path, or {from_json}(json.loads(data))" if from_json else ""
    elif hasattr(value, "read"):
        got = f"a file object ({type(value).__name__})"
        got += f": pass its path, or {from_json}(json.load(file))" if from_json else ""
    elif isinstance(value, Mapping):
        got = f"a {type(value).__name__}"
        got += f": a document already read goes to {from_json}(doc)" if from_json else ""
    else:
        got = f"{reprlib.repr(value)} (of type {type(value).__name__})"
    raise InputError(name, expected, got)


def check_params(
    constraints: Constraints, params: Mapping[str, object], owner: str, prefix: str = ""
) -> dict[str, Any]:
    """The values of ``params`` checked against their declared ``constraints``.

    An undeclared name raises an InputError naming ``owner`` and listing the declared
    ones; a refused value raises one naming ``prefix + name``.
    """
    unknown = [key for key in params if key not in constraints]
    if unknown:
        expected = "parameters among " + ", ".join(constraints) if constraints else "no parameters"
        raise InputError(owner, expected, ", ".join(map(repr, unknown)))
    return {key: constraints[key].check(prefix + key, value) for key, value in params.items()}
