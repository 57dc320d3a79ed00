"""The ``.npz`` cache of a decoded dataset: ``classes`` and ``<split>_images``/``_labels``.

A cache file is read like any other file that may be damaged or forged (through
:func:`~calibkit.io.numpy_files.load_npz`: no pickles, sizes checked); one that cannot be
read back is reported as absent, so the dataset is decoded again and the cache rewritten.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from calibkit.core.errors import InputError
from calibkit.data.arrays import ImageArrays
from calibkit.io.atomic import atomic_write_bytes
from calibkit.io.numpy_files import load_npz


def save_splits(target: Path, data: Mapping[str, ImageArrays]) -> None:
    """Write ``data`` (one :class:`ImageArrays` per split, sharing classes) to ``target``."""
    first = next(iter(data.values()))
    arrays: dict[str, npt.NDArray[Any]] = {"classes": np.array(first.classes)}
    for split, part in data.items():
        arrays[f"{split}_images"] = part.images
        arrays[f"{split}_labels"] = part.labels
    buf = io.BytesIO()
    np.savez(buf, **arrays)  # type: ignore[arg-type]
    atomic_write_bytes(target, buf.getvalue())


def load_splits(target: Path, splits: Sequence[str]) -> dict[str, ImageArrays] | None:
    """The ``splits`` cached in ``target``, or None when it is absent or unreadable."""
    if not target.is_file():
        return None
    try:
        npz = load_npz(target)
        classes = tuple(str(c) for c in npz["classes"])
        return {s: ImageArrays(npz[f"{s}_images"], npz[f"{s}_labels"], classes) for s in splits}
    except (InputError, KeyError, OSError):
        return None
