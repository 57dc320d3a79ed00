"""Lazy package exports (``calibkit.core.lazy``): one ``__getattr__`` for every package that
loads its names on first use (issue #45: the root and ``calibkit.calibrators`` had their own)."""

from __future__ import annotations

import importlib
import sys
import types

import pytest

from calibkit.core.lazy import lazy_getattr

LAZY_PACKAGES = [
    "calibkit",
    "calibkit.calibrators",
    "calibkit.metrics",
    "calibkit.reporting",
    "calibkit.workflows",
]


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_every_lazy_package_uses_the_one_getattr(package: str) -> None:
    getattr_ = vars(importlib.import_module(package))["__getattr__"]
    assert getattr_.__module__ == "calibkit.core.lazy"
    assert getattr_.__qualname__ == "lazy_getattr.<locals>.__getattr__"


def test_a_name_is_kept_in_its_package_after_first_use(monkeypatch: pytest.MonkeyPatch) -> None:
    package = types.ModuleType("lazy_widgets")
    monkeypatch.setitem(sys.modules, "lazy_widgets", package)
    getattr_ = lazy_getattr("lazy_widgets", {"dumps": "json"})
    assert "dumps" not in vars(package)
    import json

    assert getattr_("dumps") is json.dumps
    assert vars(package)["dumps"] is json.dumps


def test_an_unknown_name_is_an_attribute_error_naming_the_package() -> None:
    with pytest.raises(AttributeError, match="module 'lazy_widgets' has no attribute 'loads'"):
        lazy_getattr("lazy_widgets", {"dumps": "json"})("loads")
