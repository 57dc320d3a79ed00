"""Slow, direct float64 reference implementations and synthetic data for the metric tests.

Each follows the paper's formula literally (loops over bins, classes or pairs), sharing no
code with calibkit, so agreement is evidence rather than tautology.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]


def nominal_bins(conf: F64, n_bins: int) -> npt.NDArray[np.int64]:
    """Bin k holds k/n <= c < (k+1)/n (edges as correctly rounded quotients), last closed."""
    inner = np.array([k / n_bins for k in range(1, n_bins)])
    return np.searchsorted(inner, conf, side="right").astype(np.int64)


def binned_errors(conf: F64, outcome: F64, idx: npt.NDArray[np.int64]) -> dict[str, float]:
    """ECE, RMSCE and MCE from a bin index, one bin at a time with masks (pairwise sums)."""
    n = conf.shape[0]
    l1 = l2 = worst = 0.0
    for b in np.unique(idx):
        m = idx == b
        gap = abs(float(np.sum(outcome[m])) - float(np.sum(conf[m]))) / m.sum()
        l1 += m.sum() / n * gap
        l2 += m.sum() / n * gap**2
        worst = max(worst, gap)
    return {"l1": l1, "l2": float(np.sqrt(l2)), "max": worst}


def debiased(conf: F64, outcome: F64, idx: npt.NDArray[np.int64]) -> float:
    """Kumar et al. (2019): bias-corrected squared error per bin, plug-in weights."""
    n = conf.shape[0]
    total = 0.0
    for b in np.unique(idx):
        m = idx == b
        nb = int(m.sum())
        if nb < 2:
            continue
        acc = float(np.mean(outcome[m]))
        total += nb / n * ((acc - float(np.mean(conf[m]))) ** 2 - acc * (1 - acc) / (nb - 1))
    return float(np.sqrt(max(total, 0.0)))


def sce(probs: F64, labels: npt.NDArray[np.int64], n_bins: int) -> float:
    """Nixon et al. (2019): ECE of every class's probability against ``y == k``, averaged."""
    k = probs.shape[1]
    per_class = []
    for cls in range(k):
        p = probs[:, cls]
        hit = (labels == cls).astype(np.float64)
        per_class.append(binned_errors(p, hit, nominal_bins(p, n_bins))["l1"])
    return float(np.mean(per_class))


def ks(conf: F64, outcome: F64) -> float:
    """Gupta et al. (2021): largest gap between the cumulative outcome and confidence curves."""
    order = np.argsort(conf)
    n = conf.shape[0]
    h = np.cumsum(outcome[order]) / n
    h_tilde = np.cumsum(conf[order]) / n
    return float(np.max(np.abs(h - h_tilde)))


def mmce(conf: F64, outcome: F64, weight: F64 | None = None, width: float = 0.4) -> float:
    """Kumar et al. (2018), O(N^2): sqrt(sum_ij a_i a_j exp(-|r_i - r_j| / width)) / W."""
    w = np.ones_like(conf) if weight is None else weight
    a = w * (outcome - conf)
    kernel = np.exp(-np.abs(conf[:, None] - conf[None, :]) / width)
    return float(np.sqrt(max(float(a @ kernel @ a), 0.0)) / w.sum())


def calibrated_data(
    n: int, k: int, seed: int, concentration: float = 1.0
) -> tuple[npt.NDArray[np.int64], F64]:
    """Labels drawn from Dirichlet probabilities: a perfectly calibrated model."""
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.full(k, concentration), size=n)
    cum = probs.cumsum(axis=1)
    labels = np.minimum((rng.random(n)[:, None] > cum).sum(axis=1), k - 1)
    return labels.astype(np.int64), probs


def overconfident_data(
    n: int, k: int, seed: int, temperature: float = 0.5
) -> tuple[npt.NDArray[np.int64], F64]:
    """Labels from softmax(z) but probabilities softmax(z / temperature): overconfident."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 2.0
    true = np.exp(z - z.max(axis=1, keepdims=True))
    true /= true.sum(axis=1, keepdims=True)
    labels = np.minimum((rng.random(n)[:, None] > true.cumsum(axis=1)).sum(axis=1), k - 1)
    zs = z / temperature
    probs = np.exp(zs - zs.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    return labels.astype(np.int64), probs
