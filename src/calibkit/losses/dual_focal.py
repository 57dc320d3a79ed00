"""Dual focal loss in the survey's two-term form, beside Tao et al.'s single-weight form.

Tao, Dong & Xu (2023, "Dual Focal Loss for Calibration", ICML) weight the cross-entropy of
the target by ``(1 - p_y + p_j)^gamma``, ``p_j`` the largest probability below ``p_y``; that
form is :func:`calibkit.losses.focal.dual_focal_loss` (``"dual_focal"``). The calibration
survey's two-term form focuses on the same two classes, the target and its strongest rival,
with one focal term each: a focal loss pulling ``p_y`` up and a focal loss pushing the
largest non-target probability ``p_m = max_{k != y} p_k`` down,

    ``L = -(1 - p_y)^gamma log p_y - p_m^gamma log(1 - p_m)``.

How the two forms differ:

- the rival: here ``p_m`` is the largest *other* probability whatever its rank (the
  predicted class when the prediction is wrong); Tao et al.'s ``p_j`` must rank below the
  target, and is 0 when no class does;
- the terms: Tao et al. add ``p_j`` inside one weight of the target's log-loss; here the
  rival has its own log-loss term, ``-log(1 - p_m)``, with its own focal weight ``p_m^gamma``;
- ``gamma = 0``: Tao et al.'s form is cross-entropy; this one is ``CE - log(1 - p_m)``;
- two classes: ``p_m = 1 - p_y``, so both terms equal the focal loss and this form is
  twice the focal loss, while Tao et al.'s is ``-(2 (1 - p_y))^gamma log p_y`` for a correct
  prediction and the focal loss for a wrong one.

``log(1 - p_m)`` is the log-sum-exp of the other log-probabilities (no ``1 - p`` rounding),
and the class weight ``alpha`` multiplies the whole sample loss, as in :mod:`.focal`.

>>> logits = torch.log(torch.tensor([[1.0, 2.0, 1.0]]))  # p = (1/4, 1/2, 1/4), y = 1
>>> dual_focal_two_term_loss(logits, torch.tensor([1]), gamma=1.0)  # 0.5 log 2 - 0.25 log 0.75
tensor(0.4185)
"""

from __future__ import annotations

import torch
from torch import Tensor

from calibkit.core.docs import fill_doc
from calibkit.core.errors import InputError
from calibkit.losses.basic import Reduction, check_reduction, log_probs, reduce, target_log_prob
from calibkit.losses.class_weight import class_weight, weighted
from calibkit.losses.focal import GAMMA, GAMMA_PARAMS, MODULE_PARAMETERS, GammaLoss, focal_power
from calibkit.losses.registry import LOSSES


def dual_focal_two_term_loss(
    logits: Tensor,
    targets: Tensor,
    gamma: float,
    reduction: Reduction = "mean",
    alpha: object = None,
) -> Tensor:
    """Two-term dual focal loss ``-(1 - p_y)^gamma log p_y - p_m^gamma log(1 - p_m)``.

    Parameters
    ----------
    logits, targets, reduction
        As in :func:`~calibkit.losses.basic.cross_entropy`; at least two classes.
    gamma : float
        Exponent, finite and >= 0.
    alpha : None, float or sequence of float
        Class weight ``alpha_t`` (see :mod:`calibkit.losses.class_weight`); None: off.

    Returns
    -------
    Tensor
        The loss.

    Examples
    --------
    >>> from calibkit.losses.focal import focal_loss
    >>> z, y = torch.tensor([[2.0, 0.0], [0.0, 1.0]]), torch.tensor([0, 0])
    >>> torch.allclose(dual_focal_two_term_loss(z, y, 2.0), 2 * focal_loss(z, y, 2.0))
    True
    """
    gamma = GAMMA.check("gamma", gamma)
    reduction = check_reduction(reduction)
    logp = log_probs(logits, targets)
    if logp.shape[1] < 2:
        raise InputError("logits", "at least two classes (a target and a rival)", "1 class")
    logp_y = target_log_prob(logp, targets)
    is_target = torch.zeros_like(logp, dtype=torch.bool).scatter_(1, targets[:, None], True)
    logp_m, rival = logp.masked_fill(is_target, -torch.inf).max(dim=1)
    is_rival = torch.zeros_like(is_target).scatter_(1, rival[:, None], True)
    log_not_m = torch.logsumexp(logp.masked_fill(is_rival, -torch.inf), dim=1)  # log(1 - p_m)
    target_term = -focal_power(-torch.expm1(logp_y), gamma) * logp_y
    rival_term = -focal_power(logp_m.exp(), gamma) * log_not_m
    weight = class_weight(alpha, targets, logp.shape[1], logp_y)
    return reduce(weighted(target_term + rival_term, weight), reduction)


@LOSSES.register("dual_focal_two_term", params=GAMMA_PARAMS)
@fill_doc(parameters=MODULE_PARAMETERS)
class DualFocalTwoTermLoss(GammaLoss):
    """The survey's two-term dual focal loss (see :func:`dual_focal_two_term_loss`); gamma 2.

    {parameters}
    >>> DualFocalTwoTermLoss(gamma=0.0)(torch.zeros(1, 2), torch.tensor([0]))  # 2 log 2
    tensor(1.3863)
    """

    def __init__(
        self, gamma: float = 2.0, reduction: Reduction = "mean", alpha: object = None
    ) -> None:
        super().__init__(dual_focal_two_term_loss, gamma, reduction, alpha)
