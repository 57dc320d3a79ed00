"""Tests of the inputs Neural Clamping takes (tensors, arrays, image datasets)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from calibkit.calibrators.model.clamping import ImageDataset, NeuralClamping, SGDSettings
from calibkit.calibrators.model.clamping.inputs import as_inputs
from calibkit.core.errors import InputError
from tests.calibrators.model.clamping.problems import conv_bn

pytestmark = pytest.mark.usefixtures("one_thread")


def test_a_dataset_of_the_loaders_is_taken_as_it_is() -> None:
    from calibkit.data import ImageArrays

    gen = np.random.default_rng(0)
    images = gen.integers(0, 256, size=(60, 4, 4, 3), dtype=np.uint8)
    data = ImageArrays(images, np.arange(60) % 3, ("a", "b", "c"))
    mean, std = (0.5, 0.4, 0.3), (0.2, 0.25, 0.3)
    kw = {"sgd": SGDSettings(epochs=2, batch_size=16, lr=0.05, progress=False)}
    model = conv_bn()
    by_data = NeuralClamping(model, **kw, mean=mean, std=std).fit(data)  # type: ignore[arg-type]
    x = data.to_tensor(mean, std)
    by_tensor = NeuralClamping(model, **kw).fit(x, data.labels)  # type: ignore[arg-type]
    assert torch.equal(by_data.delta_, by_tensor.delta_)
    np.testing.assert_array_equal(by_data.predict_proba(data), by_tensor.predict_proba(x))
    with pytest.raises(InputError, match=r"^labels:"):
        NeuralClamping(model, **kw).fit(x)  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"^mean:"):
        NeuralClamping(model, mean="abc")  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"^mean/std:"):
        NeuralClamping(model, mean=(0.5,), std=(1.0,)).fit(data)


class _Pixels:
    """Any object with uint8 images (N, H, W, C) and labels: not calibkit's ImageArrays."""

    def __init__(self, images: np.ndarray, labels: np.ndarray) -> None:
        self.images, self.labels = images, labels


def test_any_dataset_with_images_and_labels() -> None:
    from calibkit.data import ImageArrays

    gen = np.random.default_rng(1)
    images = gen.integers(0, 256, size=(30, 4, 4, 3), dtype=np.uint8)
    labels = np.arange(30) % 3
    mean, std = (0.5, 0.4, 0.3), (0.2, 0.25, 0.3)
    x = as_inputs(_Pixels(images, labels), mean, std)
    ref = ImageArrays(images, labels, ("a", "b", "c")).to_tensor(mean, std)
    torch.testing.assert_close(x, ref, rtol=0, atol=1e-6)
    assert isinstance(_Pixels(images, labels), ImageDataset)
    assert not isinstance(torch.zeros(2), ImageDataset)
    by_hand = (images[0, 1, 2, 0] / 255 - 0.5) / 0.2  # pixel (1, 2) of channel 0
    assert float(x[0, 0, 1, 2]) == pytest.approx(by_hand, rel=1e-6)
    kw = {"sgd": SGDSettings(epochs=1, batch_size=16, progress=False)}
    nc = NeuralClamping(conv_bn(), mean=mean, std=std, **kw).fit(_Pixels(images, labels))
    assert nc.predict_proba(_Pixels(images, labels)).shape == (30, 3)
    with pytest.raises(InputError, match=r"^inputs:"):
        as_inputs(_Pixels(images.astype(np.float32), labels))
