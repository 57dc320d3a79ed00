"""The image-array type and its one normalisation, below both ``data`` and ``calibrators``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from calibkit.calibrators.model.clamping.inputs import as_inputs
from calibkit.core.errors import InputError
from calibkit.core.images import ImageArrays, ImageDataset, image_tensor
from calibkit.data import ImageArrays as DataImageArrays


def _data() -> ImageArrays:
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(6, 3, 4, 3), dtype=np.uint8)
    return ImageArrays(images, np.arange(6) % 2, ("a", "b"))


def test_data_and_neural_clamping_share_the_type_and_the_normalisation() -> None:
    assert DataImageArrays is ImageArrays
    data = _data()
    assert isinstance(data, ImageDataset)
    mean, std = (0.1, 0.2, 0.3), (0.5, 0.25, 2.0)
    by_data = data.to_tensor(mean, std)
    # the same function on the same pixels: bit-identical, not merely close
    assert torch.equal(by_data, image_tensor(data.images, mean, std))
    assert torch.equal(by_data, as_inputs(data, mean, std))


def test_image_tensor_names_its_argument() -> None:
    with pytest.raises(InputError, match=r"^inputs: expected uint8 images"):
        image_tensor(np.zeros((2, 2, 2, 1), dtype=np.float32), (0.0,), (1.0,), name="inputs")
    with pytest.raises(InputError, match=r"^mean/std: expected 3 values each"):
        image_tensor(_data().images, (0.5,), (0.5,))
