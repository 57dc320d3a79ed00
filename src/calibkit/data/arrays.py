"""In-memory image datasets: :class:`ImageArrays` (uint8 NHWC images, int64 labels and
class names). The type lives in :mod:`calibkit.core.images`, below both ``data`` and
``calibrators`` (Neural Clamping takes it too); this module keeps its old import path.

>>> import numpy as np
>>> data = ImageArrays(np.zeros((2, 2, 2, 1), dtype=np.uint8), np.array([0, 1]), ("a", "b"))
>>> data.to_tensor((0.0,), (1.0,)).shape
torch.Size([2, 1, 2, 2])
"""

from __future__ import annotations

from calibkit.core.images import ImageArrays, ImageDataset, image_tensor

__all__ = ["ImageArrays", "ImageDataset", "image_tensor"]
