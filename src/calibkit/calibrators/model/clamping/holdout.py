"""Keeping Neural Clamping's learnt perturbation only where held-out data says it helps.

Neural Clamping contains temperature scaling (``delta = 0``), but its ``delta`` has one
free value per input dimension (3,072 on CIFAR) and is learnt on the calibration set
alone: on a small calibration set it can lower the objective there and raise it on new
data, so that the pair ends worse than plain temperature scaling. The fast variant's
data-driven ``delta`` (no learning at all) can do worse: it moves every input dimension to
the edge of the feasible range, which is far when the calibration inputs never reach it
there (BloodMNIST's bright backgrounds). With ``holdout`` set,
:class:`~calibkit.calibrators.model.clamping.NeuralClamping` learns ``delta`` on part of the
calibration set and keeps it only if, on the held-out rest, it beats ``delta = 0`` by a
proper score, the negative log-likelihood (whatever the focal ``gamma`` it was learnt
with), each candidate with its temperature fitted exactly on the learning part by its own
objective (:func:`held_out_nll`). A pool of ``gamma`` is ranked by the same held-out NLL,
and the fit is never worse there than plain temperature scaling (fitted by NLL on the
learning part): where it would be, the fit is temperature scaling (``delta = 0``, T by NLL
on the whole calibration set; :data:`GUARDS` names which guard decided). Otherwise the
final temperature is fitted on the whole calibration set by the method's objective.

>>> fit, held = holdout_split(10, 0.2, seed=0)
>>> len(fit), len(held), sorted(set(fit.tolist()) | set(held.tolist())) == list(range(10))
(8, 2, True)
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor

from calibkit.calibrators.model.clamping.objective import fit_focal_temperature, focal_loss_np
from calibkit.core.errors import InputError
from calibkit.core.words import plural

#: Which guard decided a fit (``guard_``): none (no hold-out); the learnt ``delta`` kept or
#: dropped for ``delta = 0`` by held-out NLL; or temperature scaling, whose held-out NLL
#: was lower than the chosen Neural Clamping fit's.
GUARDS = ("no hold-out", "delta kept", "delta dropped", "temperature scaling")


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
            f"{fraction:g} of {plural(n, 'sample')}",
        )
    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    return order[n_held:].sort().values, order[:n_held].sort().values


def held_out_nll(
    logits: np.ndarray, labels: np.ndarray, learn: np.ndarray, held: np.ndarray, gamma: float
) -> float:
    """Mean NLL on ``held`` at the temperature minimising the focal loss (exponent
    ``gamma``; 0: NLL, i.e. temperature scaling) on ``learn``."""
    log_t = fit_focal_temperature(logits[learn], labels[learn], gamma)
    return focal_loss_np(logits[held] / math.exp(log_t), labels[held], 0.0)
