"""Tests for calibkit.data.arrays."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from calibkit.core.errors import InputError
from calibkit.data.arrays import ImageArrays


def _data() -> ImageArrays:
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(12, 4, 5, 3), dtype=np.uint8)
    return ImageArrays(images, np.arange(12) % 3, ("a", "b", "c"))


def test_subset_relabels_in_given_order() -> None:
    data = _data()
    sub = data.subset_classes(["c", "a"])
    assert sub.classes == ("c", "a")
    assert sub.labels.dtype == np.int64
    assert len(sub) == 8
    orig = data.labels[np.isin(data.labels, [0, 2])]
    np.testing.assert_array_equal(sub.labels, np.where(orig == 2, 0, 1))
    np.testing.assert_array_equal(sub.images, data.images[np.isin(data.labels, [0, 2])])


def test_subset_unknown_class_lists_valid() -> None:
    with pytest.raises(InputError, match="a, b, c"):
        _data().subset_classes(["a", "zebra"])


def test_channel_stats_matches_float64() -> None:
    data = _data()
    mean, std = data.channel_stats()
    x = data.images.astype(np.float64) / 255.0
    np.testing.assert_allclose(mean, x.mean(axis=(0, 1, 2)), rtol=1e-12)
    np.testing.assert_allclose(std, x.std(axis=(0, 1, 2)), rtol=1e-10)


def test_to_tensor_normalises_nchw() -> None:
    data = _data()
    mean, std = (0.1, 0.2, 0.3), (0.5, 0.25, 2.0)
    t = data.to_tensor(mean, std)
    assert t.dtype == torch.float32
    assert tuple(t.shape) == (12, 3, 4, 5)
    ref = (data.images / 255.0 - np.array(mean)) / np.array(std)
    np.testing.assert_allclose(t.permute(0, 2, 3, 1).numpy(), ref, atol=1e-5)


def test_bad_inputs() -> None:
    with pytest.raises(InputError, match="uint8"):
        ImageArrays(np.zeros((2, 2, 2, 1), dtype=np.float32), np.zeros(2, np.int64), ("a",))
    with pytest.raises(InputError, match="labels"):
        ImageArrays(np.zeros((2, 2, 2, 1), dtype=np.uint8), np.array([0, 3]), ("a", "b"))
    with pytest.raises(InputError, match="mean/std"):
        _data().to_tensor((0.5,), (0.5,))
