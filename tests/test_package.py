"""The package's public API: every exported name resolves; py.typed ships."""

from __future__ import annotations

from pathlib import Path

import pytest

import calibkit


@pytest.mark.parametrize("name", calibkit.__all__)
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(calibkit, name) is not None


def test_unknown_attribute_raises_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_thing"):
        calibkit.no_such_thing  # noqa: B018


def test_py_typed_ships() -> None:
    assert (Path(calibkit.__file__).parent / "py.typed").exists()
