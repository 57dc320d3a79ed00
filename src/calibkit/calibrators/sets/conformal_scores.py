"""The non-conformity scores of conformal prediction sets: one class per score, in one registry.

:data:`SCORES` holds the scores of
:class:`~calibkit.calibrators.sets.conformal.ConformalClassifier` by name, each a small
class with its parameters declared (:func:`~calibkit.core.params.param`; a score is passed
as an object, ``ConformalClassifier(conformity_score=RAPS(penalty=0.1))``, or by name,
``"raps"``, for its defaults) and its two halves side by side: :meth:`~ConformalScore.numpy`
computes the score of every class of every row from probabilities ``(N, K)`` (what ``fit``
and ``predict_set`` use), :meth:`~ConformalScore.torch` computes the same in torch (what the
exported module :class:`~calibkit.calibrators.sets.conformal_module.ConformalSets` uses). A
score is an ``nn.Module`` whose ``forward`` is its torch half, so a module holding one
scripts (``torch.jit.script``), exports and runs in ONNX.

Notation: ``p_(1) >= p_(2) >= ...`` the probabilities sorted in decreasing order, ``r`` the
1-based rank of the scored class ``y``, ``U`` uniform in [0, 1) per row (0 for the
non-randomised variants).

Ranks
    Ties between classes of equal probability are broken by class index: the lower index
    is ranked first. The numpy half sorts (numpy's stable sort); the torch half compares
    every pair of classes instead (``i`` is ahead of ``j`` when ``p_i > p_j``, or ``p_i ==
    p_j`` and ``i < j``), which ONNX runs without a sort, at O(N K^2) memory. It adds the
    masses ahead of a class in class order rather than rank order, so the two halves may
    differ by a few units in the last place.

>>> SCORES.names()
['lac', 'aps', 'raps', 'saps']
>>> p = np.array([[0.5, 0.2, 0.3]])
>>> SCORES.create("aps").numpy(p).round(6).tolist()
[[0.5, 1.0, 0.8]]
>>> RAPS(penalty=0.05)
RAPS(penalty=0.05, k_reg=1)
>>> SCORES.get("apps")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
calibkit.core.errors.UnknownNameError: score: expected one of ..., got 'apps' (did you mean 'aps'?)
"""

# no "from __future__ import annotations": TorchScript reads the parameters' annotations
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
import torch
from torch import Tensor, nn

from calibkit.calibrators.component import Component, ComponentSpec, set_component_name
from calibkit.core import catalog
from calibkit.core.errors import InputError
from calibkit.core.params import param
from calibkit.core.registry import Registry
from calibkit.core.validation import Integer, Real

F64 = npt.NDArray[np.float64]
#: How far (absolute) a score computed in floating point may stray outside its exact range
#: (:meth:`ConformalScore.value_range`): probabilities that sum to 1 to a few units in the
#: last place give cumulative masses a few units above 1.
SCORE_TOL = 1e-9


class ConformalScore(Component, nn.Module):
    """A non-conformity score ``s(x, y)``: larger is less conforming.

    A subclass declares its parameters with :func:`~calibkit.core.params.param`, says
    whether it has a randomised variant (:attr:`randomizable`) and defines :meth:`numpy`
    and :meth:`torch`, which compute the same score.

    Examples
    --------
    >>> score = SAPS(weight=0.25)
    >>> p = np.array([[0.25, 0.5, 0.25]])
    >>> score.numpy(p).tolist(), score(torch.tensor(p), torch.zeros(1)).tolist()
    ([[0.75, 0.5, 1.0]], [[0.75, 0.5, 1.0]])
    """

    #: Whether the score has a randomised variant (a uniform ``U`` per row).
    randomizable: ClassVar[bool] = True

    def _set_params(self, **params: Any) -> None:
        if "_modules" not in self.__dict__:  # the declared constructor: a module first
            nn.Module.__init__(self)
        super()._set_params(**params)

    def numpy(self, probs: F64, u: F64 | None = None) -> F64:
        """The score of every class of every row, ``(N, K)``, from probabilities ``(N, K)``.

        ``u``: one uniform value in [0, 1) per row (``None``: 0, the non-randomised score).
        """
        raise NotImplementedError

    def torch(self, p: Tensor, u: Tensor) -> Tensor:
        """:meth:`numpy` in torch (``u``: ``(N,)``, zeros for the non-randomised score)."""
        raise NotImplementedError

    def value_range(self, n_classes: int) -> tuple[float, float]:
        """The least and the greatest value the score can take on ``n_classes`` classes,
        for any probabilities and any ``U`` in [0, 1): declared beside the formula, the one
        source a loaded threshold is checked against (a fitted threshold is one of the
        calibration rows' scores, so it lies in this range, to :data:`SCORE_TOL`).

        Parameters
        ----------
        n_classes : int
            ``K``, the number of classes.

        Returns
        -------
        tuple of float
            ``(low, high)``.
        """
        raise NotImplementedError

    def forward(self, p: Tensor, u: Tensor) -> Tensor:
        return self.torch(p, u)


