"""Images in memory, below both ``data`` and ``calibrators``: :class:`ImageArrays` (uint8
NHWC images, int64 labels and class names), the :class:`ImageDataset` protocol any such
dataset meets, and :func:`image_tensor`, the one normalisation of uint8 pixels into the
float tensor a model takes (used by ``ImageArrays.to_tensor`` and by Neural Clamping).

>>> import numpy as np
>>> images = np.zeros((4, 2, 2, 3), dtype=np.uint8)
>>> data = ImageArrays(images, np.array([0, 1, 2, 1]), ("a", "b", "c"))
>>> sub = data.subset_classes(["c", "b"])
>>> sub.labels.tolist(), sub.classes
([1, 0, 1], ('c', 'b'))
>>> data.to_tensor((0.5, 0.5, 0.5), (0.5, 0.5, 0.5)).shape
torch.Size([4, 3, 2, 2])
>>> isinstance(data, ImageDataset)
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from calibkit.core.errors import InputError

if TYPE_CHECKING:
    from torch import Tensor


@runtime_checkable
class ImageDataset(Protocol):
    """A dataset of images: uint8 ``images`` ``(N, H, W, C)`` and integer ``labels`` ``(N,)``.

    Any object with these two attributes will do (:class:`ImageArrays` is one).

    Examples
    --------
    >>> class Tiny:
    ...     images = np.zeros((1, 2, 2, 1), dtype=np.uint8)
    ...     labels = np.zeros(1, dtype=np.int64)
    >>> isinstance(Tiny(), ImageDataset)
    True
    """

    images: Any
    labels: Any


def image_tensor(
    images: object, mean: Sequence[float], std: Sequence[float], name: str = "images"
) -> Tensor:
    """Float32 ``(N, C, H, W)`` tensor ``(x / 255 - mean) / std`` of uint8 ``(N, H, W, C)``
    ``images`` (argument ``name`` in errors), per channel.

    >>> pixels = np.full((1, 1, 1, 2), 255, dtype=np.uint8)
    >>> image_tensor(pixels, (0.5, 0.0), (0.5, 2.0)).flatten().tolist()
    [1.0, 0.5]
    """
    import torch  # lazy: the image type is read without it

    pixels = np.asarray(images)
    if pixels.dtype != np.uint8 or pixels.ndim != 4:
        expected = "uint8 images of shape (N, H, W, C)"
        raise InputError(name, expected, f"{pixels.dtype} of shape {pixels.shape}")
    c = pixels.shape[-1]
    m = np.asarray(mean, dtype=np.float64).reshape(-1)
    s = np.asarray(std, dtype=np.float64).reshape(-1)
    if m.shape != (c,) or s.shape != (c,) or not np.all(s > 0):
        raise InputError("mean/std", f"{c} values each, std > 0", f"{m.tolist()} / {s.tolist()}")
    per_channel = (1, c, 1, 1)
    scale = torch.from_numpy((1.0 / (255.0 * s)).astype(np.float32)).view(per_channel)
    shift = torch.from_numpy((m / s).astype(np.float32)).view(per_channel)
    x = torch.from_numpy(pixels).permute(0, 3, 1, 2).to(torch.float32)
    return (x * scale - shift).contiguous()


@dataclass(frozen=True)
class ImageArrays:
    """Images ``(N, H, W, C)`` uint8, labels ``(N,)`` int64 in ``0..len(classes)-1``."""

    images: npt.NDArray[np.uint8]
    labels: npt.NDArray[np.int64]
    classes: tuple[str, ...]

    def __post_init__(self) -> None:
        images = np.asarray(self.images)
        labels = np.asarray(self.labels)
        if images.dtype != np.uint8 or images.ndim != 4:
            raise InputError(
                "images", "a uint8 array of shape (N, H, W, C)", f"{images.dtype} {images.shape}"
            )
        if labels.ndim != 1 or labels.shape[0] != images.shape[0]:
            raise InputError("labels", f"shape ({images.shape[0]},)", str(labels.shape))
        if labels.size and not np.issubdtype(labels.dtype, np.integer):
            raise InputError("labels", "integer class indices", str(labels.dtype))
        if labels.size and (labels.min() < 0 or labels.max() >= len(self.classes)):
            raise InputError(  # checked before the cast: a uint64 label is shown as it is
                "labels",
                f"values in 0..{len(self.classes) - 1}",
                f"range {labels.min()}..{labels.max()}",
            )
        labels = labels.astype(np.int64, copy=False)
        object.__setattr__(self, "images", images)
        object.__setattr__(self, "labels", labels)
        object.__setattr__(self, "classes", tuple(str(c) for c in self.classes))

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def subset_classes(self, names: Sequence[str]) -> ImageArrays:
        """Keep only the classes ``names``, relabelled ``0..k-1`` in the order given."""
        names = list(names)
        unknown = [n for n in names if n not in self.classes]
        if unknown or not names or len(set(names)) != len(names):
            raise InputError(
                "classes",
                "distinct names among " + ", ".join(self.classes),
                ", ".join(repr(n) for n in names) or "none",
            )
        mapping = np.full(len(self.classes), -1, dtype=np.int64)
        mapping[[self.classes.index(n) for n in names]] = np.arange(len(names))
        new = mapping[self.labels]
        keep = new >= 0
        return ImageArrays(self.images[keep], new[keep], tuple(names))

    def channel_stats(self) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """Per-channel mean and (population) standard deviation of pixels scaled to [0, 1]."""
        if len(self) == 0:
            raise InputError("images", "at least one image", "an empty dataset")
        flat = self.images.reshape(-1, self.images.shape[-1])
        n = flat.shape[0]
        total = flat.sum(axis=0, dtype=np.float64)
        # Exact integer sum of squares (uint64 cannot overflow below ~2.8e14 pixels).
        squares = np.einsum("ij,ij->j", flat, flat, dtype=np.uint64).astype(np.float64)
        mean = total / n
        var = np.maximum(squares / n - mean**2, 0.0)
        return mean / 255.0, np.sqrt(var) / 255.0

    def to_tensor(self, mean: Sequence[float], std: Sequence[float]) -> Tensor:
        """Float32 ``(N, C, H, W)`` tensor ``(x / 255 - mean) / std``, per channel
        (:func:`image_tensor`)."""
        return image_tensor(self.images, mean, std)
