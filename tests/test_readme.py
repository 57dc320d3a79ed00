"""The README's Python quick starts run as written (the first on the real predictions file)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

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


def test_group_snippet_runs() -> None:
    import textwrap

    import numpy as np

    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    code = next((b for b in blocks if "evaluate_groups(labels" in b), None)
    assert code is not None, "README has no per-group block"
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(10_000, 3)) * 2
    p = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    labels = (rng.random(10_000)[:, None] > p.cumsum(1)).sum(1)
    site = np.where(rng.random(10_000) < 0.5, "a", "b")
    logits[site == "b"] *= 3  # group b overconfident
    import calibkit as ck

    namespace: dict[str, object] = {"ck": ck, "labels": labels, "logits": logits, "site": site}
    namespace["probs"] = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    exec(compile(textwrap.dedent(code), "README.md", "exec"), namespace)
    gts: Any = namespace["gts"]
    temps = dict(zip(gts.group_names_, gts.group_temperatures_.tolist(), strict=True))
    assert namespace["res"].worst_group == "b"  # type: ignore[attr-defined]
    assert temps["a"] < 1.2 < 2.5 < temps["b"]
