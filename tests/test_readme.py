"""The README's Python quick start runs as written (on the real predictions file)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import shared_path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_quick_start_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = shared_path("predictions/cifar10_resnet18.npz")
    block = re.search(r"```python\n(.*?)```", README.read_text(), re.S)
    assert block is not None, "README has no python block"
    code = block.group(1).replace('"cifar10_resnet18.npz"', repr(str(data)))
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    exec(compile(code, "README.md", "exec"), namespace)
    assert 1.2 < namespace["ts"].temperature_ < 2.0
    assert (tmp_path / "ts.json").exists()
