"""MLP-Mixer (Tolstikhin et al., 2021) with timm's parameter names: Mixer-B/16.

16x16 patches embedded by one strided convolution (``stem.proj``), then ``depth`` blocks:
``x + mlp_tokens(norm1(x))`` mixing across patches (an MLP over the patch axis, half the
width wide) and ``x + mlp_channels(norm2(x))`` mixing across channels (4x wide); a final
LayerNorm (``norm``), the mean over patches and a linear ``head``. Layer norms use eps
1e-6 and the MLPs GELU. The names and shapes are those of timm's ``mixer_b16_224``, so its
checkpoints load strictly.

>>> import torch
>>> model = MlpMixer(num_classes=3, img_size=32, patch_size=16, dim=8, depth=2)
>>> model(torch.zeros(2, 3, 32, 32)).shape
torch.Size([2, 3])
"""

from __future__ import annotations

from torch import Tensor, nn

from calibkit.core.errors import InputError
from calibkit.models.vit import Mlp, PatchEmbed


class MixerBlock(nn.Module):
    """Token mixing then channel mixing, each pre-normed and added to its input."""

    def __init__(self, dim: int, tokens: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp_tokens = Mlp(tokens, dim // 2)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp_channels = Mlp(dim, 4 * dim)

    def forward(self, x: Tensor) -> Tensor:
        """(N, tokens, dim) -> (N, tokens, dim)."""
        x = x + self.mlp_tokens(self.norm1(x).transpose(1, 2)).transpose(1, 2)
        out: Tensor = x + self.mlp_channels(self.norm2(x))
        return out


class MlpMixer(nn.Module):
    """An MLP-Mixer classifying by the mean of its patch features."""

    def __init__(
        self,
        num_classes: int,
        in_channels: int = 3,
        img_size: int = 224,
        patch_size: int = 16,
        dim: int = 768,
        depth: int = 12,
    ) -> None:
        super().__init__()
        if img_size % patch_size:
            raise InputError("img_size", f"a multiple of {patch_size}", repr(img_size))
        self.stem = PatchEmbed(in_channels, dim, patch_size)
        tokens = (img_size // patch_size) ** 2
        self.blocks = nn.Sequential(*[MixerBlock(dim, tokens) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x: Tensor) -> Tensor:
        """Logits of shape (N, K)."""
        features = self.norm(self.blocks(self.stem(x))).mean(dim=1)
        logits: Tensor = self.head(features)
        return logits


def mixer_b16_224(num_classes: int = 1000, in_channels: int = 3) -> MlpMixer:
    """Mixer-B/16 for 224x224 images with timm's names (59.88M parameters for K = 1000)."""
    return MlpMixer(num_classes, in_channels, 224, 16, 768, 12)
