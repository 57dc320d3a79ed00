"""The fastest precision: bfloat16 only with native hardware support."""

from __future__ import annotations

import pytest
import torch

from calibkit.core import precision
from calibkit.core.precision import cpu_has_native_bfloat16, fastest_precision


def test_cuda_uses_bfloat16() -> None:
    assert fastest_precision("cuda:0") == "bfloat16"


@pytest.mark.parametrize("native", [True, False])
def test_cpu_follows_its_capability(monkeypatch: pytest.MonkeyPatch, native: bool) -> None:
    monkeypatch.setattr(precision, "cpu_has_native_bfloat16", lambda: native)
    assert fastest_precision("cpu") == ("bfloat16" if native else "float32")
    assert fastest_precision("mps") == "float32"


def test_capability_from_flags_when_torch_cannot_tell(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("_is_avx512_bf16_supported", "_is_amx_tile_supported"):
        monkeypatch.delattr(torch.cpu, name, raising=False)
    monkeypatch.setattr(precision, "_cpu_flags", lambda: {"avx512f", "avx512_bf16"})
    assert cpu_has_native_bfloat16()
    monkeypatch.setattr(precision, "_cpu_flags", lambda: {"avx512f", "avx2"})
    assert not cpu_has_native_bfloat16()
