"""Tests for calibkit.data.augment."""

from __future__ import annotations

import pytest
import torch

from calibkit.core.errors import InputError
from calibkit.data.augment import crop_and_flip, random_crop, random_hflip


def _batch() -> torch.Tensor:
    return torch.rand(16, 3, 8, 8, generator=torch.Generator().manual_seed(0)) + 1.0


def test_crop_shape_determinism_and_padding() -> None:
    x = _batch()
    a = random_crop(x, 4, generator=torch.Generator().manual_seed(5))
    b = random_crop(x, 4, generator=torch.Generator().manual_seed(5))
    assert a.shape == x.shape
    torch.testing.assert_close(a, b)
    # every crop is a shifted window: nonzero values come from x, the rest is zero padding
    assert torch.all((a == 0) | (a >= 1.0))
    assert (a == 0).any()


def test_crop_matches_explicit_window() -> None:
    x = _batch()
    g = torch.Generator().manual_seed(9)
    out = random_crop(x, 2, generator=g)
    g = torch.Generator().manual_seed(9)
    top = torch.randint(0, 5, (16,), generator=g)
    left = torch.randint(0, 5, (16,), generator=g)
    padded = torch.nn.functional.pad(x, (2, 2, 2, 2))
    for i in range(16):
        ref = padded[i, :, top[i] : top[i] + 8, left[i] : left[i] + 8]
        torch.testing.assert_close(out[i], ref)


def test_flip_really_flips() -> None:
    x = _batch()
    out = random_hflip(x, p=1.0, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(out, x.flip(3))
    same = random_hflip(x, p=0.0, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(same, x)
    half = random_hflip(x, generator=torch.Generator().manual_seed(1))
    flipped = [bool(torch.equal(half[i], x[i].flip(2))) for i in range(16)]
    kept = [bool(torch.equal(half[i], x[i])) for i in range(16)]
    assert all(f or k for f, k in zip(flipped, kept, strict=True))
    assert any(flipped)
    assert any(kept)


def test_crop_and_flip_seeded() -> None:
    x = _batch()
    a = crop_and_flip(x, generator=torch.Generator().manual_seed(2))
    b = crop_and_flip(x, generator=torch.Generator().manual_seed(2))
    torch.testing.assert_close(a, b)


def test_bad_input() -> None:
    with pytest.raises(InputError, match="N, C, H, W"):
        random_crop(torch.zeros(3, 8, 8), generator=torch.Generator())
    with pytest.raises(InputError, match=r"^p: expected a finite number in \[0, 1\], got 2\.0"):
        random_hflip(_batch(), p=2.0, generator=torch.Generator())
    with pytest.raises(InputError, match=r"^pad: expected an integer >= 0, got -1"):
        random_crop(_batch(), pad=-1, generator=torch.Generator())
