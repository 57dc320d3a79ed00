"""Typed, frozen dataclasses from TOML, and back.

:func:`from_mapping` builds a dataclass from a parsed TOML table, checking every key and
type against the dataclass's annotations: an unknown key, a mistyped value or a value the
dataclass rejects gives one :class:`~calibkit.core.errors.InputError` naming the file and the
dotted key. :func:`to_toml` writes a dataclass back, so a run can save the configuration
it actually used (``load(to_toml(cfg)) == cfg``).

Supported field types: ``bool``, ``int``, ``float`` (an int is accepted), ``str``,
``int | float``, ``X | None`` (``None`` = key absent), ``tuple[X, ...]``, ``dict[str, Any]``
(a free-form table), nested dataclasses and tuples of them (arrays of tables).

>>> from calibkit.training import TrainConfig
>>> cfg = from_mapping(TrainConfig, {"epochs": 3, "lr": 1, "milestones": [2]}, "c.toml")
>>> cfg.lr, cfg.milestones
(1.0, (2,))
>>> print(to_toml(cfg).splitlines()[:3])
['epochs = 3', 'batch_size = 128', 'optimizer = "adam"']
>>> try:
...     from_mapping(TrainConfig, {"lrr": 1}, "c.toml")
... except InputError as err:
...     print(err)  # doctest: +ELLIPSIS
c.toml: lrr: expected a key among epochs, ..., got unknown key 'lrr'
"""

from __future__ import annotations

import dataclasses
import json
import math
import tomllib
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from calibkit.core.errors import InputError
from calibkit.core.validation import Boolean, Constraint, Integer, Real, String

T = TypeVar("T")


def _fail(where: str, key: str, expected: str, got: str) -> InputError:
    return InputError(f"{where}: {key}" if key else where, expected, got)


def _describe(value: object) -> str:
    return f"{value!r} ({type(value).__name__})"


#: The checks of scalar field types (a float field also takes an int, and inf or nan).
_SCALARS: dict[Any, Constraint] = {
    bool: Boolean(),
    int: Integer(),
    float: Real(finite=False),
    str: String(),
}


def _scalar_value(tp: Any, value: object, where: str, key: str) -> Any:
    try:
        return _SCALARS[tp].check(key, value)
    except InputError as exc:
        raise _fail(where, key, exc.expected, _describe(value)) from None


def _convert(tp: Any, value: object, where: str, key: str) -> Any:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        if set(options) == {int, float}:  # checked as a number, kept as it came
            _scalar_value(float, value, where, key)
            return value
        return _convert(options[0], value, where, key)
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, Mapping):
            raise _fail(where, key, "a table", _describe(value))
        return from_mapping(tp, value, where, prefix=key)  # type: ignore[arg-type]
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise _fail(where, key, "an array", _describe(value))
        return tuple(_convert(args[0], v, where, f"{key}[{i}]") for i, v in enumerate(value))
    if origin is dict or tp is dict:
        if not isinstance(value, Mapping):
            raise _fail(where, key, "a table", _describe(value))
        return dict(value)
    if tp in _SCALARS:
        return _scalar_value(tp, value, where, key)
    raise TypeError(f"unsupported config field type {tp!r}")  # a programming error


def from_mapping(cls: type[T], data: Mapping[str, Any], where: str, *, prefix: str = "") -> T:
    """An instance of dataclass ``cls`` from ``data``; errors name ``where`` and the key."""
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    dotted = (prefix + ".") if prefix else ""
    for key in data:
        if key not in fields:
            raise _fail(
                where, dotted + key, "a key among " + ", ".join(fields), f"unknown key {key!r}"
            )
    kwargs: dict[str, Any] = {}
    for name, f in fields.items():
        if name in data:
            kwargs[name] = _convert(hints[name], data[name], where, dotted + name)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise _fail(where, dotted + name, "a value (this key is required)", "nothing")
    try:
        return cls(**kwargs)
    except InputError as exc:
        raise _fail(where, dotted + exc.argument, exc.expected, exc.got) from None


def read_toml(path: str | Path) -> dict[str, Any]:
    """The TOML file ``path`` as plain Python values; one clear message for a missing,
    undecodable, malformed or too deeply nested file.

    >>> read_toml("missing.toml")
    Traceback (most recent call last):
    calibkit.core.errors.InputError: config: expected an existing TOML file, got missing.toml
    """
    p = Path(path)
    if not p.is_file():
        raise InputError("config", "an existing TOML file", str(p))
    try:
        return tomllib.loads(p.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(str(p), "valid TOML", str(exc)) from None
    except RecursionError:  # tomllib parses nested arrays and tables recursively
        raise InputError(str(p), "valid TOML", "arrays or tables nested too deeply") from None


def load_toml(cls: type[T], path: str | Path) -> T:
    """Parse the TOML file ``path`` into dataclass ``cls`` (see :func:`from_mapping`)."""
    return from_mapping(cls, read_toml(path), str(path))


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")  # TOML: DEL
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_scalar(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_key(k)} = {_scalar(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def _key(name: str) -> str:
    bare = name.replace("_", "").replace("-", "").isalnum() and name.isascii()
    return name if bare else _scalar(name)


def _is_table(value: Any) -> bool:
    return dataclasses.is_dataclass(value)


def _is_table_array(value: Any) -> bool:
    return isinstance(value, tuple) and bool(value) and all(_is_table(v) for v in value)


def _emit(obj: Any, header: str, lines: list[str], *, array: bool = False) -> None:
    if header:
        lines.append("")
        lines.append(f"[[{header}]]" if array else f"[{header}]")
    later: list[tuple[str, Any]] = []
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if value is None:
            continue
        if _is_table(value) or _is_table_array(value):
            later.append((f.name, value))
        else:
            lines.append(f"{_key(f.name)} = {_scalar(value)}")
    for name, value in later:
        sub = f"{header}.{_key(name)}" if header else _key(name)
        if _is_table(value):
            _emit(value, sub, lines)
        else:
            for item in value:
                _emit(item, sub, lines, array=True)


def to_toml(obj: Any) -> str:
    """The dataclass ``obj`` as TOML text (``None`` fields are left out)."""
    if not dataclasses.is_dataclass(obj) or isinstance(obj, type):
        raise TypeError("to_toml takes a dataclass instance")
    lines: list[str] = []
    _emit(obj, "", lines)
    return "\n".join(lines) + "\n"
