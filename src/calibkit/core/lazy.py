"""Lazy package exports (PEP 562): a package names what its modules give it, and each name
imports its module on first use, so importing the package stays cheap.

>>> names, getattr_ = lazy_exports("pkg", {"json": "dumps loads"})
>>> names, getattr_("dumps")([1])
(['dumps', 'loads'], '[1]')
>>> getattr_("nothing")
Traceback (most recent call last):
...
AttributeError: module 'pkg' has no attribute 'nothing'

A package whose names type checkers must see declares them once, as ``if TYPE_CHECKING:``
imports, and reads its table from them (:func:`type_checking_imports`: the pattern of
scientific Python's ``lazy_loader``, which reads a ``.pyi`` stub).

>>> import calibkit
>>> table = type_checking_imports(calibkit.__file__)
>>> table["ece"], table["Report"]
('calibkit.metrics', 'calibkit.reporting.writer')
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any


def lazy_getattr(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """The module-level ``__getattr__`` of ``package``: a name of ``exports`` (name -> the
    module that defines it) imports its module on first use and is then kept in the package,
    so that the next use finds it there; any other name is an ``AttributeError``.

    >>> getattr_ = lazy_getattr("pkg", {"dumps": "json"})
    >>> getattr_("dumps")([1])
    '[1]'
    """

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        holder = sys.modules.get(package)
        if holder is not None:
            setattr(holder, name, value)
        return value

    return __getattr__


def lazy_exports(
    package: str, modules: Mapping[str, str]
) -> tuple[list[str], Callable[[str], Any]]:
    """The sorted public names of ``modules`` (module -> space-separated names) and the
    :func:`lazy_getattr` of ``package`` for them."""
    exports = {name: module for module, names in modules.items() for name in names.split()}
    return sorted(exports), lazy_getattr(package, exports)


def type_checking_imports(path: str | Path) -> dict[str, str]:
    """Name -> module of the ``from M import N`` lines under the top-level
    ``if TYPE_CHECKING:`` of the module at ``path``, in their order (absolute imports only).

    Parameters
    ----------
    path : str or Path
        The module's source file (its ``__file__``).

    Returns
    -------
    dict of str to str
        Each name imported there (its ``as`` name if given) -> the absolute module name.
    """
    path = Path(path)
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for line in node.body:
                if isinstance(line, ast.ImportFrom) and line.module and not line.level:
                    for alias in line.names:
                        found[alias.asname or alias.name] = line.module
    return found
