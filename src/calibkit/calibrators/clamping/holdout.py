"""Keeping Neural Clamping's learnt perturbation only where held-out data says it helps.

Neural Clamping contains temperature scaling (``delta = 0``), but its ``delta`` has one
free value per input dimension (3,072 on CIFAR) and is learnt on the calibration set
alone: on a small calibration set it can lower the objective there and raise it on new
data, so that the pair ends worse than plain temperature scaling. The fast variant's
data-driven ``delta`` (no learning at all) can do worse: it moves every input dimension to
the edge of the feasible range, which is far when the calibration inputs never reach it
there (BloodMNIST's bright backgrounds). With ``holdout`` set,
:class:`~calibkit.calibrators.clamping.NeuralClamping` learns ``delta`` on part of the
calibration set and keeps it only if, on the held-out rest, it beats ``delta = 0`` under
the same objective, each candidate with its temperature fitted exactly on the learning
part. Either way the final temperature is then fitted on the whole calibration set.

>>> fit, held = holdout_split(10, 0.2, seed=0)
>>> len(fit), len(held), sorted(set(fit.tolist()) | set(held.tolist())) == list(range(10))
(8, 2, True)
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor

from calibkit.calibrators.clamping.objective import fit_focal_temperature, focal_loss_np
from calibkit.core.errors import InputError


def check_holdout(value: object) -> float:
    """A held-out fraction: 0 (off) or a number in (0, 0.5]."""
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok or not (value == 0 or 0 < value <= 0.5):  # type: ignore[operator]
        raise InputError("holdout", "0 (off) or a fraction in (0, 0.5]", repr(value))
    return float(value)  # type: ignore[arg-type]


def holdout_split(n: int, fraction: float, seed: int) -> tuple[Tensor, Tensor]:
    """Indices ``(learn, held_out)`` of ``n`` samples; a seeded draw of ``fraction`` of them."""
    n_held = round(fraction * n)
    if n_held < 1 or n - n_held < 2:
        raise InputError(
            "holdout",
            "a fraction leaving at least 1 held-out and 2 learning samples",
            f"{fraction:g} of {n} samples",
        )
    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    return order[n_held:].sort().values, order[:n_held].sort().values


def held_out_loss(
    logits: np.ndarray, labels: np.ndarray, learn: np.ndarray, held: np.ndarray, gamma: float
) -> float:
    """Focal loss on ``held`` with the temperature that minimises it on ``learn``."""
    log_t = fit_focal_temperature(logits[learn], labels[learn], gamma)
    return focal_loss_np(logits[held] / math.exp(log_t), labels[held], gamma)