#: The conformal scores by name, in the order tables list them.
SCORES: Registry[type[ConformalScore]] = Registry("score", on_register=set_component_name)
#: What ``ConformalClassifier(conformity_score=...)`` accepts: a score, or a score's name.
SCORE = ComponentSpec(SCORES)


def scores_with(names: list[str], params: dict[str, Any]) -> list[ConformalScore]:
    """The scores ``names``, each with those of ``params`` it declares (``calibkit
    conformal --score-param``); a parameter that none of them declares is refused.

    >>> scores_with(["aps", "raps"], {"penalty": 0.05})
    [APS(), RAPS(penalty=0.05, k_reg=1)]
    >>> scores_with(["aps"], {"penalty": 0.05})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calibkit.core.errors.InputError: score parameters: expected ... of aps (none), got 'penalty'
    """
    classes = [SCORES.get(name) for name in names]
    known = [key for cls in classes for key in cls.param_constraints]
    unknown = [key for key in params if key not in known]
    if unknown:
        listed = ", ".join(dict.fromkeys(known)) or "none"
        expected = f"parameters of {', '.join(names)} ({listed})"
        raise InputError("score parameters", expected, repr(unknown[0]))
    return [
        cls(**{k: v for k, v in params.items() if k in cls.param_constraints}) for cls in classes
    ]


# ----- the ranking, in numpy (a sort) and in torch (pairwise comparisons) -------------------
def _by_rank(probs: F64) -> tuple[npt.NDArray[np.intp], F64, F64]:
    """Each row's class order (equal probabilities: lower index first), its probabilities
    in that order, and the ranks ``1..K`` ``(1, K)``."""
    order = np.argsort(-probs, axis=1, kind="stable")
    ordered = np.take_along_axis(probs, order, axis=1)
    return order, ordered, np.arange(1, probs.shape[1] + 1, dtype=np.float64)[None, :]


def _in_class_order(order: npt.NDArray[np.intp], by_rank: F64) -> F64:
    """Scores computed in rank order, put back in class order."""
    out = np.empty_like(by_rank)
    np.put_along_axis(out, order, by_rank, axis=1)
    return out


def _u_column(u: F64 | None, n: int) -> F64:
    return np.zeros((n, 1)) if u is None else np.asarray(u, dtype=np.float64).reshape(n, 1)


def _pairwise_rank(p: Tensor) -> tuple[Tensor, Tensor]:
    """``ahead[n, i, j]``: class ``i`` is ranked before class ``j`` (as float), and each
    class's 1-based rank ``(N, K)``."""
    k = p.shape[1]
    index = torch.arange(k, device=p.device)
    earlier = (index.unsqueeze(1) < index.unsqueeze(0)).unsqueeze(0)  # [i, j]: i < j
    pi, pj = p.unsqueeze(2), p.unsqueeze(1)
    ahead = ((pi > pj) | ((pi == pj) & earlier)).to(p.dtype)
    return ahead, ahead.sum(dim=1) + 1.0


def _pairwise_aps(p: Tensor, u: Tensor, ahead: Tensor) -> Tensor:
    """APS from the pairwise ranking: the mass ranked ahead of a class, plus ``(1 - U) p``."""
    before = (ahead * p.unsqueeze(2)).sum(dim=1)
    return before + (1.0 - u.to(p.dtype).unsqueeze(1)) * p


# ----- the scores ---------------------------------------------------------------------------
class LAC(ConformalScore):
    """LAC (also called THR; Sadinle et al. 2019): ``s = 1 - p_y``.

    No randomised variant: a set is every class with ``p_y >= 1 - q``, and may be empty.

    Examples
    --------
    >>> LAC().numpy(np.array([[0.5, 0.2, 0.3]])).round(6).tolist()
    [[0.5, 0.8, 0.7]]
    """

    randomizable: ClassVar[bool] = False

    def numpy(self, probs: F64, u: F64 | None = None) -> F64:
        return 1.0 - probs

    def torch(self, p: Tensor, u: Tensor) -> Tensor:
        return 1.0 - p

    def value_range(self, n_classes: int) -> tuple[float, float]:
        """``1 - p_y`` lies in [0, 1].

        >>> LAC().value_range(10)
        (0.0, 1.0)
        """
        return 0.0, 1.0


