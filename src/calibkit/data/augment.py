"""Batch augmentations for NCHW float tensors, vectorised over the batch.

Each takes an explicit :class:`torch.Generator`, so a seeded generator gives the same
augmentation every time. The random draws (a CPU generator's) are apart from the pixel
work: :func:`draw_crop_and_flip` draws what :func:`crop_and_flip` would, and
:func:`apply_crop_and_flip` applies it on the images' own device, so a trainer can draw a
whole epoch on the host, send it to the GPU once and augment there, on exactly the draws of
the CPU path.

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
    top, left = _draw_offsets(x.shape[0], pad, generator)
    return _crop(x, top.to(x.device), left.to(x.device), pad)


def _draw_offsets(
    n: int, pad: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    top = torch.randint(0, 2 * pad + 1, (n,), generator=generator)
    left = torch.randint(0, 2 * pad + 1, (n,), generator=generator)
    return top, left


def _crop(x: torch.Tensor, top: torch.Tensor, left: torch.Tensor, pad: int) -> torch.Tensor:
    """``x`` zero-padded by ``pad`` and cropped at the offsets ``top``/``left`` (on x's device)."""
    n, c, h, w = x.shape
    padded = F.pad(x, (pad, pad, pad, pad))
    dev = x.device
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
    return _flip(x, flip.to(x.device))


def _flip(x: torch.Tensor, flip: torch.Tensor) -> torch.Tensor:
    """``x`` with the images where ``flip`` is true mirrored left-right."""
    return torch.where(flip[:, None, None, None], x.flip(3), x)


def crop_and_flip(x: torch.Tensor, *, generator: torch.Generator, pad: int = 4) -> torch.Tensor:
    """The standard CIFAR augmentation: :func:`random_crop` then :func:`random_hflip`."""
    return random_hflip(random_crop(x, pad, generator=generator), generator=generator)


def draw_crop_and_flip(
    n: int, *, generator: torch.Generator, pad: int = 4
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The draws :func:`crop_and_flip` makes for a batch of ``n`` images, in its order:
    ``(top, left, flip)`` on the CPU (offsets in ``[0, 2 pad]``, flip a bool per image).

    >>> x = torch.rand(3, 1, 4, 4)
    >>> draws = draw_crop_and_flip(3, generator=torch.Generator().manual_seed(1))
    >>> same = crop_and_flip(x, generator=torch.Generator().manual_seed(1))
    >>> torch.equal(apply_crop_and_flip(x, *draws), same)
    True
    """
    n = check_int("n", n, low=0)
    pad = check_int("pad", pad, low=0)
    if pad == 0:
        top = left = torch.zeros(n, dtype=torch.int64)
    else:
        top, left = _draw_offsets(n, pad, generator)
    return top, left, torch.rand(n, generator=generator) < 0.5


def apply_crop_and_flip(
    x: torch.Tensor, top: torch.Tensor, left: torch.Tensor, flip: torch.Tensor, pad: int = 4
) -> torch.Tensor:
    """:func:`crop_and_flip` with its draws given (from :func:`draw_crop_and_flip`), done on
    ``x``'s device; the draws must be there too (or on the CPU, then they are moved)."""
    _check_batch(x)
    pad = check_int("pad", pad, low=0)
    dev = x.device
    cropped = _crop(x, top.to(dev), left.to(dev), pad) if pad else x.clone()
    return _flip(cropped, flip.to(dev))
