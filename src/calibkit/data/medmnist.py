"""MedMNIST ``.npz`` files (``{train,val,test}_{images,labels}``) as :class:`ImageArrays`.

Known files are checked against their published MD5 before loading; labels ``(N, 1)``
become ``(N,)`` int64 and grey images ``(N, H, W)`` become ``(N, H, W, 1)``.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

from calibkit.core.errors import InputError
from calibkit.data.arrays import ImageArrays
from calibkit.io.numpy_files import load_npz

SPLITS = ("train", "val", "test")
#: The most classes labels may name when the class names are not given.
MAX_CLASSES = 100_000

#: Published MD5 of the official MedMNIST v2 files, by file name.
KNOWN_MD5: dict[str, str] = {"bloodmnist.npz": "7053d0359d879ad8a5505303e11de1dc"}

#: Class names of the official files, by file name (label order).
KNOWN_CLASSES: dict[str, tuple[str, ...]] = {
    "bloodmnist.npz": (
        "basophil",
        "eosinophil",
        "erythroblast",
        "immature granulocytes",
        "lymphocyte",
        "monocyte",
        "neutrophil",
        "platelet",
    )
}


def file_md5(path: str | os.PathLike[str]) -> str:
    """Hex MD5 of a file, read in 1 MiB blocks."""
    digest = hashlib.md5(usedforsecurity=False)
    with Path(path).open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def load_medmnist(
    path: str | os.PathLike[str],
    *,
    classes: tuple[str, ...] | None = None,
    md5: str | None = None,
) -> dict[str, ImageArrays]:
    """Load ``{"train", "val", "test"}`` from a MedMNIST ``.npz``.

    ``md5`` defaults to the published checksum when the file name is a known one (then a
    mismatch raises ``InputError`` "checksum mismatch"); ``classes`` defaults to the known
    names, else ``"0", "1", ...``.
    """
    p = Path(path)
    if not p.is_file():
        raise InputError("path", "an existing MedMNIST .npz file", str(p))
    expected = md5 if md5 is not None else KNOWN_MD5.get(p.name)
    if expected is not None:
        got = file_md5(p)
        if got != expected.lower():
            raise InputError("path", f"MD5 {expected} (checksum mismatch)", f"{got} for {p}")
    npz = load_npz(p)  # refuses pickles, forged sizes and damaged archives, by name
    missing = [f"{s}_{a}" for s in SPLITS for a in ("images", "labels") if f"{s}_{a}" not in npz]
    if missing:
        layout = "an .npz with {train,val,test}_{images,labels}"
        raise InputError("path", layout, f"{p} without {', '.join(missing)}")
    raw = {s: (npz[f"{s}_images"], _labels(npz[f"{s}_labels"], f"{p}: {s}_labels")) for s in SPLITS}
    names = classes or KNOWN_CLASSES.get(p.name)
    if names is None:
        top = max((int(labels.max()) for _, labels in raw.values() if labels.size), default=0)
        if top >= MAX_CLASSES:
            expected = f"class indices below {MAX_CLASSES:,} (or class names)"
            raise InputError(f"{p}: labels", expected, f"label {top}")
        names = tuple(str(i) for i in range(top + 1))
    out: dict[str, ImageArrays] = {}
    for split, (images, labels) in raw.items():
        if images.ndim == 3:
            images = images[..., None]
        try:
            out[split] = ImageArrays(images, labels, tuple(names))
        except InputError as exc:  # name the file and the split
            raise InputError(f"{p}: {split}_{exc.argument}", exc.expected, exc.got) from None
    return out


def _labels(labels: np.ndarray, where: str) -> np.ndarray:
    """Single-label class indices ``(N,)`` or ``(N, 1)`` as ``(N,)``; refused by ``where``."""
    if labels.ndim not in (1, 2) or (labels.ndim == 2 and labels.shape[1] != 1):
        raise InputError(where, "single-label (N,) or (N, 1)", str(labels.shape))
    if not np.issubdtype(labels.dtype, np.integer):
        raise InputError(where, "integer class indices", str(labels.dtype))
    labels = labels.reshape(-1)
    if labels.size and labels.min() < 0:
        raise InputError(where, "class indices >= 0", str(labels.min()))
    return labels
