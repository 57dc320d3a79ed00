"""Name -> object registries (models, losses, calibrators, datasets, metrics).

Configs and the CLI refer to components by name; an unknown name raises
:class:`~calibkit.core.errors.UnknownNameError` listing the valid ones.

>>> r: Registry[int] = Registry("widget")
>>> @r.register("one")
... def make_one() -> int:
...     return 1
>>> r.get("one")()
1
>>> r.get("two")
Traceback (most recent call last):
...
calibkit.core.errors.UnknownNameError: widget: expected one of one, got 'two'
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from calibkit.core.errors import UnknownNameError

T = TypeVar("T")


class Registry(Generic[T]):
    """A mapping from names to objects (classes or factories) of one kind."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator that registers ``obj`` under ``name`` (names are unique)."""

        def add(obj: T) -> T:
            if name in self._items:
                raise ValueError(f"{self.kind} {name!r} is already registered")
            self._items[name] = obj
            return obj

        return add

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
