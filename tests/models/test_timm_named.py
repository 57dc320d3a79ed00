"""The ImageNet models carry timm's parameter names and shapes and load timm checkpoints."""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from calibkit.core.errors import InputError
from calibkit.models import MODELS, create_model, load_checkpoint, read_state_dict
from calibkit.models.mixer import MlpMixer
from calibkit.models.vit import VisionTransformer

SHAPES = Path(__file__).parent / "timm_shapes"
TIMM = ("resnet101", "vit_small_patch16_224", "mixer_b16_224")


@pytest.fixture(scope="module", params=TIMM)
def named(request: pytest.FixtureRequest) -> tuple[str, torch.nn.Module]:
    return request.param, create_model(request.param, 1000)


def test_names_and_shapes_match_timm(named: tuple[str, torch.nn.Module]) -> None:
    name, model = named
    expected = json.loads((SHAPES / f"{name}.json").read_text())
    got = {k: list(v.shape) for k, v in model.state_dict().items()}
    assert list(got) == list(expected)  # same names, same order
    assert got == expected


# Published parameter counts (timm's model cards / torchvision's weight tables).
COUNTS = {"resnet101": 44_549_160, "vit_small_patch16_224": 22_050_664, "mixer_b16_224": 59_880_472}


def test_parameter_counts_are_the_published_ones(named: tuple[str, torch.nn.Module]) -> None:
    name, model = named
    assert sum(p.numel() for p in model.parameters()) == COUNTS[name]
    assert MODELS.info(name)["family"] == "timm"


def test_resnet50_28_has_torchvision_resnet50_size_and_takes_28x28() -> None:
    from calibkit.models.bottleneck import BottleneckResNet

    assert sum(p.numel() for p in BottleneckResNet((3, 4, 6, 3), 1000).parameters()) == 25_557_032
    model = create_model("resnet50_28", 8).eval()
    assert model(torch.zeros(2, 3, 28, 28)).shape == (2, 8)


def test_wrn40_10_is_registered_with_its_depth() -> None:
    model = create_model("wrn40_10", 100)
    assert len(model.blocks) == 18  # (40 - 4) / 6 = 6 blocks per stage
    assert sum(p.numel() for p in model.parameters()) == 55_899_444


def test_small_vit_and_mixer_forward() -> None:
    x = torch.randn(2, 3, 32, 32)
    vit = VisionTransformer(5, img_size=32, patch_size=16, dim=24, depth=1, heads=3).eval()
    mixer = MlpMixer(5, img_size=32, patch_size=16, dim=8, depth=1).eval()
    assert vit(x).shape == mixer(x).shape == (2, 5)
    # attention by hand for one head-split: softmax(q k^T / sqrt(d)) v
    attn = vit.blocks[0].attn
    tokens = torch.randn(1, 4, 24)
    q, k, v = attn.qkv(tokens).view(1, 4, 3, 3, 8).permute(2, 0, 3, 1, 4)
    weights = torch.softmax(q @ k.transpose(-1, -2) / 8**0.5, dim=-1)
    by_hand = attn.proj((weights @ v).transpose(1, 2).reshape(1, 4, 24))
    torch.testing.assert_close(attn(tokens), by_hand, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("suffix", [".safetensors", ".pth"])
def test_checkpoint_round_trip(tmp_path: Path, suffix: str) -> None:
    source = VisionTransformer(4, img_size=32, patch_size=16, dim=24, depth=1, heads=3)
    state = {k: v.contiguous() for k, v in source.state_dict().items()}
    path = tmp_path / f"w{suffix}"
    if suffix == ".safetensors":
        save_file(state, str(path))
    else:
        torch.save({"state_dict": {f"module.{k}": v for k, v in state.items()}}, path)
    target = VisionTransformer(4, img_size=32, patch_size=16, dim=24, depth=1, heads=3)
    load_checkpoint(target, path)
    for k, v in target.state_dict().items():
        assert torch.equal(v, state[k])
    assert set(read_state_dict(path)) == set(state)


def test_checkpoint_errors_name_missing_unexpected_and_shapes(tmp_path: Path) -> None:
    model = VisionTransformer(4, img_size=32, patch_size=16, dim=24, depth=1, heads=3)
    state = dict(model.state_dict())
    state.pop("head.bias")
    state["extra.weight"] = torch.zeros(1)
    state["head.weight"] = torch.zeros(7, 24)
    save_file(state, str(tmp_path / "bad.safetensors"))
    with pytest.raises(InputError, match=r"head\.bias.*extra\.weight.*head\.weight \(7, 24\)"):
        load_checkpoint(model, tmp_path / "bad.safetensors")
    with pytest.raises(InputError, match="existing checkpoint"):
        load_checkpoint(model, tmp_path / "absent.pth")
    (tmp_path / "junk.pth").write_bytes(b"not a checkpoint")
    with pytest.raises(InputError, match=r"safetensors or torch\.save"):
        load_checkpoint(model, tmp_path / "junk.pth")


def test_corrupt_or_hostile_checkpoints_are_refused(tmp_path: Path) -> None:
    class Evil:
        def __reduce__(self) -> tuple[object, tuple[str]]:
            return (os.system, (f"touch {tmp_path / 'pwned'}",))

    (tmp_path / "evil.pt").write_bytes(pickle.dumps(Evil()))
    (tmp_path / "junk.pt").write_bytes(b"garbage")
    (tmp_path / "junk.safetensors").write_bytes(b"garbage")
    for name in ("evil.pt", "junk.pt", "junk.safetensors"):
        with pytest.raises(InputError, match=r"^path: expected a safetensors or torch.save"):
            read_state_dict(tmp_path / name)
    assert not (tmp_path / "pwned").exists()
