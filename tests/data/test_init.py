"""Tests for calibkit.data (the registry and load_dataset)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from calibkit.core.errors import InputError, UnknownNameError
from calibkit.data import DATASETS, load_dataset, load_digits
from calibkit.data.medmnist import KNOWN_MD5
from tests.conftest import shared_path
from tests.data.synthetic import bloodmnist_npz, cifar10_jpeg_zip, imagenet_folder


def test_an_unknown_dataset_lists_every_registered_name() -> None:
    with pytest.raises(UnknownNameError, match=re.escape(", ".join(sorted(DATASETS.names())))):
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


def test_file_datasets_need_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CALIBKIT_DATA", str(tmp_path))
    with pytest.raises(InputError, match=r"data_dir: .*\$CALIBKIT_DATA .* has no bloodmnist\.npz"):
        load_dataset("bloodmnist")


@pytest.mark.shared_data
def test_bloodmnist_spec() -> None:
    folder = shared_path("bloodmnist.npz").parent
    data = load_dataset("bloodmnist:platelet,basophil", folder)
    assert data["val"].classes == ("platelet", "basophil")
    assert sorted(np.unique(data["val"].labels).tolist()) == [0, 1]


def test_registry_metadata_says_which_datasets_need_a_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CALIBKIT_DATA", raising=False)
    monkeypatch.setenv("CALIBKIT_CACHE", str(tmp_path))
    assert DATASETS.info("digits")["bundled"] is True
    assert {n for n in DATASETS.names() if "default_dir" in DATASETS.info(n)} == set(
        DATASETS.names()
    ) - {"digits"}
    for name in ("cifar10-jpeg", "bloodmnist"):
        with pytest.raises(InputError, match=rf"^data_dir: expected the folder holding the {name}"):
            load_dataset(name)


@pytest.mark.parametrize(
    ("spec", "write"),
    [
        ("cifar10-jpeg:bird,cat", lambda d: cifar10_jpeg_zip(d)),
        ("bloodmnist", lambda d: bloodmnist_npz(d)),
        ("imagenet-val", lambda d: imagenet_folder(d)),
    ],
)
def test_every_file_dataset_reads_calibkit_data_then_the_default_folder(
    spec: str, write: Callable[[Path], object], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``data_dir`` None: ``$CALIBKIT_DATA``, else ``$CALIBKIT_CACHE/datasets``; a passed
    ``data_dir`` wins over both (here: the same archive written in three places; cifar10
    and cifar100 are tested in test_cifar)."""
    monkeypatch.delitem(KNOWN_MD5, "bloodmnist.npz")  # a synthetic file, not the published one
    monkeypatch.setenv("CALIBKIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("CALIBKIT_DATA", str(tmp_path / "env"))
    write(tmp_path / "env")
    from_env = load_dataset(spec)
    monkeypatch.delenv("CALIBKIT_DATA")
    write(tmp_path / "cache" / "datasets")
    from_default = load_dataset(spec)
    monkeypatch.setenv("CALIBKIT_DATA", str(tmp_path / "nowhere"))
    write(tmp_path / "passed")
    passed = load_dataset(spec, tmp_path / "passed")
    for data in (from_default, passed):
        assert sorted(data) == sorted(from_env)
        for split, arrays in data.items():
            assert arrays.classes == from_env[split].classes
            np.testing.assert_array_equal(arrays.labels, from_env[split].labels)
            np.testing.assert_array_equal(arrays.images, from_env[split].images)


def test_every_class_is_known_without_decoding_an_image(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 32: the classes a model must have, read before any work (the zip's index, or
    the registry's names); None where only loading can tell."""
    import calibkit.data.image_folder as image_folder
    from calibkit.data import dataset_classes

    def decoded(*args: object, **kwargs: object) -> None:
        raise AssertionError("an image was decoded")

    cifar10_jpeg_zip(tmp_path, per_class=2)
    monkeypatch.setattr(image_folder, "_decode_all", decoded)
    every = dataset_classes("cifar10-jpeg:bird,cat", tmp_path)
    assert every is not None
    assert every[:3] == ("airplane", "automobile", "bird")
    assert len(every) == 10
    blood = dataset_classes("bloodmnist", tmp_path)  # the official names, no file needed
    assert blood is not None
    assert (len(blood), blood[0]) == (8, "basophil")
    assert dataset_classes("cifar10-jpeg", tmp_path / "missing") is None  # refused on loading
    assert dataset_classes("imagenet-val", tmp_path) is None


def test_a_subset_may_keep_its_labels_among_every_class(tmp_path: Path) -> None:
    """``keep_labels``: a subset's images keep their label among all the dataset's classes
    (the columns of a model of every class), the same images as the relabelled subset."""
    cifar10_jpeg_zip(tmp_path, per_class=3)
    kept = load_dataset("cifar10-jpeg:cat,bird", tmp_path, keep_labels=True)["test"]
    relabelled = load_dataset("cifar10-jpeg:cat,bird", tmp_path)["test"]
    assert kept.classes[2:4] == ("bird", "cat")
    assert len(kept.classes) == 10
    assert kept.labels.tolist() == [2, 2, 2, 3, 3, 3]
    assert relabelled.labels.tolist() == [1, 1, 1, 0, 0, 0]  # cat 0, bird 1: the order given
    assert np.array_equal(kept.images, relabelled.images)
