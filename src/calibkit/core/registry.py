"""Name -> object registries (models, losses, calibrators, datasets, metrics).

Configs and the CLI refer to components by name; an unknown name raises
:class:`~calibkit.core.errors.UnknownNameError` listing the valid ones. Every entry is
registered with the :meth:`Registry.register` decorator, which can also record facts about
the entry (its metadata, read back with :meth:`Registry.info`) beside it.

>>> r: Registry[int] = Registry("widget")
>>> @r.register("one", size=1)
... def make_one() -> int:
...     return 1
>>> r.get("one")(), r.info("one")["size"]
(1, 1)
>>> r.get("two")
Traceback (most recent call last):
...
calibkit.core.errors.UnknownNameError: widget: expected one of one, got 'two'
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import Any, Generic, TypeVar

from calibkit.core.errors import UnknownNameError

T = TypeVar("T")


class Registry(Generic[T]):
    """A mapping from names to objects (classes or factories) of one kind.

    ``on_register(name, obj)``, if given, is called as each object is registered (e.g. to
    set a class's ``name`` attribute).
    """

    def __init__(self, kind: str, on_register: Callable[[str, T], None] | None = None) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}
        self._info: dict[str, Mapping[str, Any]] = {}
        self._on_register = on_register

    def register(self, name: str, **info: Any) -> Callable[[T], T]:
        """Decorator that registers ``obj`` under ``name`` (names are unique) with ``info``."""

        def add(obj: T) -> T:
            if name in self._items:
                raise ValueError(f"{self.kind} {name!r} is already registered")
            if self._on_register is not None:
                self._on_register(name, obj)
            self._items[name] = obj
            self._info[name] = MappingProxyType(dict(info))
            return obj

        return add

    def info(self, name: str) -> Mapping[str, Any]:
        """The metadata registered with ``name`` (read-only; empty if none was given)."""
        self.get(name)
        return self._info[name]

    def get(self, name: str) -> T:
        """The object registered under ``name``; an unknown name lists the valid ones."""
        try:
            return self._items[name]
        except KeyError:
            raise UnknownNameError(self.kind, name, list(self._items)) from None

    def names(self) -> list[str]:
        """Registered names, in registration order."""
        return list(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)
