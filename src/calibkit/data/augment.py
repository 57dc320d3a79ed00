"""Batch augmentations for NCHW float tensors, vectorised over the batch.

Both take an explicit :class:`torch.Generator`, so a seeded generator gives the same
augmentation every time.

>>> x = torch.arange(2 * 1 * 2 * 3, dtype=torch.float32).view(2, 1, 2, 3)
>>> g = torch.Generator().manual_seed(0)
>>> random_crop(x, pad=1, generator=g).shape
torch.Size([2, 1, 2, 3])
>>> random_hflip(x, p=1.0, generator=g)[0, 0, 0].tolist()
[2.0, 1.0, 0.0]
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from calibkit.core.errors import InputError
from calibkit.core.validation import check_int, check_real


def _check_batch(x: torch.Tensor) -> None:
    if x.ndim != 4 or not x.is_floating_point():
        raise InputError("x", "a float tensor of shape (N, C, H, W)", f"{x.dtype} {tuple(x.shape)}")


def random_crop(x: torch.Tensor, pad: int = 4, *, generator: torch.Generator) -> torch.Tensor:
    """Zero-pad each side by ``pad`` and crop back to ``H x W`` at a random offset per image."""
    _check_batch(x)
    pad = check_int("pad", pad, low=0)
    if pad == 0:
        return x.clone()
    n, c, h, w = x.shape
    padded = F.pad(x, (pad, pad, pad, pad))
    dev = x.device
    top = torch.randint(0, 2 * pad + 1, (n,), generator=generator).to(dev)
    left = torch.randint(0, 2 * pad + 1, (n,), generator=generator).to(dev)
    rows = (top[:, None] + torch.arange(h, device=dev)[None, :])[:, None, :, None]
    cols = (left[:, None] + torch.arange(w, device=dev)[None, :])[:, None, None, :]
    batch = torch.arange(n, device=dev)[:, None, None, None]
    chan = torch.arange(c, device=dev)[None, :, None, None]
    return padded[batch, chan, rows, cols]


def random_hflip(x: torch.Tensor, p: float = 0.5, *, generator: torch.Generator) -> torch.Tensor:
    """Mirror each image left-right with probability ``p`` (independently per image)."""
    _check_batch(x)
    p = check_real("p", p, 0.0, 1.0)
    flip = torch.rand(x.shape[0], generator=generator) < p
    mask = flip.to(x.device)[:, None, None, None]
    return torch.where(mask, x.flip(3), x)


def crop_and_flip(x: torch.Tensor, *, generator: torch.Generator, pad: int = 4) -> torch.Tensor:
    """The standard CIFAR augmentation: :func:`random_crop` then :func:`random_hflip`."""
    return random_hflip(random_crop(x, pad, generator=generator), generator=generator)
