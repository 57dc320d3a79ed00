"""Lazy package exports (PEP 562): a package names what its modules give it, and each name
imports its module on first use, so importing the package stays cheap.

>>> names, getattr_ = lazy_exports("pkg", {"json": "dumps loads"})
>>> names, getattr_("dumps")([1])
(['dumps', 'loads'], '[1]')
>>> getattr_("nothing")
Traceback (most recent call last):
...
AttributeError: module 'pkg' has no attribute 'nothing'
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, modules: Mapping[str, str]
) -> tuple[list[str], Callable[[str], Any]]:
    """The sorted public names of ``modules`` (module -> space-separated names) and the
    module-level ``__getattr__`` of ``package`` that imports a name's module on first use."""
    exports = {name: module for module, names in modules.items() for name in names.split()}

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    return sorted(exports), __getattr__
