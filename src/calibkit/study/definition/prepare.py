"""The data of a study as tensors: train, calibration and test parts, normalised.

>>> from calibkit.study.definition.config import SMOKE_SIZES, DataConfig
>>> data = prepare_data(DataConfig("digits", calibration_size=300))
>>> {k: len(v[1]) for k, v in data.splits.items()}
{'train': 898, 'cal': 300, 'test': 599}
>>> data.input_shape, data.n_classes
((1, 8, 8), 10)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from calibkit.core.errors import InputError
from calibkit.core.splits import split_indices
from calibkit.data import ImageArrays, load_dataset, stratified_split
from calibkit.study.definition.config import SMOKE_SIZES, DataConfig

Split = tuple[Tensor, Tensor]


@dataclass(frozen=True)
class StudyData:
    """Normalised ``(inputs, labels)`` tensors for ``train``, ``cal`` and ``test``."""

    splits: dict[str, Split]
    classes: tuple[str, ...]
    mean: tuple[float, ...]
    std: tuple[float, ...]

    @property
    def input_shape(self) -> tuple[int, ...]:
        """Shape of one input, ``(C, H, W)``."""
        return tuple(self.splits["train"][0].shape[1:])

    @property
    def n_classes(self) -> int:
        return len(self.classes)


def _take(arrays: ImageArrays, idx: np.ndarray) -> ImageArrays:
    return ImageArrays(arrays.images[idx], arrays.labels[idx], arrays.classes)


def _smoke_part(
    arrays: ImageArrays, rng: np.random.Generator, size: int, per_class: int
) -> ImageArrays:
    """``size`` random samples of ``arrays`` and ``per_class`` of each class, in order."""
    perm = rng.permutation(len(arrays))
    keep = set(perm[:size].tolist())
    for c in range(len(arrays.classes)):
        keep.update(perm[arrays.labels[perm] == c][:per_class].tolist())
    return _take(arrays, np.array(sorted(keep), dtype=np.int64))


def prepare_data(cfg: DataConfig, seed: int = 0) -> StudyData:
    """Load ``cfg.dataset``, carve the calibration part, normalise by training statistics.

    ``seed`` (a run's seed) shifts the carve only when ``cfg.split_by_seed``. A smoke run
    (``cfg.smoke``) keeps a few seeded random samples of each part
    (:data:`~calibkit.study.definition.config.SMOKE_SIZES`).
    """
    split_seed = cfg.split_seed + (seed if cfg.split_by_seed else 0)
    parts = load_dataset(cfg.dataset, cfg.data_dir)
    train, test = parts["train"], parts["test"]
    if "val" in parts:
        cal = parts["val"]
    elif cfg.calibration_from == "test":
        carve, keep = split_indices(test.labels, cfg.calibration_size, split_seed, every_class=True)
        test, cal = _take(test, keep), _take(test, carve)
    else:
        carve, keep = split_indices(
            train.labels, cfg.calibration_size, split_seed, every_class=True
        )
        train, cal = _take(train, keep), _take(train, carve)
    if cfg.train_size is not None:
        _, keep = stratified_split(train.labels, cfg.train_size, seed=split_seed + 1)
        train = _take(train, keep)
    if cfg.smoke:
        rng = np.random.default_rng(split_seed)
        train, cal, test = (
            _smoke_part(a, rng, *SMOKE_SIZES[name])
            for name, a in (("train", train), ("cal", cal), ("test", test))
        )
    c = train.images.shape[-1]
    if cfg.mean:
        if len(cfg.mean) != c:
            raise InputError("data.mean", f"{c} values (one per channel)", repr(list(cfg.mean)))
        mean, std = cfg.mean, cfg.std
    elif cfg.normalize:
        m, s = train.channel_stats()
        mean, std = tuple(float(v) for v in m), tuple(float(max(v, 1e-8)) for v in s)
    else:
        mean, std = (0.0,) * c, (1.0,) * c
    splits = {
        name: (arrays.to_tensor(mean, std), torch.from_numpy(arrays.labels.copy()))
        for name, arrays in (("train", train), ("cal", cal), ("test", test))
    }
    return StudyData(splits, train.classes, mean, std)
