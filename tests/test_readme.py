"""The README's Python quick starts run as written (the first on the real predictions file)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

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


def test_pytorch_quick_start_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    code = next((block for block in blocks if "ck.CalibratedModel(" in block), None)
    assert code is not None, "README has no PyTorch block"
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    exec(compile(code, "README.md", "exec"), namespace)
    assert (tmp_path / "calibrated.onnx").exists()
    deployed, x = namespace["deployed"], namespace["x"]
    probs = namespace["program"].module()(x)  # type: ignore[attr-defined]
    assert torch.allclose(probs, deployed(x))  # type: ignore[operator]


def test_streaming_quick_start_runs() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    code = next((block for block in blocks if "ck.StreamingCalibration(" in block), None)
    assert code is not None, "README has no streaming block"
    namespace: dict[str, object] = {}
    exec(compile(code, "README.md", "exec"), namespace)
    assert 0.0 < namespace["metric"].compute()["ece"] < 1.0  # type: ignore[attr-defined]
