"""The inputs of ``nc_authors.py``: the model and its images, as calibkit's study loads them.

- :func:`load_inputs`: the pretrained model of a study config and a seed's calibration /
  test split (calibkit's loader and stratified split), or, for variant (b), calibration
  images drawn from the training images with the authors' augmentation (:class:`Augment`);
- :func:`cached_logits`: the model's logits on both parts, computed once per set of images;
- :func:`authors_loader`: the calibration set as the authors' ``train_NC`` takes it, visited
  in calibkit's SGD order (:class:`SeededOrder`).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn


class Augment:
    """The authors' CIFAR training augmentation, on normalised ``(C, H, W)`` images, seeded.

    Their ``cifar10_transform_train``: ``RandomCrop(32, padding=4)`` (black padding, which
    is ``-mean / std`` once normalised), ``RandomHorizontalFlip()``, ``Normalize``, then
    ``Cutout(n_holes=1, length=6)`` (zeros after the normalisation, a square centred
    anywhere in the image and clipped to it).
    """

    PAD, HOLE = 4, 6

    def __init__(self, mean: Sequence[float], std: Sequence[float], seed: int) -> None:
        self.pad_value = (-torch.tensor(mean) / torch.tensor(std)).view(-1, 1, 1).float()
        self.gen = torch.Generator().manual_seed(seed)

    def _int(self, high: int) -> int:
        return int(torch.randint(high, (1,), generator=self.gen))

    def __call__(self, image: Tensor) -> Tensor:
        c, h, w = image.shape
        p = self.PAD
        padded = self.pad_value.expand(c, h + 2 * p, w + 2 * p).clone()
        padded[:, p : p + h, p : p + w] = image
        top, left = self._int(2 * p + 1), self._int(2 * p + 1)
        out = padded[:, top : top + h, left : left + w]
        if float(torch.rand(1, generator=self.gen)) < 0.5:
            out = out.flip(-1)
        y, x, half = self._int(h), self._int(w), self.HOLE // 2
        out[:, max(y - half, 0) : min(y + half, h), max(x - half, 0) : min(x + half, w)] = 0.0
        return out.contiguous()

    def batch(self, images: Tensor) -> Tensor:
        """One draw for each of ``images``."""
        return torch.stack([self(im) for im in images])


class AugmentedImages(torch.utils.data.Dataset[tuple[Tensor, Tensor]]):
    """``(augment(x[i]), y[i])``: a new draw at every access, as their loader does per epoch."""

    def __init__(self, x: Tensor, y: Tensor, augment: Augment) -> None:
        self.x, self.y, self.augment = x, y, augment

    def __len__(self) -> int:
        return len(self.y)

    def __getitem__(self, i: int) -> tuple[Tensor, Tensor]:
        return self.augment(self.x[i]), self.y[i]


@dataclass
class Inputs:
    """One seed's frozen model and its normalised calibration and test images."""

    model: nn.Module
    x_cal: Tensor
    y_cal: Tensor
    x_test: Tensor
    y_test: Tensor
    #: --calibration train-augmented: the calibration images before augmentation, and the
    #: normalisation (``x_cal`` is then one seeded draw of their augmentation)
    x_cal_raw: Tensor | None = None
    mean_std: tuple[Sequence[float], Sequence[float]] = ((), ())

    def augment(self, seed: int) -> Augment | None:
        """A fresh seeded augmentation of the raw calibration images (None: held-out)."""
        return None if self.x_cal_raw is None else Augment(*self.mean_std, seed)

    @property
    def n_classes(self) -> int:
        return int(max(self.y_cal.max(), self.y_test.max())) + 1


