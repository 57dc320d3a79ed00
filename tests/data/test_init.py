"""Tests for calibkit.data (the registry and load_dataset)."""

from __future__ import annotations

import numpy as np
import pytest

from calibkit.core.errors import InputError, UnknownNameError
from calibkit.data import DATASETS, load_dataset, load_digits
from tests.conftest import shared_path


def test_registry_names() -> None:
    names = ["digits", "cifar10-jpeg", "cifar10", "cifar100", "bloodmnist", "imagenet-val"]
    assert DATASETS.names() == names
    with pytest.raises(
        UnknownNameError, match="bloodmnist, cifar10, cifar10-jpeg, cifar100, digits, imagenet-val"
    ):
        load_dataset("mnist")


def test_digits_shape_and_range() -> None:
    data = load_digits()
    train, test = data["train"], data["test"]
    assert len(train) + len(test) == 1797
    assert train.images.shape[1:] == (8, 8, 1)
    assert train.images.dtype == np.uint8
    assert train.images.max() == 255
    assert train.images.min() == 0
    assert train.classes == tuple("0123456789")


def test_spec_subset() -> None:
    data = load_dataset("digits:7,1")
    assert data["test"].classes == ("7", "1")
    assert set(np.unique(data["train"].labels).tolist()) == {0, 1}
    with pytest.raises(InputError, match="0, 1, 2"):
        load_dataset("digits:1,x")


def test_file_datasets_need_data_dir() -> None:
    with pytest.raises(InputError, match="data_dir"):
        load_dataset("bloodmnist")


@pytest.mark.shared_data
def test_bloodmnist_spec() -> None:
    folder = shared_path("bloodmnist.npz").parent
    data = load_dataset("bloodmnist:platelet,basophil", folder)
    assert data["val"].classes == ("platelet", "basophil")
    assert sorted(np.unique(data["val"].labels).tolist()) == [0, 1]


def test_registry_metadata_says_which_datasets_need_a_folder(tmp_path: object) -> None:
    assert DATASETS.info("digits")["bundled"] is True
    assert {n for n in DATASETS.names() if "default_dir" in DATASETS.info(n)} == {
        "cifar10",
        "cifar100",
    }
    for name in ("cifar10-jpeg", "bloodmnist"):
        with pytest.raises(InputError, match=rf"^data_dir: expected the folder holding the {name}"):
            load_dataset(name)
