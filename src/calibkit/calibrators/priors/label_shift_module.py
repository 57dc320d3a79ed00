"""Prior adaptation as a torch module: probabilities reweighted by ``pi_t / pi_s``.

:meth:`PriorShiftAdapter.to_module
<calibkit.calibrators.priors.label_shift.PriorShiftAdapter.to_module>` returns
a :class:`PriorWeights`: the calibrator's module (or a softmax) gives float64
probabilities, each class is multiplied by its weight (a float64 buffer) and the row is
renormalised; a row whose reweighted mass is 0 gets the target priors, as
:func:`~calibkit.calibrators.priors.label_shift.adapt_priors` does, and a row with a NaN
logit gives a NaN row, as every calibrator's module does (``predict_proba`` refuses it).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import torch
from torch import Tensor, nn


class PriorWeights(nn.Module):
    """``p * w / sum(p * w)`` after ``probabilities(logits)``.

    Parameters
    ----------
    probabilities : nn.Module
        Logits to probabilities (a calibrator's ``to_module()``, or a softmax).
    weights : ndarray of shape (K,)
        ``pi_t / pi_s``.
    fallback : ndarray of shape (K,)
        The target priors, for a row whose reweighted mass is 0.

    Examples
    --------
    >>> from calibkit.calibrators.modules import softmax_module
    >>> m = PriorWeights(softmax_module(2), np.array([1.6, 0.4]), np.array([0.8, 0.2]))
    >>> m(torch.tensor([[0.0, 0.0], [float("nan"), 0.0]])).tolist()
    [[0.8, 0.2], [nan, nan]]
    """

    def __init__(
        self,
        probabilities: nn.Module,
        weights: npt.NDArray[np.float64],
        fallback: npt.NDArray[np.float64],
    ) -> None:
        super().__init__()
        self.probabilities = probabilities
        self.weights: Tensor
        self.fallback: Tensor
        self.register_buffer("weights", torch.tensor(np.asarray(weights, np.float64)))
        self.register_buffer("fallback", torch.tensor(np.asarray(fallback, np.float64)))

    def forward(self, logits: Tensor) -> Tensor:
        q = self.probabilities(logits).to(self.weights.dtype) * self.weights
        total = q.sum(dim=1, keepdim=True)
        empty = total <= 0  # NaN for a NaN row: not empty, so the row stays NaN
        out = q / torch.where(empty, torch.ones_like(total), total)
        return torch.where(empty, self.fallback.unsqueeze(0).expand_as(out), out)