class APS(ConformalScore):
    """APS (Romano et al. 2020): ``s = sum_{j <= r} p_(j) - U p_(r)``, the mass ranked up to y.

    With ``U = 0`` a set is the longest prefix of the ranking whose cumulative mass stays at
    or below ``q`` (MAPIE's ``include_last_label=False``), so it may be empty.

    Examples
    --------
    >>> APS().numpy(np.array([[0.4, 0.4, 0.2]]), np.array([0.5])).round(6).tolist()
    [[0.2, 0.6, 0.9]]
    """

    def numpy(self, probs: F64, u: F64 | None = None) -> F64:
        order, ordered, _ = _by_rank(probs)
        uu = _u_column(u, probs.shape[0])
        return _in_class_order(order, np.cumsum(ordered, axis=1) - uu * ordered)

    def torch(self, p: Tensor, u: Tensor) -> Tensor:
        ahead, _ = _pairwise_rank(p)
        return _pairwise_aps(p, u, ahead)

    def value_range(self, n_classes: int) -> tuple[float, float]:
        """A cumulative mass less a part of its last term: in [0, 1].

        >>> APS().value_range(10)
        (0.0, 1.0)
        """
        return 0.0, 1.0


class RAPS(ConformalScore):
    """RAPS (Angelopoulos et al. 2021): APS ``+ penalty * max(0, r - k_reg)``.

    Examples
    --------
    >>> RAPS(penalty=0.1, k_reg=1).numpy(np.array([[0.4, 0.4, 0.2]])).round(6).tolist()
    [[0.4, 0.9, 1.2]]
    """

    penalty: float = param(
        default=0.1,
        check=Real(0.0),
        doc="The rank penalty ``lambda`` (0.1 suits tens of classes: the paper uses about "
        "0.01 on ImageNet's 1000).",
    )
    k_reg: int = param(
        default=1,
        check=Integer(0, 100_000),
        doc="The ranks free of penalty (the paper uses about 5 on ImageNet).",
    )

    def numpy(self, probs: F64, u: F64 | None = None) -> F64:
        order, ordered, rank = _by_rank(probs)
        uu = _u_column(u, probs.shape[0])
        aps = np.cumsum(ordered, axis=1) - uu * ordered
        return _in_class_order(order, aps + self.penalty * np.maximum(rank - self.k_reg, 0))

    def torch(self, p: Tensor, u: Tensor) -> Tensor:
        ahead, rank = _pairwise_rank(p)
        penalised = torch.clamp(rank - float(self.k_reg), min=0.0)
        return _pairwise_aps(p, u, ahead) + self.penalty * penalised

    def value_range(self, n_classes: int) -> tuple[float, float]:
        """APS's [0, 1] plus at most ``penalty * max(0, K - k_reg)`` (the last rank's).

        >>> RAPS(penalty=0.1, k_reg=1).value_range(3)
        (0.0, 1.2)
        """
        return 0.0, 1.0 + self.penalty * max(0, n_classes - self.k_reg)


class SAPS(ConformalScore):
    """SAPS (Huang et al. 2023): ``s = (1 - U) p_(1)`` for ``r = 1``, else ``p_(1) + weight
    * (r - 1 - U)``: only the top probability is used, the rest is the rank.

    Examples
    --------
    >>> SAPS(weight=0.2).numpy(np.array([[0.4, 0.4, 0.2]]), np.array([0.5])).round(6).tolist()
    [[0.2, 0.5, 0.7]]
    """

    weight: float = param(
        default=0.2,
        check=Real(0.0, closed="neither"),
        doc="The rank weight ``lambda`` (the default is TorchCP's).",
    )

    def numpy(self, probs: F64, u: F64 | None = None) -> F64:
        order, ordered, rank = _by_rank(probs)
        uu = _u_column(u, probs.shape[0])
        top = ordered[:, :1]
        by_rank = np.where(rank == 1, (1 - uu) * top, top + self.weight * (rank - 1 - uu))
        return _in_class_order(order, by_rank)

    def torch(self, p: Tensor, u: Tensor) -> Tensor:
        _, rank = _pairwise_rank(p)
        uu = u.to(p.dtype).unsqueeze(1)
        top = p.max(dim=1, keepdim=True).values
        return torch.where(rank == 1.0, (1.0 - uu) * top, top + self.weight * (rank - 1.0 - uu))

    def value_range(self, n_classes: int) -> tuple[float, float]:
        """``(1 - U) p_(1)`` in [0, 1] at rank 1, else below ``1 + weight * (K - 1)``.

        >>> SAPS(weight=0.25).value_range(5)
        (0.0, 2.0)
        """
        return 0.0, 1.0 + self.weight * (n_classes - 1)


for _name, _where in catalog.CONFORMITY_SCORES.items():  # the catalog names each score
    SCORES.register(_name)(globals()[_where.rpartition(".")[2]])
