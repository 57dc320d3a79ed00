"""Binned calibration errors: ECE, adaptive ECE, MCE, RMSCE, debiased ECE and SCE.

All binning goes through :mod:`calibkit.core.binning` (bin rule, tie handling, conventions and
binary semantics are stated there). Sums are accumulated in float64.

With per-bin outcome rate ``acc_b``, mean confidence ``conf_b`` and weight ``w_b`` (the
fraction of samples in bin ``b``):

- ``norm="l1"`` (ECE): ``sum_b w_b |acc_b - conf_b|``
- ``norm="l2"`` (RMSCE): ``sqrt(sum_b w_b (acc_b - conf_b)^2)``
- ``norm="max"`` (MCE): ``max_b |acc_b - conf_b|`` over non-empty bins

>>> labels = [0, 0, 1, 1, 1]
>>> p1 = [0.25, 0.25, 0.55, 0.75, 0.75]
>>> round(ece(labels, probs=p1, n_bins=2, mode="positive_class"), 4)
0.29
>>> round(mce(labels, probs=p1, n_bins=2, mode="positive_class"), 4)
0.3167
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from calibkit.core.binning import (
    BinStats,
    Convention,
    Scheme,
    TorchDtype,
    bin_stats,
    check_n_bins,
    equal_width_index,
)
from calibkit.core.errors import InputError
from calibkit.core.outputs import ClassifierOutputs, as_outputs
from calibkit.metrics.samples import F64, Mode, calibration_target, check_weight

Norm = Literal["l1", "l2", "max"]
NORMS: tuple[str, ...] = ("l1", "l2", "max")


def errors_from_sums(counts: F64, conf_sum: F64, acc_sum: F64) -> dict[str, F64]:
    """ECE (l1), RMSCE (l2), MCE (max) and debiased ECE from per-bin sums, row by row.

    The arrays are ``(..., n_bins)``: one row per weighting (e.g. bootstrap replicate).
    The debiased l2 error (Kumar et al. 2019) is
    ``sqrt(max(0, sum_b w_b [(acc_b - conf_b)^2 - acc_b (1 - acc_b) / (n_b - 1)]))`` with
    bins of fewer than 2 samples contributing 0.
    """
    total = counts.sum(axis=-1, keepdims=True)
    nonempty = counts > 0
    safe = np.where(nonempty, counts, 1.0)
    diff = np.abs(acc_sum - conf_sum)
    gaps = np.where(nonempty, diff / safe, 0.0)
    weights = counts / total
    use = counts >= 2
    n = np.where(use, counts, 2.0)
    acc, conf = acc_sum / n, conf_sum / n
    terms = np.where(use, (acc - conf) ** 2 - acc * (1.0 - acc) / (n - 1.0), 0.0)
    return {
        "l1": diff.sum(axis=-1) / total[..., 0],
        "l2": np.sqrt((weights * gaps**2).sum(axis=-1)),
        "max": np.where(nonempty, gaps, -np.inf).max(axis=-1),
        "debiased": np.sqrt(np.maximum(0.0, (weights * terms).sum(axis=-1))),
    }


def error_from_stats(stats: BinStats, norm: Norm = "l1") -> float:
    """Calibration error of precomputed bin sums under ``norm``."""
    if norm not in NORMS:
        raise InputError("norm", "one of " + ", ".join(NORMS), repr(norm))
    return float(errors_from_sums(stats.counts, stats.confidence_sum, stats.accuracy_sum)[norm])


def debiased_from_stats(stats: BinStats) -> float:
    """Debiased l2 calibration error (Kumar et al. 2019) of precomputed bin sums."""
    sums = errors_from_sums(stats.counts, stats.confidence_sum, stats.accuracy_sum)
    return float(sums["debiased"])


def reliability_stats(
    labels: object,
    probs: object = None,
    *,
    logits: object = None,
    n_bins: int = 15,
    scheme: Scheme = "equal_width",
    mode: Mode = "top_label",
    convention: Convention = "calibkit",
    sample_weight: object = None,
) -> BinStats:
    """Per-bin sums behind a reliability diagram and every binned metric."""
    out = as_outputs(labels, probs, logits=logits)
    return _stats(out, n_bins, scheme, mode, convention, sample_weight)


def _stats(
    out: ClassifierOutputs,
    n_bins: int,
    scheme: Scheme,
    mode: Mode,
    convention: Convention,
    sample_weight: object,
) -> BinStats:
    conf, outcome = calibration_target(out, mode)
    w = check_weight(sample_weight, out.n_samples)
    return bin_stats(
        conf,
        outcome,
        n_bins,
        scheme=scheme,
        convention=convention,
        weight=w,
        torchmetrics_dtype=torchmetrics_dtype(out, mode),
    )


def torchmetrics_dtype(out: ClassifierOutputs, mode: Mode) -> TorchDtype:
    """The precision in which torchmetrics would bin these outputs.

    Its multiclass (top-label) metric casts confidences to float32; its binary
    (positive-class) metric keeps the input's dtype, so float64 input is binned in float64.
    """
    return "float64" if mode == "positive_class" and out.input_dtype == "float64" else "float32"


def calibration_error(
    labels: object,
    probs: object = None,
    *,
    logits: object = None,
    n_bins: int = 15,
    norm: Norm = "l1",
    scheme: Scheme = "equal_width",
    mode: Mode = "top_label",
    convention: Convention = "calibkit",
    sample_weight: object = None,
) -> float:
    """Binned calibration error of the given ``norm`` (see the module docstring)."""
    if norm not in NORMS:
        raise InputError("norm", "one of " + ", ".join(NORMS), repr(norm))
    out = as_outputs(labels, probs, logits=logits)
    return error_from_stats(_stats(out, n_bins, scheme, mode, convention, sample_weight), norm)


def ece(
    labels: object,
    probs: object = None,
    *,
    logits: object = None,
    n_bins: int = 15,
    mode: Mode = "top_label",
    convention: Convention = "calibkit",
    sample_weight: object = None,
) -> float:
    """Expected calibration error with ``n_bins`` equal-width bins (Guo et al. 2017)."""
    return calibration_error(
        labels,
        probs,
        logits=logits,
        n_bins=n_bins,
        mode=mode,
        convention=convention,
        sample_weight=sample_weight,
    )


def aece(
    labels: object,
    probs: object = None,
    *,
    logits: object = None,
    n_bins: int = 15,
    mode: Mode = "top_label",
    sample_weight: object = None,
) -> float:
    """Adaptive ECE: ECE with equal-mass bins; ties are never split (see calibkit.core.binning)."""
    return calibration_error(
        labels,
        probs,
        logits=logits,
        n_bins=n_bins,
        scheme="equal_mass",
        mode=mode,
        sample_weight=sample_weight,
    )


def mce(
    labels: object,
    probs: object = None,
    *,
    logits: object = None,
    n_bins: int = 15,
    mode: Mode = "top_label",
    convention: Convention = "calibkit",
    sample_weight: object = None,
) -> float:
    """Maximum calibration error: the largest gap over non-empty equal-width bins."""
    return calibration_error(
        labels,
        probs,
        logits=logits,
        n_bins=n_bins,
        norm="max",
        mode=mode,
        convention=convention,
        sample_weight=sample_weight,
    )


def rmsce(
    labels: object,
    probs: object = None,
    *,
    logits: object = None,
    n_bins: int = 15,
    mode: Mode = "top_label",
    convention: Convention = "calibkit",
    sample_weight: object = None,
) -> float:
    """Root-mean-square calibration error (l2 norm) with equal-width bins."""
    return calibration_error(
        labels,
        probs,
        logits=logits,
        n_bins=n_bins,
        norm="l2",
        mode=mode,
        convention=convention,
        sample_weight=sample_weight,
    )


def debiased_ece(
    labels: object,
    probs: object = None,
    *,
    logits: object = None,
    n_bins: int = 15,
    scheme: Scheme = "equal_width",
    mode: Mode = "top_label",
    sample_weight: object = None,
) -> float:
    """Debiased l2 calibration error (Kumar et al. 2019, "Verified uncertainty calibration")."""
    out = as_outputs(labels, probs, logits=logits)
    return debiased_from_stats(_stats(out, n_bins, scheme, mode, "calibkit", sample_weight))


def sce_index(probs: F64, n_bins: int) -> np.ndarray:
    """Flat (class, bin) index of every entry of ``probs``: ``k * n_bins + bin(p_ik)``."""
    idx = equal_width_index(probs.reshape(-1), n_bins).reshape(probs.shape)
    return (idx + np.arange(probs.shape[1], dtype=np.int64) * n_bins).reshape(-1)


def sce_from_index(
    flat_idx: np.ndarray, probs: F64, labels: np.ndarray, n_bins: int, weight: F64 | None
) -> float:
    """SCE from precomputed flat indices (see :func:`sce`)."""
    n, k = probs.shape
    w = np.ones(n) if weight is None else weight
    conf_sum = np.bincount(flat_idx, weights=(probs * w[:, None]).reshape(-1), minlength=k * n_bins)
    hit_idx = labels * n_bins + equal_width_index(probs[np.arange(n), labels], n_bins)
    acc_sum = np.bincount(hit_idx, weights=w, minlength=k * n_bins)
    return float(np.abs(acc_sum - conf_sum).sum() / (k * w.sum()))


def sce(
    labels: object,
    probs: object = None,
    *,
    logits: object = None,
    n_bins: int = 15,
    sample_weight: object = None,
) -> float:
    """Static calibration error (Nixon et al. 2019): classwise ECE averaged over classes.

    For every class k, all N probabilities ``p_k`` are binned (equal width) and compared
    with the frequency of ``y = k`` in the bin: ``SCE = 1/K sum_k sum_b (n_kb / N)
    |freq_kb - conf_kb|``.

    >>> sce([0, 1], probs=[[1.0, 0.0], [0.0, 1.0]])
    0.0
    """
    out = as_outputs(labels, probs, logits=logits)
    n_bins = check_n_bins(n_bins)
    w = check_weight(sample_weight, out.n_samples)
    return sce_from_index(sce_index(out.probs, n_bins), out.probs, out.labels, n_bins, w)
