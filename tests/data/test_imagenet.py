"""Tests for calibkit.data.imagenet (a class-folder validation set) and the CIFAR class lists."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from calibkit.core.errors import InputError
from calibkit.data import DATASETS, load_dataset, resize_center_crop
from calibkit.data.cifar import read_cifar
from calibkit.data.cifar_classes import CIFAR100_CLASSES
from calibkit.data.imagenet import load_imagenet_val
from tests.data.synthetic import cifar_archive, imagenet_folder


def test_resize_center_crop_by_hand() -> None:
    # 8 x 4 (w x h) image whose column x holds value 10 * x: shorter side 4 -> 2 halves
    # the width to 4 columns; the central 2 x 2 crop takes resized columns 1 and 2.
    pixels = np.repeat((10 * np.arange(8, dtype=np.uint8))[None, :, None], 4, axis=0)
    image = Image.fromarray(np.repeat(pixels, 3, axis=2))
    out = resize_center_crop(image, resize=2, crop=2)
    assert out.shape == (2, 2, 3)
    resized = np.asarray(image.resize((4, 2), Image.Resampling.BILINEAR))
    np.testing.assert_array_equal(out, resized[0:2, 1:3])
    # a portrait image keeps its aspect ratio: 300 x 600 -> 256 x 512, crop the middle
    assert resize_center_crop(Image.new("L", (300, 600))).shape == (224, 224, 3)


def test_imagenet_folder_layout(tmp_path: Path) -> None:
    folder = imagenet_folder(tmp_path / "val", n_classes=3, per_class=3)
    data = load_imagenet_val(folder, resize=40, crop=32)
    assert data["train"].classes == ("n01440764", "n01440765", "n01440766")
    assert data["train"].labels.tolist() == [0, 1, 2]  # the first image of each class
    assert data["test"].labels.tolist() == [0, 0, 1, 1, 2, 2]
    assert data["test"].images.shape == (6, 32, 32, 3)
    registered = load_dataset("imagenet-val", folder)
    assert registered["test"].images.shape == (6, 224, 224, 3)


def test_imagenet_folder_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="folder of class folders"):
        load_imagenet_val(tmp_path / "absent")
    (tmp_path / "empty" / "n0").mkdir(parents=True)
    with pytest.raises(InputError, match="no images in n0"):
        load_imagenet_val(tmp_path / "empty")
    (tmp_path / "bad" / "n0").mkdir(parents=True)
    (tmp_path / "bad" / "n0" / "x.JPEG").write_bytes(b"not an image")
    with pytest.raises(InputError, match="readable image"):
        load_imagenet_val(tmp_path / "bad")


def test_cifar100_class_list_is_the_official_one(tmp_path: Path) -> None:
    assert DATASETS.info("cifar100")["classes"] == CIFAR100_CLASSES
    assert len(CIFAR100_CLASSES) == 100 == len(set(CIFAR100_CLASSES))
    assert CIFAR100_CLASSES[:3] == ("apple", "aquarium_fish", "baby")
    assert CIFAR100_CLASSES[-1] == "worm"
    data = read_cifar("cifar100", cifar_archive(tmp_path, "cifar100", per_split=100))
    assert data["train"].classes == CIFAR100_CLASSES
    assert data["test"].images.shape == (100, 32, 32, 3)
