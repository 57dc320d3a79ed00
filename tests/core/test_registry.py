"""core.registry: names, metadata and registration hooks."""

from __future__ import annotations

import pytest

from calibkit.core.errors import UnknownNameError
from calibkit.core.registry import Registry


def test_register_get_and_info() -> None:
    reg: Registry[int] = Registry("widget")
    reg.register("a", size=2)(1)
    reg.register("b")(2)
    assert reg.get("a") == 1
    assert reg.names() == ["a", "b"]
    assert len(reg) == 2
    assert dict(reg.info("a")) == {"size": 2}
    assert dict(reg.info("b")) == {}
    assert "a" in reg
    assert list(reg) == ["a", "b"]
    with pytest.raises(TypeError):
        reg.info("a")["size"] = 3  # type: ignore[index]
    with pytest.raises(UnknownNameError, match=r"^widget: expected one of a, b, got 'c'"):
        reg.info("c")
    with pytest.raises(ValueError, match="already registered"):
        reg.register("a")(3)


def test_on_register_sees_each_entry() -> None:
    seen: list[tuple[str, int]] = []
    reg: Registry[int] = Registry("widget", on_register=lambda name, obj: seen.append((name, obj)))
    reg.register("x")(5)
    assert seen == [("x", 5)]
