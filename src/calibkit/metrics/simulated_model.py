"""The declared model of :func:`calibkit.metrics.simulated.simulate`: what is true.

A simulated K-class classifier's outputs are drawn in this order, and every truth of
:mod:`calibkit.metrics.simulated_truth` is a function of these declarations alone:

1. the group (when there are groups), drawn with the group weights;
2. the predicted class ``m``, uniform over the K classes;
3. the top-label confidence ``c = low + (high - low) X`` with ``X ~ Beta(a, b)``
   (:class:`ConfidenceLaw`; ``a = b = 1`` is uniform) and ``1/K <= low < high <= 1``;
4. "correct" with probability ``f(c)``, the :class:`CalibrationMap` of the group (or of
   the predicted class, for class-wise miscalibration): ``P(correct | c) = f(c)``;
5. the shares ``d`` of the other K - 1 classes, ``d = (1 - lam(c)) D + lam(c) / (K - 1)``
   with ``D ~ Dirichlet(concentration)``: the other probabilities are ``(1 - c) d``, and
   ``lam(c) = clip((1 - 2c) / ((1 - c)(1 - 1/(K - 1))), 0, 1)`` (:func:`mixing`) is the
   least mixing with equal shares that keeps each of them below ``c`` (0 for ``c >= 1/2``;
   K = 2 has ``d = 1``), so ``c`` is the maximum and ``m`` the arg-max;
6. the label: ``m`` if correct, else another class ``j`` with probability ``d_j``.

So ``P(y = j | x) = (1 - f(c)) d_j`` for ``j != m``: with ``f(c) = c`` every class
probability is calibrated (``P(y = j | p) = p_j``), the top label and each class alike.

>>> law = ConfidenceLaw(0.5, 1.0)
>>> law.quantile(np.array([0.0, 0.5, 1.0])).tolist()
[0.5, 0.75, 1.0]
>>> CalibrationMap("affine", (-0.1, 1.0))(np.array([0.05, 0.6])).tolist()  # c - 0.1, clipped
[0.0, 0.5]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from calibkit.core.errors import InputError

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
MapKind = Literal["affine", "platt", "beta"]


@dataclass(frozen=True)
class ConfidenceLaw:
    """The top-label confidence ``c = low + (high - low) X``, ``X ~ Beta(a, b)``.

    Attributes
    ----------
    low, high : float
        The support, ``1/K <= low < high <= 1``.
    a, b : float
        The Beta shape (``a = b = 1``: uniform on ``[low, high]``).

    Examples
    --------
    >>> law = ConfidenceLaw(0.2, 1.0, 2.0, 1.0)  # density rising linearly towards 1
    >>> round(float(law.cdf(np.array([0.6]))[0]), 6)
    0.25
    """

    low: float
    high: float
    a: float = 1.0
    b: float = 1.0

    @property
    def uniform(self) -> bool:
        return self.a == 1.0 and self.b == 1.0

    def sample(self, rng: np.random.Generator, n: int) -> F64:
        """``n`` confidences."""
        x = rng.random(n) if self.uniform else rng.beta(self.a, self.b, n)
        return np.clip(self.low + (self.high - self.low) * x, self.low, self.high)

    def cdf(self, c: F64) -> F64:
        """``P(conf <= c)``."""
        x = np.clip((np.asarray(c, dtype=np.float64) - self.low) / (self.high - self.low), 0, 1)
        if self.uniform:
            return x
        from scipy.special import betainc  # the Beta law's distribution function

        return np.asarray(betainc(self.a, self.b, x), dtype=np.float64)

    def quantile(self, u: F64) -> F64:
        """The confidence at probability ``u`` (the inverse of :meth:`cdf`)."""
        return self.quantile_pair(u)[0]

    def quantile_pair(self, u: F64) -> tuple[F64, F64]:
        """The confidence at probability ``u`` and its complement ``1 - c``, the complement
        to full relative precision (near ``c = 1``, ``1 - c`` computed from ``c`` would not
        be: ``log(1 - c)`` and ``1 / (1 - c)`` need it)."""
        u = np.asarray(u, dtype=np.float64)
        if self.uniform:
            x, x_not = u, 1.0 - u
        else:
            from scipy.special import betaincinv  # the Beta law's quantiles

            x = np.asarray(betaincinv(self.a, self.b, u), dtype=np.float64)
            x_not = 1.0 - x
            upper = u > 0.5  # 1 - x is the quantile of Beta(b, a) at 1 - u, exactly
            x_not[upper] = betaincinv(self.b, self.a, 1.0 - u[upper])
        width = self.high - self.low
        c = np.clip(self.low + width * x, self.low, self.high)
        return c, np.clip((1.0 - self.high) + width * x_not, 1.0 - self.high, 1.0 - self.low)


@dataclass(frozen=True)
class CalibrationMap:
    """``P(correct | c)`` of one group or class.

    ``"affine"``: ``clip(coef[0] + coef[1] c, 0, 1)`` (a constant gap, or one changing
    sign); ``"platt"``: ``sigmoid(a logit(c) + b)`` with ``coef = (a, b)``; ``"beta"``
    (Kull et al. 2017): ``sigmoid(m + a ln c - b ln(1 - c))`` with ``coef = (a, b, m)``.

    Attributes
    ----------
    kind : {"affine", "platt", "beta"}
        The family.
    coef : tuple of float
        Its coefficients.

    Examples
    --------
    >>> round(float(CalibrationMap("platt", (1.0, 0.0))(np.array([0.7]))[0]), 12)
    0.7
    """

    kind: MapKind
    coef: tuple[float, ...]

    def __call__(self, c: F64, c_not: F64 | None = None) -> F64:
        """``f(c)``; ``c_not``, ``1 - c`` when the caller has it more precisely."""
        c = np.asarray(c, dtype=np.float64)
        if self.kind == "affine":
            return np.clip(self.coef[0] + self.coef[1] * c, 0.0, 1.0)
        from scipy.special import expit  # a logistic function without overflow

        with np.errstate(divide="ignore"):  # log(1 - c) = -inf at c = 1
            log_c = np.log(c)
            log_not = np.log1p(-c) if c_not is None else np.log(c_not)
        if self.kind == "platt":
            a, b = self.coef
            z = a * (log_c - log_not) + b
        else:
            a, b, m = self.coef
            z = m + a * log_c - (b * log_not if b else 0.0)
        return np.asarray(expit(z), dtype=np.float64)

    def kinks(self) -> list[float]:
        """Where the map is not smooth (an affine map's clipping points)."""
        if self.kind != "affine" or self.coef[1] == 0.0:
            return []
        a0, a1 = self.coef
        return [-a0 / a1, (1.0 - a0) / a1]


def mixing(c: F64, n_classes: int) -> F64:
    """``lam(c)``: the weight of equal shares among the other classes (module docstring).

    Parameters
    ----------
    c : ndarray
        Top-label confidences, ``>= 1/K``.
    n_classes : int
        K.

    Returns
    -------
    ndarray
        In [0, 1]: 1 at ``c = 1/K``, 0 from ``c = 1/2`` on (and always for K = 2).

    Examples
    --------
    >>> mixing(np.array([0.1, 0.3, 0.5, 1.0]), 10).round(4).tolist()
    [1.0, 0.6429, 0.0, 0.0]
    """
    c = np.asarray(c, dtype=np.float64)
    if n_classes <= 2:
        return np.zeros_like(c)
    v = 1.0 / (n_classes - 1)
    lam = (1.0 - 2.0 * c) / (np.maximum(1.0 - c, 1e-300) * (1.0 - v))
    return np.clip(lam, 0.0, 1.0)


@dataclass(frozen=True)
class SimulationModel:
    """Every declaration of a simulation (module docstring): the truth's only input.

    Attributes
    ----------
    n_classes : int
        K.
    law : ConfidenceLaw
        The top-label confidence.
    maps : tuple of CalibrationMap
        The distinct maps ``P(correct | c)``.
    weights : tuple of float
        The probability of each map: the group weights, or the share of the classes that
        have it (a class-wise model), or ``(1.0,)``.
    groups : bool
        Map ``i`` is group ``i``'s (and each sample has a group).
    class_maps : tuple of int
        A class-wise model: the map of each predicted class; else empty.
    concentration : float
        The Dirichlet concentration of the other classes' shares.

    Examples
    --------
    >>> model = SimulationModel(2, ConfidenceLaw(0.5, 1.0), (CalibrationMap("affine", (0.0, 1.0)),))
    >>> model.p_correct([0.6, 0.9]).tolist()
    [0.6, 0.9]
    """

    n_classes: int
    law: ConfidenceLaw
    maps: tuple[CalibrationMap, ...]
    weights: tuple[float, ...] = (1.0,)
    groups: bool = False
    class_maps: tuple[int, ...] = ()
    concentration: float = 1.0

    def p_correct(self, conf: object, group: int | None = None) -> F64:
        """The true ``P(correct | top-label confidence)`` at the confidences ``conf`` (the
        result shaped like them), of all samples or of one ``group`` (a model with groups)."""
        c = np.asarray(conf, dtype=np.float64)
        if group is not None:
            if not self.groups:
                raise InputError("group", "None (the model has no groups)", repr(group))
            if not 0 <= group < len(self.maps):
                raise InputError("group", f"a group in [0, {len(self.maps) - 1}]", repr(group))
            return self.maps[group](c)
        total = np.zeros_like(c)
        for w, f in zip(self.weights, self.maps, strict=True):
            total += w * f(c)
        return total


def draw(model: SimulationModel, n: int, rng: np.random.Generator) -> tuple[F64, I64, I64 | None]:
    """``n`` samples of ``model``: probabilities ``(n, K)``, labels ``(n,)`` and groups ``(n,)``
    (or None), drawn from ``rng`` (its draws, in a fixed order, make the sample).

    Examples
    --------
    >>> model = SimulationModel(3, ConfidenceLaw(0.5, 1.0), (CalibrationMap("affine", (0.0, 1.0)),))
    >>> probs, labels, groups = draw(model, 4, np.random.default_rng(0))
    >>> probs.shape, labels.dtype.name, groups
    ((4, 3), 'int64', None)
    """
    k = model.n_classes
    groups = rng.choice(len(model.maps), size=n, p=model.weights) if model.groups else None
    predicted = rng.integers(0, k, size=n)
    c = model.law.sample(rng, n)
    which = groups
    if model.class_maps:
        which = np.asarray(model.class_maps)[predicted]
    if which is None:
        p = model.maps[0](c)
    else:
        p = np.empty(n)
        for i, f in enumerate(model.maps):
            rows = which == i
            p[rows] = f(c[rows])
    correct = rng.random(n) < p
    probs, labels = _spread(model, c, predicted, correct, rng)
    return probs, labels, None if groups is None else groups.astype(np.int64)


def _spread(
    model: SimulationModel, c: F64, predicted: I64, correct: np.ndarray, rng: np.random.Generator
) -> tuple[F64, I64]:
    """The probabilities (``c`` at the predicted class, ``(1 - c) d`` elsewhere) and the
    labels (the predicted class if correct, else class ``j`` with probability ``d_j``)."""
    n, k = c.shape[0], model.n_classes
    rows = np.arange(n)
    lam = mixing(c, k)
    shares = rng.standard_gamma(model.concentration, size=(n, k))  # Dirichlet, unnormalised
    shares[rows, predicted] = 0.0
    total = shares.sum(axis=1)
    empty = total <= 0.0  # every gamma draw underflowed: equal shares
    if empty.any():
        shares[empty] = 1.0
        shares[np.flatnonzero(empty), predicted[empty]] = 0.0
        total[empty] = k - 1
    labels = predicted.astype(np.int64)
    wrong = np.flatnonzero(~correct)
    if wrong.size:
        uniform = rng.random(wrong.size) < lam[wrong]
        other = (predicted[wrong] + 1 + rng.integers(0, k - 1, wrong.size)) % k
        cum = np.cumsum(shares[wrong], axis=1)
        t = np.minimum(rng.random(wrong.size) * cum[:, -1], np.nextafter(cum[:, -1], 0.0))
        picked = (cum > t[:, None]).argmax(axis=1)
        labels[wrong] = np.where(uniform, other, picked)
    shares *= ((1.0 - c) * (1.0 - lam) / total)[:, None]
    if k > 2:
        shares += ((1.0 - c) * lam / (k - 1))[:, None]
    shares[rows, predicted] = c
    tied = shares >= c[:, None]  # only where rounding met c (a null event): just below it
    tied[rows, predicted] = False
    if tied.any():
        r, j = np.nonzero(tied)
        shares[r, j] = np.nextafter(c[r], 0.0)
    return shares, labels
