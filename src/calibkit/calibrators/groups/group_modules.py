"""Torch modules of the group-aware calibrators: ``module(logits, codes=None)``.

``codes`` are int64 group codes (a row's position in the calibrator's ``group_names_``;
``-1`` or None: the global map), see :mod:`calibkit.calibrators.groups.groupwise`. Each computes
what ``predict_proba(logits, groups=...)`` computes, in float64, step by step.

>>> m = CheckedGroupLogits(GroupTemperature(np.array([2.0]), 1.0), 2)
>>> m(torch.tensor([[0.0, 2.0], [0.0, 2.0]]), torch.tensor([0, -1])).round(decimals=4).tolist()
[[0.2689, 0.7311], [0.1192, 0.8808]]
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import torch
from torch import Tensor, nn

from calibkit.calibrators.modules import checked_logits, log_softmax_rows

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
#: As :data:`calibkit.calibrators.groups.groupwise.CONF_EPS`.
CONF_EPS = 1e-6


class CheckedGroupLogits(nn.Module):
    """The input contract of :class:`~calibkit.calibrators.modules.CheckedLogits`, with the
    group codes passed on (None: every row ``-1``).

    Parameters
    ----------
    calibration : nn.Module
        A module ``(logits, codes) -> probabilities``.
    n_classes : int
        The number of classes the logits must have (2 also accepts one logit per row).

    Examples
    --------
    >>> m = CheckedGroupLogits(GroupTemperature(np.array([2.0]), 1.0), 2)
    >>> m(torch.tensor([[0.0, 2.0]])).round(decimals=4).tolist()
    [[0.1192, 0.8808]]
    """

    def __init__(self, calibration: nn.Module, n_classes: int) -> None:
        super().__init__()
        self.calibration = calibration
        self.n_classes = int(n_classes)

    def forward(self, logits: Tensor, codes: Tensor | None = None) -> Tensor:
        logits = checked_logits(logits, self.n_classes)
        if codes is None:
            codes = torch.full((logits.shape[0],), -1, dtype=torch.int64, device=logits.device)
        probs: Tensor = self.calibration(logits, codes.to(torch.int64))
        bad = ~torch.isfinite(logits).all(dim=1, keepdim=True)
        return torch.where(bad, torch.full_like(probs, float("nan")), probs)


class GroupTemperature(nn.Module):
    """``softmax(logits / T_g)``; the global ``T`` for code ``-1`` or an unknown code.

    Parameters
    ----------
    group_temperatures : ndarray of shape (n_groups,)
        ``T_g`` for the group of code ``g``.
    temperature : float
        The global temperature.

    Examples
    --------
    >>> m = GroupTemperature(np.array([2.0]), 1.0)
    >>> m(torch.tensor([[0.0, 2.0], [0.0, 2.0]]), torch.tensor([0, 5])).round(decimals=4).tolist()
    [[0.2689, 0.7311], [0.1192, 0.8808]]
    """

    def __init__(self, group_temperatures: F64, temperature: float) -> None:
        super().__init__()
        table = np.append(np.asarray(group_temperatures, dtype=np.float64), temperature)
        self.table: Tensor
        self.register_buffer("table", torch.tensor(table, dtype=torch.float64))

    def forward(self, logits: Tensor, codes: Tensor) -> Tensor:
        n_groups = self.table.shape[0] - 1
        known = (codes >= 0) & (codes < n_groups)
        index = torch.where(known, codes, torch.full_like(codes, n_groups))
        t = self.table[index].unsqueeze(1)
        return torch.exp(log_softmax_rows(logits.to(self.table.dtype) / t))


class PatchedTemperature(nn.Module):
    """Temperature scaling, then the top-label patches of
    :class:`~calibkit.calibrators.groups.groupwise.Multicalibration`, replayed in order.

    Parameters
    ----------
    temperature : float
        The global temperature applied first.
    n_groups : int
        The number of groups (a code outside ``[0, n_groups)`` is no group).
    sets : ndarray of shape (n_patches,)
        Each patch's set: a group's code, or ``-1`` for every row.
    deltas : ndarray of shape (n_patches * n_bins,)
        Row-major ``(n_patches, n_bins)`` shifts of the top-label confidence per bin.
    n_bins : int
        Equal-width confidence bins.

    Examples
    --------
    >>> m = PatchedTemperature(1.0, 1, np.array([0]), np.array([0.0, -0.05]), 2)
    >>> m(torch.tensor([[0.0, 3.0], [0.0, 3.0]]), torch.tensor([0, -1])).round(decimals=4).tolist()
    [[0.0974, 0.9026], [0.0474, 0.9526]]
    """

    def __init__(
        self,
        temperature: float,
        n_groups: int,
        sets: I64,
        deltas: F64,
        n_bins: int,
    ) -> None:
        super().__init__()
        self.temperature: Tensor
        self.sets: Tensor
        self.deltas: Tensor
        self.register_buffer("temperature", torch.tensor(float(temperature), dtype=torch.float64))
        self.register_buffer("sets", torch.tensor(np.asarray(sets, dtype=np.int64)))
        table = np.asarray(deltas, dtype=np.float64).reshape(-1, int(n_bins))
        self.register_buffer("deltas", torch.tensor(table))
        self.n_groups = int(n_groups)
        self.n_bins = int(n_bins)
        self.n_patches = int(np.asarray(sets).shape[0])

    def forward(self, logits: Tensor, codes: Tensor) -> Tensor:
        z = logits.to(self.temperature.dtype) / self.temperature
        probs = torch.exp(log_softmax_rows(z))
        k = probs.shape[1]
        codes = torch.where(codes < self.n_groups, codes, torch.full_like(codes, -1))
        top2 = torch.topk(probs, 2, dim=1).values
        c, p2 = top2[:, 0], top2[:, 1]
        denom = 1.0 - c + p2
        low = torch.where(
            denom > 0, p2 / torch.where(denom > 0, denom, torch.ones_like(denom)), 0.0
        )
        low = torch.clamp(low, min=1.0 / k)
        conf = c
        for i in range(self.n_patches):
            s = self.sets[i]
            b = torch.clamp(torch.floor(conf * self.n_bins), max=self.n_bins - 1).to(torch.int64)
            hit = (codes == s) | (s < 0)
            shifted = conf + self.deltas[i][b]
            moved = torch.minimum(torch.maximum(shifted, low), torch.ones_like(conf) - 1e-6)
            conf = torch.where(hit, moved, conf)
        top = probs.argmax(dim=1, keepdim=True)
        old = probs.gather(1, top).squeeze(1)
        rest = 1.0 - old
        safe = torch.where(rest > 0, rest, torch.ones_like(rest))
        scaled = torch.where(
            (rest > 0).unsqueeze(1),
            probs * ((1.0 - conf) / safe).unsqueeze(1),
            ((1.0 - conf) / (k - 1)).unsqueeze(1).expand(-1, k),
        )
        out = scaled.scatter(1, top, conf.unsqueeze(1))
        return out / out.sum(dim=1, keepdim=True)
