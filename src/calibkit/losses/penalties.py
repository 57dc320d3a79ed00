"""Calibration penalties added to a training loss, and :class:`CombinedLoss`.

Every penalty maps ``(logits (N, K), targets (N,))`` to one scalar for the whole batch
(they are batch statistics, so there is no per-sample reduction). With confidence
``r_i = max_k p_ik``, correctness ``c_i = 1[argmax_k p_ik = y_i]`` (no gradient) and
``p = exp(log_softmax(logits))``:

L1 logit norm (Joo & Chung 2021, "Revisiting explicit regularization in neural networks for
    well-calibrated predictive uncertainty"): ``mean_i ||z_i||_1 = mean_i sum_k |z_ik|``, a
    function-space penalty on the logits ``z`` themselves (its weight is called ``alpha``).
    Only the paper's abstract could be checked when this was written, so the exact scaling
    in the paper (mean vs sum over samples) is unverified; calibkit uses the batch mean.

MMCE (Kumar, Sarawagi & Jain 2018, "Trainable calibration measures for neural networks from
    kernel mean embeddings", ICML) with the Laplacian kernel
    ``k(r, r') = exp(-|r - r'| / 0.4)``. ``weighted=True`` (default) is the paper's
    MMCE_w, which balances correct and incorrect samples: with ``C``/``W`` the correct and
    incorrect samples and ``m_C``/``m_W`` their counts,
    ``MMCE_w^2 = sum_{i,j in C} (1-r_i)(1-r_j) k_ij / m_C^2 + sum_{i,j in W} r_i r_j k_ij / m_W^2
    - 2 sum_{i in C, j in W} (1-r_i) r_j k_ij / (m_C m_W)``; ``weighted=False`` is the plain
    ``MMCE^2 = sum_{i,j} (c_i - r_i)(c_j - r_j) k_ij / N^2``. The penalty is the square root
    (``MMCE``, as in the paper's training objective ``NLL + lambda MMCE``), clamped below at
    the dtype's smallest normal number so its gradient stays finite. Both are the quadratic
    form ``w^T K w`` with ``w_i = (1-r_i)/m_C`` on ``C`` and ``-r_i/m_W`` on ``W`` (resp.
    ``(c_i - r_i)/N``); a group with no sample contributes nothing (the common PyTorch port,
    from Mukhoti et al.'s focal-loss code, returns 0 for the whole batch then; calibkit keeps
    the other group's term). O(N^2) memory.

MDCA (Hebbalaguppe et al. 2022, "A stitch in time saves nine: a train-time regularizing loss
    for improved neural network calibration", CVPR):
    ``(1/K) sum_j |mean_i p_ij - mean_i 1[y_i = j]|``.

Soft-binned ECE (Karandikar et al. 2021, "Soft calibration objectives for neural networks",
    NeurIPS): ``n_bins`` equal-width bins with centres ``xi_b = (b + 1/2) / n_bins``; sample
    ``i`` belongs to bin ``b`` with weight ``u_ib = softmax_b(-(r_i - xi_b)^2 / T)``. With
    ``S_b = sum_i u_ib``, ``A_b = sum_i u_ib c_i`` and ``R_b = sum_i u_ib r_i``:
    ``norm="l1"``: ``sum_b |A_b - R_b| / N`` (= ``sum_b (S_b/N) |A_b/S_b - R_b/S_b|``);
    ``norm="l2"`` (the paper's training choice): ``sqrt(sum_b (A_b - R_b)^2 / (N S_b))``. As
    ``T -> 0`` every sample goes to its nearest centre, i.e. the bins ``[b/n, (b+1)/n)``, and the
    l1 form becomes the hard top-label ECE of :func:`calibkit.metrics.ece` (samples exactly on
    an edge are split between the two bins).

>>> logits = torch.tensor([[2.0, 0.0], [0.0, 1.0]])
>>> targets = torch.tensor([0, 0])
>>> round(float(mdca(logits, targets)), 4)
0.4251
"""

from __future__ import annotations

from typing import ClassVar, Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from calibkit.core.binning import N_BINS, check_n_bins
from calibkit.core.docs import fill_doc
from calibkit.core.errors import InputError
from calibkit.core.validation import NON_NEGATIVE, POSITIVE, Boolean, Choice, Constraint
from calibkit.losses.basic import check_inputs, log_probs
from calibkit.losses.registry import PENALTIES

#: The weight of a penalty: a finite number >= 0.
WEIGHT = NON_NEGATIVE
NORM = Choice("l1", "l2")
MMCE_PARAMS = {"bandwidth": POSITIVE, "weighted": Boolean()}
SOFT_ECE_PARAMS = {"n_bins": N_BINS, "temperature": POSITIVE, "norm": NORM}

SoftNorm = Literal["l1", "l2"]


