"""Two penalties on the batch's confidence: the entropy (confidence) penalty and DCA.

With ``p = exp(log_softmax(logits))``, confidence ``r_i = max_k p_ik`` and correctness
``c_i = 1[argmax_k p_ik = y_i]`` (no gradient):

Confidence penalty (Pereyra, Tucker, Chorowski, Kaiser & Hinton 2017, "Regularizing neural
    networks by penalizing confident output distributions"): the negative entropy
    ``-H(p_i) = sum_k p_ik log p_ik``, averaged over the batch, so that
    ``CE + beta * penalty = CE - beta * H(p)``, the paper's objective. It is <= 0 (0 for a
    one-hot output, ``-log K`` for the uniform one); ``p log p`` uses the log-probabilities,
    so a probability of 0 contributes 0, not NaN.

DCA, difference between confidence and accuracy (Liang, Zhang, Wang & Wu 2020, "Improved
    trainable calibration method for neural networks on medical imaging classification"):
    ``|mean_i r_i - mean_i c_i|``, the batch's overall miscalibration; the gradient flows
    through the confidences only.

>>> logits = torch.tensor([[2.0, 0.0], [0.0, 1.0]])
>>> targets = torch.tensor([0, 0])
>>> round(float(dca(logits, targets)), 4)  # |(0.8808 + 0.7311) / 2 - 1 / 2|
0.3059
"""

from __future__ import annotations

import torch
from torch import Tensor

from calibkit.core.docs import fill_doc
from calibkit.losses.basic import log_probs
from calibkit.losses.penalties import PENALTY_SIGNATURE, Penalty
from calibkit.losses.registry import PENALTIES


@fill_doc(signature=PENALTY_SIGNATURE)
def negative_entropy(logits: Tensor, targets: Tensor) -> Tensor:
    """Mean negative entropy ``mean_i sum_k p_ik log p_ik`` (``targets`` only checked).

    {signature}
    >>> negative_entropy(torch.zeros(1, 2), torch.tensor([0]))  # -log 2
    tensor(-0.6931)
    """
    logp = log_probs(logits, targets)
    return (logp.exp() * logp).sum(dim=1).mean()


@fill_doc(signature=PENALTY_SIGNATURE)
def dca(logits: Tensor, targets: Tensor) -> Tensor:
    """DCA (Liang et al. 2020): ``|mean_i r_i - mean_i c_i|``.

    {signature}
    >>> dca(torch.zeros(1, 2), torch.tensor([0]))  # r = 0.5, correct (argmax 0): |0.5 - 1|
    tensor(0.5000)
    """
    top_logp, pred = log_probs(logits, targets).max(dim=1)
    correct = (pred == targets).to(top_logp.dtype)
    return torch.abs(top_logp.exp().mean() - correct.mean())


@PENALTIES.register("confidence_penalty", params={})
class ConfidencePenalty(Penalty):
    """Negative entropy of the outputs (Pereyra et al. 2017); see :func:`negative_entropy`.

    Examples
    --------
    >>> ConfidencePenalty()(torch.tensor([[0.0, 0.0, 0.0, 0.0]]), torch.tensor([0]))  # -log 4
    tensor(-1.3863)
    """

    penalty = staticmethod(negative_entropy)


@PENALTIES.register("dca", params={})
class DCA(Penalty):
    """Difference between confidence and accuracy (Liang et al. 2020); see :func:`dca`.

    Examples
    --------
    >>> DCA()(torch.zeros(2, 2), torch.tensor([0, 1]))  # r = 0.5, one of two correct
    tensor(0.)
    """

    penalty = staticmethod(dca)
