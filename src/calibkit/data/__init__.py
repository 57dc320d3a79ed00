"""Datasets for training and calibrating classifiers.

Loaders are registered by name in :data:`DATASETS`; :func:`load_dataset` takes a spec
``name`` or ``name:class,class`` (a class subset, relabelled ``0..k-1`` in that order, or
with ``keep_labels`` keeping each image's label among all the dataset's classes, for a model
of every class) and returns ``{split: ImageArrays}``; :func:`dataset_classes` names the
classes of the whole dataset without decoding an image where it can. ``cifar10``/``cifar100``
read the official python archives (downloaded and MD5-checked when absent);
``cifar10-jpeg`` and ``bloodmnist`` read their file from the data folder, ``imagenet-val``
reads the data folder as a folder of class folders.

The data folder of every dataset but the bundled ``digits`` is, in this order: the
``data_dir`` argument (the CLI's ``--data-dir``, a config's ``data_dir``), else
``$CALIBKIT_DATA``, else ``~/.cache/calibkit/datasets`` (``$CALIBKIT_CACHE/datasets``):
:func:`~calibkit.data.cifar.default_data_dir`. A file missing from a folder that was not
passed is refused naming where it was looked for.

A spec may end in ``@corruption:severity`` (CIFAR-10-C's corruptions,
:mod:`calibkit.data.corruptions`), which corrupts every split, or ``@corruption:severity:split``,
which corrupts that split only (the others stay clean): ``cifar10-jpeg@gaussian_noise:3:test``.
Image ``i`` of a split is corrupted with a generator seeded by ``(dataset, split, corruption,
severity, i)``, ``i`` its place in the whole split (before a class subset), so a corrupted image
is the same whatever subset or batch it is loaded in.

>>> data = load_dataset("digits:3,8")
>>> sorted(data), data["train"].classes, data["train"].images.shape[1:]
(['test', 'train'], ('3', '8'), (8, 8, 1))
>>> noisy = load_dataset("digits:3,8@gaussian_noise:5:test")
>>> bool((noisy["test"].images != data["test"].images).any())
True
>>> bool((noisy["train"].images == data["train"].images).all())
True
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from calibkit.core import names
from calibkit.core.errors import InputError
from calibkit.core.registry import Registry
from calibkit.core.splits import stratified_folds, stratified_split
from calibkit.data.arrays import ImageArrays
from calibkit.data.augment import crop_and_flip, random_crop, random_hflip
from calibkit.data.cifar import default_data_dir, load_cifar
from calibkit.data.cifar_classes import CIFAR10_CLASSES, CIFAR100_CLASSES
from calibkit.data.corruptions import CORRUPTIONS, check_corruption, corrupt
from calibkit.data.image_folder import (
    default_cache_dir,
    image_folder_classes,
    load_image_folder,
    read_image_folder,
)
from calibkit.data.imagenet import load_imagenet_val, resize_center_crop
from calibkit.data.medmnist import KNOWN_CLASSES, load_medmnist

__all__ = [
    "CIFAR10_CLASSES",
    "CIFAR100_CLASSES",
    "CORRUPTIONS",
    "DATASETS",
    "DatasetSpec",
    "ImageArrays",
    "corrupt",
    "crop_and_flip",
    "dataset_classes",
    "default_cache_dir",
    "default_data_dir",
    "load_cifar",
    "load_dataset",
    "load_digits",
    "load_image_folder",
    "load_imagenet_val",
    "load_medmnist",
    "parse_dataset_spec",
    "random_crop",
    "random_hflip",
    "read_image_folder",
    "resize_center_crop",
    "stratified_folds",
    "stratified_split",
]

#: A loader takes the data folder and returns ``{split: ImageArrays}``.
Loader = Callable[[Path], dict[str, ImageArrays]]

#: Dataset loaders by name, declared (names and order) in :data:`calibkit.core.names.DATASETS`.
#: Metadata: ``bundled=True`` for data that needs no folder, ``default_dir``, a function
#: giving the folder used when none is passed, ``file``, the file a loader reads in its
#: folder, ``classes``, the class names in label order where they are fixed, and ``index``,
#: a function reading them from ``file`` without decoding.
DATASETS: Registry[Loader] = Registry("dataset")
for _name in names.DATASETS:
    DATASETS.declare(_name, __name__)


@DATASETS.register("digits", bundled=True, classes=tuple(str(c) for c in range(10)))
def load_digits(data_dir: Path | None = None) -> dict[str, ImageArrays]:
    """scikit-learn's bundled 8x8 digits (1,797 images, offline), 0..16 scaled to 0..255.

    Split with a seeded stratified 1/3 test part (``seed=0``).
    """
    from sklearn.datasets import load_digits as sk_digits

    bunch = sk_digits()
    images = np.rint(np.asarray(bunch.images) * (255.0 / 16.0)).astype(np.uint8)[..., None]
    labels = np.asarray(bunch.target, dtype=np.int64)
    train, test = stratified_split(labels, 1 / 3, seed=0)
    classes = tuple(str(c) for c in range(10))
    return {
        "train": ImageArrays(images[train], labels[train], classes),
        "test": ImageArrays(images[test], labels[test], classes),
    }


@DATASETS.register(
    "cifar10-jpeg",
    default_dir=default_data_dir,
    file="cifar10-jpeg.zip",
    index=image_folder_classes,
)
def load_cifar10_jpeg(data_dir: Path) -> dict[str, ImageArrays]:
    """``<data_dir>/cifar10-jpeg.zip`` (60,000 32x32 JPEGs), decoded once then cached."""
    return load_image_folder(Path(data_dir) / "cifar10-jpeg.zip")


@DATASETS.register("cifar10", default_dir=default_data_dir, classes=CIFAR10_CLASSES)
def load_cifar10(data_dir: Path) -> dict[str, ImageArrays]:
    """CIFAR-10 from ``<data_dir>/cifar-10-python.tar.gz`` (downloaded if absent), cached."""
    return load_cifar("cifar10", data_dir)


@DATASETS.register("cifar100", default_dir=default_data_dir, classes=CIFAR100_CLASSES)
def load_cifar100(data_dir: Path) -> dict[str, ImageArrays]:
    """CIFAR-100 (fine labels) from ``<data_dir>/cifar-100-python.tar.gz``, cached."""
    return load_cifar("cifar100", data_dir)


@DATASETS.register(
    "bloodmnist",
    default_dir=default_data_dir,
    file="bloodmnist.npz",
    classes=KNOWN_CLASSES["bloodmnist.npz"],
)
def load_bloodmnist(data_dir: Path) -> dict[str, ImageArrays]:
    """``<data_dir>/bloodmnist.npz`` (MD5-checked; train/val/test, 28x28 RGB, 8 classes)."""
    return load_medmnist(Path(data_dir) / "bloodmnist.npz")


@DATASETS.register("imagenet-val", default_dir=default_data_dir)
def load_imagenet(data_dir: Path) -> dict[str, ImageArrays]:
    """An ImageNet validation folder ``<data_dir>/<wnid>/<image>``, resized to 256 and
    centre-cropped to 224 (see :mod:`calibkit.data.imagenet`)."""
    return load_imagenet_val(data_dir)


@dataclass(frozen=True)
class DatasetSpec:
    """A parsed dataset spec ``name[:class,class][@corruption:severity[:split]]``."""

    name: str
    classes: tuple[str, ...] | None = None
    corruption: str | None = None
    severity: int = 0
    split: str | None = None


def parse_dataset_spec(spec: str) -> DatasetSpec:
    """Parse and check ``spec`` (the dataset and corruption names, the severity) without
    loading anything.

    >>> spec = parse_dataset_spec("cifar10-jpeg:bird,cat@fog:2:test")
    >>> spec.classes, spec.corruption, spec.severity, spec.split
    (('bird', 'cat'), 'fog', 2, 'test')
    """
    base, at, shift = spec.partition("@")
    name, sep, subset = base.partition(":")
    name = name.strip()
    DATASETS.get(name)
    classes = None
    if sep:
        classes = tuple(c.strip() for c in subset.split(",") if c.strip())
        if not classes:
            raise InputError("spec", "name:class,class with at least one class", repr(spec))
    if not at:
        return DatasetSpec(name, classes)
    parts = [p.strip() for p in shift.split(":")]
    if len(parts) not in (2, 3) or not all(parts):
        raise InputError(
            "spec", "name@corruption:severity or name@corruption:severity:split", repr(spec)
        )
    severity: int | str = int(parts[1]) if parts[1].isascii() and parts[1].isdigit() else parts[1]
    severity = check_corruption(parts[0], severity)
    return DatasetSpec(name, classes, parts[0], severity, parts[2] if len(parts) == 3 else None)


def _folder(name: str, data_dir: str | os.PathLike[str] | None) -> Path:
    """The data folder of dataset ``name`` (see the module docstring); a file missing from a
    folder that was not passed is refused naming where it was looked for."""
    info = DATASETS.info(name)
    if data_dir is not None:
        return Path(data_dir)
    if info.get("bundled", False):
        return Path(".")
    folder: Path = info["default_dir"]()
    file = info.get("file")
    if file is not None and not (folder / file).exists():
        where = "$CALIBKIT_DATA" if os.environ.get("CALIBKIT_DATA") else "the default folder"
        raise InputError(
            "data_dir",
            f"the folder holding the {name} file (pass --data-dir or set $CALIBKIT_DATA)",
            f"no folder, and {where} {folder} has no {file}",
        )
    return folder


def dataset_classes(
    spec: str, data_dir: str | os.PathLike[str] | None = None
) -> tuple[str, ...] | None:
    """The class names of the whole dataset of ``spec`` (before any class subset), in label
    order, found without decoding an image: those registered with the dataset, or read from
    its file's index; None where only loading it can tell (an ImageNet folder, say).

    Parameters
    ----------
    spec, data_dir
        As :func:`load_dataset` takes them.

    Returns
    -------
    tuple of str or None
        Every class of the dataset, label ``i`` the ``i``-th.

    Examples
    --------
    >>> len(dataset_classes("cifar10:bird,cat")), dataset_classes("digits:3,8")[:3]
    (10, ('0', '1', '2'))
    """
    name = parse_dataset_spec(spec).name
    info = DATASETS.info(name)
    if "classes" in info:
        return tuple(info["classes"])
    if "index" not in info:
        return None
    path = _folder(name, data_dir) / info["file"]
    return tuple(info["index"](path)) if path.exists() else None


def load_dataset(
    spec: str, data_dir: str | os.PathLike[str] | None = None, *, keep_labels: bool = False
) -> dict[str, ImageArrays]:
    """Load ``name``, ``name:class_a,class_b``, either ending in ``@corruption:severity`` or
    ``@corruption:severity:split``, from :data:`DATASETS` (see the module docstring).

    ``data_dir=None`` means ``$CALIBKIT_DATA``, else the cache folder (see the module
    docstring); bundled datasets (``digits``) need no folder. ``keep_labels``: a class
    subset keeps every class name and each image's label among them (the columns of a model
    of every class), instead of being relabelled ``0..k-1``.

    Examples
    --------
    >>> digits = load_dataset("digits")  # bundled with scikit-learn: 8x8 grey images
    >>> {part: arrays.images.shape for part, arrays in digits.items()}
    {'train': (1198, 8, 8, 1), 'test': (599, 8, 8, 1)}
    >>> kept = load_dataset("digits:3,8", keep_labels=True)["test"]
    >>> sorted(set(kept.labels.tolist())), len(kept.classes)
    ([3, 8], 10)
    """
    parsed = parse_dataset_spec(spec)
    name = parsed.name
    folder = _folder(name, data_dir)
    data: dict[str, ImageArrays] = DATASETS.create(name, folder)
    if parsed.split is not None and parsed.split not in data:
        raise InputError("spec", f"a split among {', '.join(data)}", repr(parsed.split))
    out = {}
    for split, arrays in data.items():
        keep = np.arange(len(arrays))
        if parsed.classes is not None:
            sub = arrays.subset_classes(parsed.classes)
            keep = np.flatnonzero(
                np.isin(arrays.labels, [arrays.classes.index(c) for c in sub.classes])
            )
            if keep_labels:
                sub = ImageArrays(arrays.images[keep], arrays.labels[keep], arrays.classes)
            arrays = sub
        if parsed.corruption is not None and parsed.split in (None, split):
            images = corrupt(
                arrays.images,
                parsed.corruption,
                parsed.severity,
                key=f"{name}/{split}",
                indices=keep,
            )
            arrays = ImageArrays(images, arrays.labels, arrays.classes)
        out[split] = arrays
    return out