#: The Returns section of the penalty functions, and the Examples header.
PENALTY_RETURNS = """Returns
-------
Tensor
    A scalar.

Examples
--------"""
#: The Parameters and Returns sections of the penalties without parameters.
PENALTY_SIGNATURE = (
    """Parameters
----------
logits, targets
    Logits ``(N, K)`` and int64 class indices ``(N,)``.

"""
    + PENALTY_RETURNS
)


def _confidence(logits: Tensor, targets: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """``(r, 1 - r, c)``: top-label confidence, its complement (exact near 1), correctness."""
    top_logp, pred = log_probs(logits, targets).max(dim=1)
    return top_logp.exp(), -torch.expm1(top_logp), (pred == targets).to(logits.dtype)


def _sqrt(x: Tensor) -> Tensor:
    return x.clamp_min(torch.finfo(x.dtype).tiny).sqrt()


@fill_doc(signature=PENALTY_SIGNATURE)
def l1_logit_norm(logits: Tensor, targets: Tensor) -> Tensor:
    """Mean L1 norm of the logits, ``mean_i sum_k |z_ik|`` (``targets`` only checked).

    {signature}
    >>> l1_logit_norm(torch.tensor([[2.0, 0.0], [0.0, -1.0]]), torch.tensor([0, 0]))
    tensor(1.5000)
    """
    check_inputs(logits, targets)
    return logits.abs().sum(dim=1).mean()


@fill_doc(returns=PENALTY_RETURNS)
def mmce(logits: Tensor, targets: Tensor, bandwidth: float = 0.4, weighted: bool = True) -> Tensor:
    """MMCE (Kumar et al. 2018) with a Laplacian kernel; weighted MMCE_w by default.

    Parameters
    ----------
    logits, targets
        Logits ``(N, K)`` and int64 class indices ``(N,)``.
    bandwidth : float
        Kernel width, > 0.
    weighted : bool
        MMCE_w (correct and wrong samples balanced) or the plain MMCE.

    {returns}
    >>> mmce(torch.zeros(1, 2), torch.tensor([0]))  # one correct sample at r = 0.5
    tensor(0.5000)
    """
    bandwidth = POSITIVE.check("bandwidth", bandwidth)
    r, one_minus_r, c = _confidence(logits, targets)
    if weighted:
        n_correct = c.sum()
        n_wrong = c.numel() - n_correct
        w = torch.where(c > 0, one_minus_r / n_correct.clamp_min(1), -r / n_wrong.clamp_min(1))
    else:
        w = (c - r) / c.numel()
    kernel = torch.exp(-(r[:, None] - r[None, :]).abs() / bandwidth)
    return _sqrt(w @ kernel @ w)


@fill_doc(signature=PENALTY_SIGNATURE)
def mdca(logits: Tensor, targets: Tensor) -> Tensor:
    """MDCA (Hebbalaguppe et al. 2022): ``(1/K) sum_j |mean_i p_ij - mean_i 1[y_i = j]|``.

    {signature}
    >>> mdca(torch.zeros(2, 2), torch.tensor([0, 0]))  # (|0.5 - 1| + |0.5 - 0|) / 2
    tensor(0.5000)
    """
    p = log_probs(logits, targets).exp()
    freq = F.one_hot(targets, p.shape[1]).to(p.dtype).mean(dim=0)
    return (p.mean(dim=0) - freq).abs().mean()


@fill_doc(returns=PENALTY_RETURNS)
def soft_ece(
    logits: Tensor,
    targets: Tensor,
    n_bins: int = 15,
    temperature: float = 1e-3,
    norm: SoftNorm = "l1",
) -> Tensor:
    """Soft-binned top-label ECE (Karandikar et al. 2021); see the module docstring.

    Parameters
    ----------
    logits, targets
        Logits ``(N, K)`` and int64 class indices ``(N,)``.
    n_bins : int
        Number of soft bins.
    temperature : float
        Softness of the bin assignment, > 0 (towards 0: hard ``[a, b)`` bins).
    norm : {"l1", "l2"}
        Weighted mean or root-mean-square of the per-bin gaps.

    {returns}
    >>> soft_ece(torch.zeros(1, 2), torch.tensor([0]))  # r = 0.5 correct: gap 0.5
    tensor(0.5000)
    """
    n_bins = check_n_bins(n_bins)
    temperature = POSITIVE.check("temperature", temperature)
    NORM.check("norm", norm)
    r, _, c = _confidence(logits, targets)
    centres = (torch.arange(n_bins, dtype=r.dtype, device=r.device) + 0.5) / n_bins
    u = torch.softmax(-(r[:, None] - centres).square() / temperature, dim=1)  # (N, n_bins)
    gap = u.T @ (c - r)  # A_b - R_b
    if norm == "l1":
        return gap.abs().sum() / r.numel()
    mass = u.sum(dim=0).clamp_min(torch.finfo(r.dtype).tiny)
    return _sqrt((gap.square() / mass).sum() / r.numel())


class Penalty(nn.Module):
    """A batch-level calibration penalty ``(logits, targets) -> scalar``.

    ``weight_param`` names its weight in the combined losses and configs. A penalty sets
    ``penalty`` to its function; one with parameters also declares them in :attr:`params`
    (in the function's order) and keeps them with ``_set_params``.

    Examples
    --------
    >>> Penalty.weight_param, L1LogitNorm.weight_param
    ('beta', 'alpha')
    """

    weight_param: ClassVar[str] = "beta"

    @staticmethod
    def penalty(logits: Tensor, targets: Tensor) -> Tensor:
        """The penalty of a batch; a penalty without parameters defines only this."""
        raise NotImplementedError

    #: A penalty with parameters: their constraints, in the order ``penalty`` takes them.
    params: ClassVar[dict[str, Constraint]] = {}

    def _set_params(self, **values: object) -> None:
        """Check each parameter against :attr:`params` and keep it as an attribute."""
        for name, value in values.items():
            setattr(self, name, self.params[name].check(name, value))

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        return self.penalty(logits, targets, *(getattr(self, name) for name in self.params))

    def extra_repr(self) -> str:
        return ", ".join(f"{name}={getattr(self, name)!r}" for name in self.params)


@PENALTIES.register("l1_norm", params={})
class L1LogitNorm(Penalty):
    """Mean L1 norm of the logits (Joo & Chung 2021); see :func:`l1_logit_norm`.

    Examples
    --------
    >>> L1LogitNorm()(torch.tensor([[2.0, -2.0]]), torch.tensor([0]))
    tensor(4.)
    """

    weight_param: ClassVar[str] = "alpha"
    penalty = staticmethod(l1_logit_norm)


@PENALTIES.register("mmce", params=MMCE_PARAMS)
class MMCE(Penalty):
    """MMCE with Laplacian kernel of width ``bandwidth``; weighted (MMCE_w) by default.

    Parameters
    ----------
    bandwidth, weighted
        As in :func:`mmce`.

    Examples
    --------
    >>> MMCE(weighted=False)(torch.zeros(1, 2), torch.tensor([0]))
    tensor(0.5000)
    """

    params = MMCE_PARAMS
    penalty = staticmethod(mmce)

    def __init__(self, bandwidth: float = 0.4, weighted: bool = True) -> None:
        super().__init__()
        self._set_params(bandwidth=bandwidth, weighted=weighted)


@PENALTIES.register("mdca", params={})
class MDCA(Penalty):
    """Multi-class difference in confidence and accuracy (Hebbalaguppe et al. 2022).

    Examples
    --------
    >>> MDCA()(torch.zeros(2, 2), torch.tensor([0, 1]))  # mean p equals label frequency
    tensor(0.)
    """

    penalty = staticmethod(mdca)


@PENALTIES.register("soft_ece", params=SOFT_ECE_PARAMS)
class SoftECE(Penalty):
    """Soft-binned ECE with ``n_bins`` bins and soft-binning ``temperature``.

    Parameters
    ----------
    n_bins, temperature, norm
        As in :func:`soft_ece`.

    Examples
    --------
    >>> SoftECE(n_bins=15)(torch.zeros(1, 2), torch.tensor([1]))  # r = 0.5 wrong: gap 0.5
    tensor(0.5000)
    """

    params = SOFT_ECE_PARAMS
    penalty = staticmethod(soft_ece)

    def __init__(self, n_bins: int = 15, temperature: float = 1e-3, norm: SoftNorm = "l1") -> None:
        super().__init__()
        self._set_params(n_bins=n_bins, temperature=temperature, norm=norm)


class CombinedLoss(nn.Module):
    """``base(logits, targets) + weight * penalty(logits, targets)``.

    ``base`` must reduce to a scalar (``reduction`` "mean" or "sum"), since the penalty is a
    batch statistic; ``weight`` is a finite number >= 0.

    Parameters
    ----------
    base : nn.Module
        The loss, reducing to a scalar.
    penalty : nn.Module
        The penalty, e.g. a :class:`Penalty`.
    weight : float
        Weight of the penalty.

    Examples
    --------
    >>> from calibkit.losses.basic import CrossEntropyLoss
    >>> loss = CombinedLoss(CrossEntropyLoss(), L1LogitNorm(), weight=0.5)
    >>> loss(torch.tensor([[1.0, -1.0]]), torch.tensor([0]))  # log(1 + e^-2) + 0.5 * 2
    tensor(1.1269)
    """

    def __init__(self, base: nn.Module, penalty: nn.Module, weight: float) -> None:
        super().__init__()
        if getattr(base, "reduction", "mean") == "none":
            raise InputError("base", "a loss reducing to a scalar", "reduction='none'")
        self.base = base
        self.penalty = penalty
        self.weight = WEIGHT.check("weight", weight)

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        loss: Tensor = self.base(logits, targets)
        penalty: Tensor = self.penalty(logits, targets)
        return loss + self.weight * penalty

    def extra_repr(self) -> str:
        return f"weight={self.weight}"
