"""Vision Transformer (Dosovitskiy et al., 2021) with timm's parameter names: ViT-S/16.

The image is cut into 16x16 patches, each embedded by one strided convolution
(``patch_embed.proj``); a class token (``cls_token``) is prepended and learned position
embeddings (``pos_embed``, one per patch plus the class token) added. Then ``depth``
pre-norm blocks: ``x + attn(norm1(x))`` (multi-head self-attention with one ``qkv``
projection and an output ``proj``), ``x + mlp(norm2(x))`` (``fc1`` - GELU - ``fc2``,
4x wide); a final LayerNorm (``norm``) and a linear ``head`` on the class token. Layer
norms use eps 1e-6. The names and shapes are those of timm's
``vit_small_patch16_224``, so its checkpoints load strictly.

>>> import torch
>>> model = VisionTransformer(num_classes=3, img_size=32, patch_size=16, dim=24, depth=2, heads=3)
>>> model(torch.zeros(2, 3, 32, 32)).shape
torch.Size([2, 3])
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from calibkit.core.errors import InputError


class PatchEmbed(nn.Module):
    """Non-overlapping ``patch`` x ``patch`` patches, each mapped to a ``dim`` vector."""

    def __init__(self, in_channels: int, dim: int, patch: int) -> None:
        super().__init__()
        self.proj = nn.Conv2d(in_channels, dim, patch, patch)

    def forward(self, x: Tensor) -> Tensor:
        """(N, C, H, W) -> (N, patches, dim)."""
        patches: Tensor = self.proj(x)
        return patches.flatten(2).transpose(1, 2)


class Mlp(nn.Module):
    """``fc1`` - GELU - ``fc2``."""

    def __init__(self, dim: int, hidden: int, out: int | None = None) -> None:
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, out if out is not None else dim)

    def forward(self, x: Tensor) -> Tensor:
        """The MLP applied to the last dimension."""
        out: Tensor = self.fc2(F.gelu(self.fc1(x)))
        return out


class Attention(nn.Module):
    """Multi-head self-attention: one ``qkv`` linear, scaled dot products, ``proj``."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: Tensor) -> Tensor:
        """(N, T, dim) -> (N, T, dim)."""
        n, t, d = x.shape
        q, k, v = self.qkv(x).view(n, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(n, t, d)
        result: Tensor = self.proj(out)
        return result


class Block(nn.Module):
    """Pre-norm transformer block."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = Attention(dim, heads)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = Mlp(dim, 4 * dim)

    def forward(self, x: Tensor) -> Tensor:
        """Attention then MLP, each added to its input."""
        x = x + self.attn(self.norm1(x))
        out: Tensor = x + self.mlp(self.norm2(x))
        return out


class VisionTransformer(nn.Module):
    """A ViT classifying by its class token."""

    def __init__(
        self,
        num_classes: int,
        in_channels: int = 3,
        img_size: int = 224,
        patch_size: int = 16,
        dim: int = 384,
        depth: int = 12,
        heads: int = 6,
    ) -> None:
        super().__init__()
        if img_size % patch_size or dim % heads:
            got = f"img_size {img_size}, patch_size {patch_size}, dim {dim}, heads {heads}"
            raise InputError("img_size/dim", "multiples of patch_size/heads", got)
        self.patch_embed = PatchEmbed(in_channels, dim, patch_size)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.randn(1, (img_size // patch_size) ** 2 + 1, dim) * 0.02)
        self.blocks = nn.Sequential(*[Block(dim, heads) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.head = nn.Linear(dim, num_classes)
        nn.init.normal_(self.cls_token, std=1e-6)

    def forward(self, x: Tensor) -> Tensor:
        """Logits of shape (N, K)."""
        tokens = self.patch_embed(x)
        cls = self.cls_token.expand(tokens.shape[0], -1, -1)
        tokens = torch.cat([cls, tokens], dim=1) + self.pos_embed
        logits: Tensor = self.head(self.norm(self.blocks(tokens))[:, 0])
        return logits


def vit_small_patch16_224(num_classes: int = 1000, in_channels: int = 3) -> VisionTransformer:
    """ViT-S/16 for 224x224 images with timm's names (22.05M parameters for K = 1000)."""
    return VisionTransformer(num_classes, in_channels, 224, 16, 384, 12, 6)
