"""Venn-Abers calibration as a torch module (see :mod:`calibkit.calibrators.logit.venn_abers`).

Kept apart from :mod:`calibkit.calibrators.modules` (the maps of the other calibrators);
the same conventions hold: float64 buffers, comparisons instead of ``searchsorted``, scores
within :data:`~calibkit.calibrators.modules.TIE_RTOL` of a calibration score placed on it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import torch
from torch import Tensor, nn

from calibkit.calibrators.modules import (
    combine_one_vs_rest,
    gather_rows,
    log_softmax_rows,
    snap_to,
)

F64 = npt.NDArray[np.float64]
#: Pads the score tables: above every probability, so it never counts as at or below one.
_ABOVE = 2.0


def _table(arrays: Sequence[F64], pad: float | None = None) -> Tensor:
    """The arrays as rows of one float64 tensor, padded to the longest (by ``pad``, or by
    repeating the last value)."""
    width = max(len(a) for a in arrays)
    if pad is None:
        rows = [np.pad(a, (0, width - len(a)), "edge") for a in arrays]
    else:
        rows = [np.pad(a, (0, width - len(a)), constant_values=pad) for a in arrays]
    return torch.tensor(np.asarray(rows, dtype=np.float64))


class VennAbersMaps(nn.Module):
    """One-vs-rest Venn-Abers: each class's ``(p0, p1)`` looked up by the place of its
    probability among the calibration scores, merged into ``p1 / (1 - p0 + p1)`` and
    combined as :func:`~calibkit.calibrators.modules.combine_one_vs_rest` does.

    Parameters
    ----------
    scores, p0, p1 : sequence of ndarray
        Per map: ``n`` increasing scores and ``2 n + 1`` values.
    binary : bool
        Whether the problem has two classes (one map, of class 1).

    Examples
    --------
    >>> p0, p1 = [np.array([0.2, 0.3, 0.4])], [np.array([0.6, 0.7, 0.8])]
    >>> maps = VennAbersMaps([np.array([0.5])], p0, p1, binary=True)
    >>> z = torch.tensor([[0.0, -1.0], [0.0, 0.0]], dtype=torch.float64)
    >>> maps(z).round(decimals=4).tolist()  # 0.6 / 1.4, then on the score 0.5: 0.7 / 1.4
    [[0.5714, 0.4286], [0.5, 0.5]]
    """

    def __init__(
        self, scores: Sequence[F64], p0: Sequence[F64], p1: Sequence[F64], binary: bool
    ) -> None:
        super().__init__()
        self.scores: Tensor
        self.p0: Tensor
        self.p1: Tensor
        self.register_buffer("scores", _table(scores, pad=_ABOVE))
        self.register_buffer("p0", _table(p0))
        self.register_buffer("p1", _table(p1))
        self.binary = binary

    def forward(self, logits: Tensor) -> Tensor:
        probs = torch.exp(log_softmax_rows(logits.to(self.p0.dtype)))
        # a calibration row's own score is on its calibration score (see TIE_RTOL)
        s = snap_to(probs[:, 1:] if self.binary else probs, self.scores).unsqueeze(-1)
        place = (self.scores < s).sum(dim=-1) + (self.scores <= s).sum(dim=-1)
        p0, p1 = gather_rows(self.p0, place), gather_rows(self.p1, place)
        return combine_one_vs_rest(p1 / (1.0 - p0 + p1), probs, self.binary)
