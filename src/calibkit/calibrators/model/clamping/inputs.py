"""The inputs and arguments Neural Clamping takes, checked.

Inputs are float tensors or arrays ``(N, C, H, W)`` already normalised as the model
expects, or any dataset with ``images`` and ``labels``
(:class:`~calibkit.core.images.ImageDataset`, e.g. calibkit's
:class:`~calibkit.core.images.ImageArrays`): its uint8 pixels ``(N, H, W, C)`` are scaled
to [0, 1] and normalised by a per-channel ``mean`` and ``std``
(:func:`~calibkit.core.images.image_tensor`, the one normalisation ``ImageArrays`` uses too).

>>> class Pixels:
...     images = np.full((2, 1, 1, 3), 255, dtype=np.uint8)
...     labels = np.array([0, 1])
>>> as_inputs(Pixels(), mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5)).flatten().tolist()
[1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

from calibkit.core.errors import InputError
from calibkit.core.images import ImageDataset, image_tensor
from calibkit.core.outputs import check_labels
from calibkit.core.validation import Constraint


def as_inputs(
    inputs: object, mean: Sequence[float] | None = None, std: Sequence[float] | None = None
) -> Tensor:
    """``inputs`` as a float tensor: a tensor or array as it is, or the images of an
    :class:`ImageDataset` scaled to [0, 1] and normalised by ``mean``/``std`` (per channel;
    None: 0 and 1)."""
    if isinstance(inputs, ImageDataset):
        c = np.shape(inputs.images)[-1]
        m, s = [0.0] * c if mean is None else mean, [1.0] * c if std is None else std
        return image_tensor(inputs.images, m, s, name="inputs")
    if isinstance(inputs, np.ndarray):
        inputs = torch.from_numpy(inputs)
    if not isinstance(inputs, Tensor):
        expected = "a float tensor or array (N, C, H, W), or a dataset with images and labels"
        raise InputError("inputs", expected, type(inputs).__name__)
    if not inputs.is_floating_point() or inputs.ndim < 2 or inputs.shape[0] == 0:
        raise InputError(
            "inputs",
            "a non-empty float tensor (N, C, H, W)",
            f"{inputs.dtype} of shape {tuple(inputs.shape)}",
        )
    return inputs.detach()


def fit_labels(inputs: object, labels: object, n_samples: int, n_classes: int) -> Tensor:
    """Checked int64 labels ``(N,)``: ``labels``, or the dataset's when ``labels`` is None."""
    if labels is None:
        if not isinstance(inputs, ImageDataset):
            raise InputError("labels", "labels (N,) for tensor or array inputs", "None")
        labels = inputs.labels
    y = torch.from_numpy(check_labels(labels, n_samples=n_samples, scores_name="inputs"))
    if int(y.max()) >= n_classes:
        raise InputError(
            "labels",
            f"integers in [0, {n_classes}) (the model's outputs)",
            f"a label of {int(y.max())}",
        )
    if int(y.min()) == int(y.max()):
        raise InputError("labels", "at least 2 distinct labels", f"only {int(y[0])}")
    return y


def check_finite(x: Tensor, batch_size: int) -> None:
    """InputError if ``x`` holds a NaN or an infinity (checked batch by batch)."""
    for start in range(0, x.shape[0], batch_size):
        if not bool(torch.isfinite(x[start : start + batch_size]).all()):
            raise InputError("inputs", "finite values", "NaN or infinity")


# ----- arguments --------------------------------------------------------------------------------
def is_number(v: object) -> bool:
    """A real number, not a bool."""
    return not isinstance(v, bool) and isinstance(v, int | float | np.integer | np.floating)


def floats(values: object, name: str) -> tuple[float, ...]:
    """A non-empty sequence of finite numbers (one per channel) as a tuple of floats."""
    try:
        out = tuple(float(v) for v in values)  # type: ignore[attr-defined]
    except (TypeError, ValueError):
        out = ()
    if not out or not all(math.isfinite(v) for v in out):
        raise InputError(name, "a sequence of finite numbers, one per channel", repr(values))
    return out


class Checked(Constraint):
    """A parameter checked by ``check(value)``, which raises the InputError naming it (its
    message begins with ``describe``; a narrower one may follow for a nearer miss).

    >>> Checked(lambda v: floats(v, "mean"), "a sequence of finite numbers, one per channel")
    <Checked: a sequence of finite numbers, one per channel>
    """

    def __init__(self, check: Callable[[object], Any], description: str) -> None:
        self._check = check
        self._description = description

    def check(self, name: str, value: object) -> Any:
        return self._check(value)

    def describe(self) -> str:
        return self._description
