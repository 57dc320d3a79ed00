"""Differentiable ECE, DECE (Bohdal, Yang & Hospedales 2021, "Meta-Calibration: Learning of
Model Calibration Using Differentiable Expected Calibration Error").

The top-label ECE has two steps that have no gradient: putting a confidence in a bin, and
deciding whether the prediction is correct. DECE relaxes both, each with a temperature:

Soft bins. ``n_bins`` equal-width bins with lower edges ``e_b = b / n_bins``. Confidence
    ``r_i = max_k p_ik`` gets the scores ``h_ib = ((b + 1) r_i - sum_{c <= b} e_c) / T_bin``
    and belongs to bin ``b`` with weight ``u_ib = softmax_b(h_ib)`` (the soft binning of
    Yang et al.'s deep neural decision trees). Neighbouring scores differ by
    ``h_i,b+1 - h_ib = (r_i - e_{b+1}) / T_bin``, so between two bins the membership is a
    sigmoid of the distance to their shared edge; as ``T_bin -> 0`` sample ``i`` goes to
    the bin ``[e_b, e_{b+1})`` that holds ``r_i`` (the last one closed), the bins of
    :mod:`calibkit.core.binning`.
Soft accuracy. The target's soft rank counts, with sigmoids, the classes more probable
    than it: ``a_i = max(0, 1 - sum_{k != y_i} sigmoid((p_ik - p_iy) / T_acc))``. As
    ``T_acc -> 0`` it is 1 when the target is the only largest probability and 0 when
    another class is larger: the correctness ``c_i``.

``DECE = sum_b |sum_i u_ib (a_i - r_i)| / N``, the ECE's ``sum_b (S_b / N) |acc_b - conf_b|``
with soft counts ``S_b = sum_i u_ib`` (the ``S_b`` cancel, so an empty soft bin needs no
guard). As both temperatures go to 0 DECE becomes the binned ECE of
:func:`calibkit.metrics.ece` (confidences exactly on an edge, and tied top classes, aside).
Bohdal et al. train ``CE + lambda * DECE`` (``T_bin = 0.01``, ``T_acc = 1 / 100``, 15 bins,
the defaults here). The example's DECE, 0.4248, is near its ECE, 0.4252 (0.7311 lies 0.002
from the edge 11/15, within the soft bins' reach). Their meta-learning of the regulariser
is not part of calibkit.

>>> logits = torch.tensor([[2.0, 0.0], [0.0, 1.0]])
>>> targets = torch.tensor([0, 0])
>>> round(float(dece(logits, targets)), 4)  # their ECE: (|1 - 0.8808| + |0 - 0.7311|) / 2
0.4248
"""

from __future__ import annotations

import torch
from torch import Tensor

from calibkit.core.binning import N_BINS, check_n_bins
from calibkit.core.docs import fill_doc
from calibkit.core.validation import POSITIVE
from calibkit.losses.basic import log_probs, target_log_prob
from calibkit.losses.penalties import PENALTY_RETURNS, Penalty
from calibkit.losses.registry import PENALTIES

DECE_PARAMS = {"n_bins": N_BINS, "bin_temperature": POSITIVE, "accuracy_temperature": POSITIVE}


def soft_bins(confidence: Tensor, n_bins: int, temperature: float) -> Tensor:
    """Soft membership ``u`` of each confidence in each bin, shape ``(N, n_bins)``.

    >>> soft_bins(torch.tensor([0.3, 0.8]), 2, 1e-3)  # hard: [0, 0.5) and [0.5, 1]
    tensor([[1., 0.],
            [0., 1.]])
    """
    edges = torch.arange(n_bins, dtype=confidence.dtype, device=confidence.device) / n_bins
    slopes = torch.arange(1, n_bins + 1, dtype=confidence.dtype, device=confidence.device)
    scores = (confidence[:, None] * slopes - torch.cumsum(edges, 0)) / temperature
    return torch.softmax(scores, dim=1)


def soft_accuracy(logp: Tensor, targets: Tensor, temperature: float) -> Tensor:
    """``max(0, 1 - sum_{k != y} sigmoid((p_k - p_y) / T))`` per sample, shape ``(N,)``.

    >>> soft_accuracy(torch.log(torch.tensor([[0.5, 0.5]])), torch.tensor([0]), 0.1)  # a tie
    tensor([0.5000])
    """
    p = logp.exp()
    p_y = target_log_prob(logp, targets).exp()
    ranks = torch.sigmoid((p - p_y[:, None]) / temperature).sum(dim=1) - 0.5  # k = y adds 1/2
    return torch.relu(1.0 - ranks)


@fill_doc(returns=PENALTY_RETURNS)
def dece(
    logits: Tensor,
    targets: Tensor,
    n_bins: int = 15,
    bin_temperature: float = 0.01,
    accuracy_temperature: float = 0.01,
) -> Tensor:
    """Differentiable ECE (Bohdal et al. 2021); see the module docstring.

    Parameters
    ----------
    logits, targets
        Logits ``(N, K)`` and int64 class indices ``(N,)``.
    n_bins : int
        Number of equal-width soft bins.
    bin_temperature, accuracy_temperature : float
        Softness of the bin membership and of the accuracy, > 0 (towards 0: hard).

    {returns}
    >>> dece(torch.zeros(1, 2), torch.tensor([0]))  # r = 0.5 and a tie: soft accuracy 0.5
    tensor(0.)
    """
    n_bins = check_n_bins(n_bins)
    bin_temperature = POSITIVE.check("bin_temperature", bin_temperature)
    accuracy_temperature = POSITIVE.check("accuracy_temperature", accuracy_temperature)
    logp = log_probs(logits, targets)
    confidence = logp.amax(dim=1).exp()
    u = soft_bins(confidence, n_bins, bin_temperature)
    gap = soft_accuracy(logp, targets, accuracy_temperature) - confidence
    return (u.T @ gap).abs().sum() / logp.shape[0]


@PENALTIES.register("dece", params=DECE_PARAMS)
class DECE(Penalty):
    """Differentiable ECE with ``n_bins`` soft bins and two temperatures; see :func:`dece`.

    Parameters
    ----------
    n_bins, bin_temperature, accuracy_temperature
        As in :func:`dece`.

    Examples
    --------
    >>> DECE()
    DECE(n_bins=15, bin_temperature=0.01, accuracy_temperature=0.01)
    """

    params = DECE_PARAMS
    penalty = staticmethod(dece)

    def __init__(
        self, n_bins: int = 15, bin_temperature: float = 0.01, accuracy_temperature: float = 0.01
    ) -> None:
        super().__init__()
        self._set_params(
            n_bins=n_bins,
            bin_temperature=bin_temperature,
            accuracy_temperature=accuracy_temperature,
        )
