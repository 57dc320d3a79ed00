"""An ImageNet validation folder the user points to: ``<folder>/<wnid>/<image>``.

The layout is the usual one for class-folder validation sets (one sub-folder per class,
named by its WordNet id, e.g. ``n01440764``); classes are the sub-folder names sorted, which
is the label order of timm's and torchvision's ImageNet models. Every image is decoded with
Pillow, converted to RGB and given the standard evaluation transform
(:func:`resize_center_crop`): its shorter side resized to 256 pixels (bilinear), then the
central 224 x 224 pixels.

Nothing is trained on these images, but a study needs a training split: ``train`` holds the
first image of each class (sorted by file name), ``test`` the others. A study carves its
calibration part from ``test`` (``calibration_from = "test"``). The 50,000 images of the
official set take 7.5 GB as uint8 (and 4x as float32 inputs): a GPU machine's budget.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import numpy.typing as npt

from calibkit.core.errors import InputError
from calibkit.data.arrays import ImageArrays
from calibkit.data.image_folder import MAX_IMAGE_PIXELS

#: Shorter side after resizing, and the side of the central crop.
RESIZE, CROP = 256, 224
#: File name endings read as images (case-insensitive).
EXTENSIONS = (".jpeg", ".jpg", ".png")


def resize_center_crop(
    image: object, resize: int = RESIZE, crop: int = CROP
) -> npt.NDArray[np.uint8]:
    """The ``crop`` x ``crop`` centre of a Pillow ``image`` whose shorter side is first
    resized to ``resize`` (bilinear, aspect ratio kept), as ``(crop, crop, 3)`` uint8.

    >>> from PIL import Image
    >>> resize_center_crop(Image.new("RGB", (512, 300)), 256, 224).shape
    (224, 224, 3)
    """
    from PIL import Image

    assert isinstance(image, Image.Image)
    w, h = image.size
    size = (resize, int(resize * h / w)) if w <= h else (int(resize * w / h), resize)
    image = image.convert("RGB").resize(size, Image.Resampling.BILINEAR)
    left = round((size[0] - crop) / 2.0)
    top = round((size[1] - crop) / 2.0)
    return np.asarray(image.crop((left, top, left + crop, top + crop)), dtype=np.uint8)


def _read(path: Path, resize: int, crop: int) -> npt.NDArray[np.uint8]:
    from PIL import Image

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(path) as im:
                if im.width * im.height > MAX_IMAGE_PIXELS:
                    raise InputError("image", f"at most {MAX_IMAGE_PIXELS:,} pixels", str(path))
                return resize_center_crop(im, resize, crop)
    except InputError:
        raise
    except Exception as exc:
        raise InputError("image", "a readable image file", f"{path} ({exc!r})") from None


def index_folder(folder: Path) -> tuple[tuple[str, ...], list[list[Path]]]:
    """The sorted class folders of ``folder`` and the sorted image files of each."""
    if not folder.is_dir():
        raise InputError("data_dir", "a folder of class folders (<wnid>/<image>)", str(folder))
    classes = sorted(p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
    files = [
        sorted(p for p in (folder / c).iterdir() if p.suffix.lower() in EXTENSIONS) for c in classes
    ]
    empty = [c for c, f in zip(classes, files, strict=True) if not f]
    if not classes or empty:
        got = f"{folder} ({'no class folders' if not classes else 'no images in ' + empty[0]})"
        raise InputError("data_dir", "class folders each holding images", got)
    return tuple(classes), files


def load_imagenet_val(
    folder: str | os.PathLike[str], *, resize: int = RESIZE, crop: int = CROP
) -> dict[str, ImageArrays]:
    """``{"train", "test"}`` of a class-folder validation set (see the module docstring)."""
    classes, files = index_folder(Path(folder))
    parts: dict[str, tuple[list[npt.NDArray[np.uint8]], list[int]]] = {
        "train": ([], []),
        "test": ([], []),
    }
    for label, paths in enumerate(files):
        for i, path in enumerate(paths):
            images, labels = parts["train" if i == 0 else "test"]
            images.append(_read(path, resize, crop))
            labels.append(label)
    out = {}
    for split, (images, labels) in parts.items():
        stacked = np.stack(images) if images else np.zeros((0, crop, crop, 3), np.uint8)
        out[split] = ImageArrays(stacked, np.asarray(labels, dtype=np.int64), classes)
    return out