def load_inputs(
    config: str, label: str, seed: int, images: int | None, calibration: str = "heldout"
) -> Inputs:
    """The model of ``label`` and its calibration/test split for ``seed``, by calibkit.

    ``calibration="train-augmented"`` (variant (b)): calibration images drawn (seeded, as
    many as the held-out part has) from the training images instead, with the authors'
    augmentation: ``x_cal`` is one fixed draw (what calibkit, the TS fits and the lambda
    rule get) and ``augment`` re-draws per epoch for the authors' NC loader.
    ``calibration="train"``: the same training images without augmentation (separates
    calibrating on images the model was trained on from the augmentation)."""
    from calibkit.study import load_study_config
    from calibkit.study.definition.components import build_model
    from calibkit.study.definition.prepare import prepare_data

    cfg = load_study_config(config)
    spec = cfg.model(label)
    data = prepare_data(cfg.model_data(spec), seed)
    torch.manual_seed(seed)  # a model without pretrained weights (tests) is seeded
    model = build_model(spec, data).eval().requires_grad_(False)
    (xc, yc), (xt, yt) = data.splits["cal"], data.splits["test"]
    gen = torch.Generator().manual_seed(seed)  # ``images``: a seeded subset of each part
    c = torch.randperm(len(yc), generator=gen)[:images].sort().values if images else slice(None)
    t = torch.randperm(len(yt), generator=gen)[:images].sort().values if images else slice(None)
    xc, yc = xc[c], yc[c].long()
    if calibration in ("train", "train-augmented"):
        xtr, ytr = data.splits["train"]
        pick = torch.randperm(len(ytr), generator=gen)[: len(yc)].sort().values
        raw, norm = xtr[pick], (data.mean, data.std)
        if calibration == "train":  # the same images, not augmented
            return Inputs(model, raw, ytr[pick].long(), xt[t], yt[t].long())
        fixed = Augment(*norm, seed).batch(raw)
        return Inputs(model, fixed, ytr[pick].long(), xt[t], yt[t].long(), raw, norm)
    return Inputs(model, xc, yc, xt[t], yt[t].long())


@torch.no_grad()
def logits_of(model: nn.Module, x: Tensor, delta: Tensor | None = None) -> np.ndarray:
    """``model(x + delta)`` in batches of 500 on the model's device, float64 on the CPU."""
    device = next(model.parameters(), torch.empty(0)).device
    shift = 0.0 if delta is None else delta.detach().to(device, torch.float32)
    return torch.cat([model(b.to(device) + shift).cpu() for b in x.split(500)]).double().numpy()


def cached_logits(
    path: Path, inputs: Inputs, write: Callable[[Path, bytes], None]
) -> dict[str, np.ndarray]:
    """The model's calibration and test logits, computed once and kept at ``path`` by
    ``write`` (reused only for the same images: their labels and the sums of their pixels
    are checked)."""
    sums = np.array([float(inputs.x_cal.double().sum()), float(inputs.x_test.double().sum())])
    if path.is_file():
        with np.load(path) as f:
            cached = {k: f[k] for k in f.files}
        same = (
            np.array_equal(cached.get("cal_labels", np.nan), inputs.y_cal.numpy())
            and np.array_equal(cached.get("test_labels", np.nan), inputs.y_test.numpy())
            and np.array_equal(cached.get("pixel_sums", np.nan), sums)
        )
        if same:
            return cached
    out = {
        "cal_logits": logits_of(inputs.model, inputs.x_cal),
        "cal_labels": inputs.y_cal.numpy(),
        "test_logits": logits_of(inputs.model, inputs.x_test),
        "test_labels": inputs.y_test.numpy(),
        "pixel_sums": sums,
    }
    buf = io.BytesIO()
    np.savez_compressed(buf, **out)  # type: ignore[arg-type]
    write(path, buf.getvalue())
    return out


class SeededOrder(torch.utils.data.Sampler[int]):
    """A new ``torch.randperm(n)`` per epoch from a generator seeded once: the order in which
    calibkit's SGD visits the calibration set (``sgd.run_sgd``), so both codes see the same
    batches in the same order (a DataLoader's own ``generator`` would also be drawn from
    for its worker seed, and the orders would differ)."""

    def __init__(self, n: int, seed: int) -> None:
        self.n, self.gen = n, torch.Generator().manual_seed(seed)

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator[int]:
        return iter(torch.randperm(self.n, generator=self.gen).tolist())


def authors_loader(
    x: Tensor, y: Tensor, batch_size: int, seed: int, augment: Augment | None = None
) -> Any:
    """The calibration set as their ``train_NC`` takes it: a loader of ``(inputs, labels)``
    (with ``augment``: images re-drawn at every epoch, as their own loader does)."""
    data: torch.utils.data.Dataset[Any] = (
        torch.utils.data.TensorDataset(x, y) if augment is None else AugmentedImages(x, y, augment)
    )
    order = SeededOrder(len(y), seed)
    return torch.utils.data.DataLoader(data, batch_size=batch_size, sampler=order)
