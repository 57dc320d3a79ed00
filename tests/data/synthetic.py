"""Tiny synthetic datasets in the official layouts, for tests where the real data is absent.

- :func:`cifar_archive`: ``cifar-10-python.tar.gz`` / ``cifar-100-python.tar.gz`` (the
  official members, pickled batches of ``(N, 3072)`` channel-major uint8 rows, the official
  class names) with random pixels;
- :func:`imagenet_folder`: ``<folder>/<wnid>/<name>.JPEG`` files of assorted sizes.
"""

from __future__ import annotations

import io
import pickle
import tarfile
from pathlib import Path

import numpy as np

from calibkit.data.cifar_classes import CIFAR10_CLASSES, CIFAR100_CLASSES


def _add(tar: tarfile.TarFile, name: str, obj: object) -> None:
    blob = pickle.dumps(obj, protocol=2)
    info = tarfile.TarInfo(name)
    info.size = len(blob)
    tar.addfile(info, io.BytesIO(blob))


def _batch(rng: np.random.Generator, n: int, k: int, key: bytes) -> dict[bytes, object]:
    labels = [int(v) for v in np.arange(n) % k]
    data = rng.integers(0, 256, size=(n, 3072), dtype=np.uint8)
    return {b"batch_label": b"synthetic", key: labels, b"data": data}


def cifar_archive(folder: Path, name: str, per_split: int = 200, seed: int = 0) -> Path:
    """Write the official archive of ``name`` (``cifar10``/``cifar100``) into ``folder``."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    if name == "cifar10":
        path, p = folder / "cifar-10-python.tar.gz", "cifar-10-batches-py/"
        with tarfile.open(path, "w:gz") as tar:
            for i in range(1, 6):
                _add(tar, f"{p}data_batch_{i}", _batch(rng, per_split // 5, 10, b"labels"))
            _add(tar, f"{p}test_batch", _batch(rng, per_split, 10, b"labels"))
            _add(tar, f"{p}batches.meta", {b"label_names": [c.encode() for c in CIFAR10_CLASSES]})
        return path
    path, p = folder / "cifar-100-python.tar.gz", "cifar-100-python/"
    with tarfile.open(path, "w:gz") as tar:
        for split in ("train", "test"):
            _add(tar, f"{p}{split}", _batch(rng, per_split, 100, b"fine_labels"))
        names = [c.encode() for c in CIFAR100_CLASSES]
        _add(tar, f"{p}meta", {b"fine_label_names": names, b"coarse_label_names": []})
    return path


def imagenet_folder(folder: Path, n_classes: int = 3, per_class: int = 4) -> Path:
    """Write ``n_classes`` class folders of ``per_class`` JPEGs (sizes vary) into ``folder``."""
    from PIL import Image

    rng = np.random.default_rng(0)
    for c in range(n_classes):
        sub = folder / f"n{1440764 + c:08d}"
        sub.mkdir(parents=True, exist_ok=True)
        for i in range(per_class):
            h, w = 240 + 20 * i, 300 - 10 * c
            pixels = rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(sub / f"ILSVRC2012_val_{c:03d}{i:05d}.JPEG")
    return folder


def cifar10_jpeg_zip(folder: Path, per_class: int = 12) -> Path:
    """Write ``cifar10-jpeg.zip`` (``{train,test}/<class>/<n>.jpg``, 32x32) into ``folder``."""
    import zipfile

    from PIL import Image

    rng = np.random.default_rng(0)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "cifar10-jpeg.zip"
    with zipfile.ZipFile(path, "w") as zf:
        for split in ("train", "test"):
            for name in CIFAR10_CLASSES:
                for i in range(per_class):
                    buf = io.BytesIO()
                    pixels = rng.integers(0, 256, size=(32, 32, 3), dtype=np.uint8)
                    Image.fromarray(pixels).save(buf, format="JPEG")
                    zf.writestr(f"{split}/{name}/{i:04d}.jpg", buf.getvalue())
    return path


def bloodmnist_npz(folder: Path, per_split: int = 80) -> Path:
    """Write ``bloodmnist.npz`` (MedMNIST's keys, 28x28 RGB, 8 classes) into ``folder``."""
    rng = np.random.default_rng(0)
    folder.mkdir(parents=True, exist_ok=True)
    arrays = {}
    for split in ("train", "val", "test"):
        arrays[f"{split}_images"] = rng.integers(0, 256, (per_split, 28, 28, 3), dtype=np.uint8)
        arrays[f"{split}_labels"] = (np.arange(per_split) % 8).reshape(-1, 1).astype(np.uint8)
    path = folder / "bloodmnist.npz"
    np.savez(path, **arrays)  # type: ignore[arg-type]
    return path
