"""Binned calibration errors: ECE, adaptive ECE, MCE, RMSCE, debiased RMSCE and SCE.

All binning goes through :mod:`calibkit.core.binning`: equal-width bins are ``[a, b)`` with
the last bin closed at 1.0; tie handling, the parity conventions and the binary semantics
(``mode="top_label"``: max probability vs "prediction correct"; ``mode="positive_class"``:
``P(y = 1)`` vs ``y == 1``) are stated there. The formulas (ECE = l1, RMSCE = l2,
MCE = max norm of the per-bin gaps) are in :mod:`calibkit.metrics.bin_errors`; sums are
accumulated in float64.

Every metric takes ``labels`` (``(N,)`` integers, or a
:class:`~calibkit.core.outputs.ClassifierOutputs`) and exactly one of ``probs`` or
``logits`` (``(N, K)``; a 1-D ``probs`` is ``P(y = 1)`` of a binary problem), plus optional
non-negative ``sample_weight`` ``(N,)``; it returns a float64 Python float (a fraction).

The examples use two samples: confidence 0.8 correct and 0.6 wrong, so with 10 bins the
ECE is ``0.5 * 0.2 + 0.5 * 0.6 = 0.4``.

>>> labels = [0, 0, 1, 1, 1]
>>> p1 = [0.25, 0.25, 0.55, 0.75, 0.75]
>>> round(ece(labels, probs=p1, n_bins=2, mode="positive_class"), 4)
0.29
>>> round(mce(labels, probs=p1, n_bins=2, mode="positive_class"), 4)
0.3167
"""

from __future__ import annotations

from typing import TypedDict, Unpack

from calibkit.core.binning import (
    BinStats,
    Convention,
    Scheme,
    TorchDtype,
    bin_stats,
    check_n_bins,
)
from calibkit.core.docs import fill_doc
from calibkit.core.outputs import ClassifierOutputs, as_outputs
from calibkit.metrics.bin_errors import (
    Norm,
    debiased_from_stats,
    error_from_stats,
    sce_from_index,
    sce_index,
)
from calibkit.metrics.samples import Mode, calibration_target, check_weight

#: The Parameters section and the return type of mce, rmsce.
_SIGNATURE = """Parameters
----------
labels, probs, logits, sample_weight, n_bins, mode, convention
    As in :func:`ece`.

Returns
-------
float"""


class _Binning(TypedDict, total=False):
    """The keyword options every binned metric takes (defaults: :func:`reliability_stats`)."""

    logits: object
    n_bins: int
    mode: Mode
    sample_weight: object


class _EqualWidth(_Binning, total=False):
    convention: Convention


class _Schemed(_Binning, total=False):
    scheme: Scheme


class _Options(_EqualWidth, _Schemed, total=False):
    """Every keyword option of :func:`reliability_stats`."""


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
    """Per-bin sums behind a reliability diagram and every binned metric.

    Parameters
    ----------
    labels, probs, logits, sample_weight
        The outputs (see the module docstring).
    n_bins : int
        Number of bins.
    scheme : {"equal_width", "equal_mass"}
        Bin scheme (see :mod:`calibkit.core.binning`).
    mode : {"top_label", "positive_class"}
        What is binned for a binary problem.
    convention : {"calibkit", "torchmetrics", "netcal", "sklearn"}
        Equal-width bin rule; "calibkit" is ``[a, b)``, last bin closed at 1.0.

    Returns
    -------
    BinStats
        Edges, weight, confidence sum and outcome sum per bin.

    Examples
    --------
    >>> stats = reliability_stats([1, 0], probs=[[0.2, 0.8], [0.4, 0.6]], n_bins=2)
    >>> stats.counts.tolist(), round(float(stats.mean_confidence[1]), 4)
    ([0.0, 2.0], 0.7)
    """
    out = as_outputs(labels, probs, logits=logits)
    conf, outcome = calibration_target(out, mode)
    return bin_stats(
        conf,
        outcome,
        n_bins,
        scheme=scheme,
        convention=convention,
        weight=check_weight(sample_weight, out.n_samples),
        torchmetrics_dtype=torchmetrics_dtype(out, mode),
    )


def torchmetrics_dtype(out: ClassifierOutputs, mode: Mode) -> TorchDtype:
    """The precision in which torchmetrics would bin these outputs.

    Its multiclass (top-label) metric casts confidences to float32; its binary
    (positive-class) metric keeps the input's dtype, so float64 input is binned in float64.

    Parameters
    ----------
    out : ClassifierOutputs
        Validated outputs (their input dtype is recorded).
    mode : {"top_label", "positive_class"}
        What is binned.

    Returns
    -------
    {"float32", "float64"}
        The dtype to pass as ``torchmetrics_dtype`` to :mod:`calibkit.core.binning`.

    Examples
    --------
    >>> import numpy as np
    >>> out = as_outputs([1, 0], probs=np.array([0.8, 0.4]))
    >>> torchmetrics_dtype(out, "top_label"), torchmetrics_dtype(out, "positive_class")
    ('float32', 'float64')
    """
    return "float64" if mode == "positive_class" and out.input_dtype == "float64" else "float32"


def calibration_error(
    labels: object, probs: object = None, *, norm: Norm = "l1", **options: Unpack[_Options]
) -> float:
    """Binned calibration error of the given ``norm`` (see :mod:`calibkit.metrics.bin_errors`).

    Parameters
    ----------
    labels, probs, logits, sample_weight, n_bins, scheme, mode, convention
        As in :func:`reliability_stats`.
    norm : {"l1", "l2", "max"}
        ECE, RMSCE or MCE.

    Returns
    -------
    float
        The calibration error, a fraction.

    Examples
    --------
    >>> p = [[0.2, 0.8], [0.4, 0.6]]
    >>> round(calibration_error([1, 0], p, n_bins=10, norm="l2"), 4)  # sqrt(0.02 + 0.18)
    0.4472
    """
    return error_from_stats(reliability_stats(labels, probs, **options), norm)


def ece(labels: object, probs: object = None, **options: Unpack[_EqualWidth]) -> float:
    """Expected calibration error with ``n_bins`` equal-width bins (Guo et al. 2017).

    Parameters
    ----------
    labels, probs, logits, sample_weight, n_bins, mode, convention
        As in :func:`reliability_stats` (equal-width bins).

    Returns
    -------
    float
        ``sum_b w_b |acc_b - conf_b|``, a fraction in [0, 1].

    Examples
    --------
    >>> round(ece([1, 0], probs=[[0.2, 0.8], [0.4, 0.6]], n_bins=10), 4)
    0.4
    """
    return calibration_error(labels, probs, **options)


def aece(labels: object, probs: object = None, **options: Unpack[_Binning]) -> float:
    """Adaptive ECE: ECE with equal-mass bins; ties are never split (see calibkit.core.binning).

    Parameters
    ----------
    labels, probs, logits, sample_weight, n_bins, mode
        As in :func:`reliability_stats` (equal-mass bins).

    Returns
    -------
    float
        The adaptive ECE, a fraction in [0, 1].

    Examples
    --------
    >>> round(aece([1, 0], probs=[[0.2, 0.8], [0.4, 0.6]], n_bins=2), 4)  # one sample a bin
    0.4
    """
    return calibration_error(labels, probs, scheme="equal_mass", **options)


@fill_doc(signature=_SIGNATURE)
def mce(labels: object, probs: object = None, **options: Unpack[_EqualWidth]) -> float:
    """Maximum calibration error: the largest gap over non-empty equal-width bins.

    {signature}
        ``max_b |acc_b - conf_b|``, a fraction in [0, 1].

    Examples
    --------
    >>> round(mce([1, 0], probs=[[0.2, 0.8], [0.4, 0.6]], n_bins=10), 4)
    0.6
    """
    return calibration_error(labels, probs, norm="max", **options)


@fill_doc(signature=_SIGNATURE)
def rmsce(labels: object, probs: object = None, **options: Unpack[_EqualWidth]) -> float:
    """Root-mean-square calibration error (l2 norm) with equal-width bins.

    {signature}
        ``sqrt(sum_b w_b (acc_b - conf_b)^2)``.

    Examples
    --------
    >>> round(rmsce([1, 0], probs=[[0.2, 0.8], [0.4, 0.6]], n_bins=10), 4)  # sqrt(0.2)
    0.4472
    """
    return calibration_error(labels, probs, norm="l2", **options)


def debiased_ece(labels: object, probs: object = None, **options: Unpack[_Schemed]) -> float:
    """Debiased l2 calibration error (Kumar et al. 2019, "Verified uncertainty calibration").

    The debiased RMSCE (key ``ece_debiased``, labelled "Debiased RMSCE"): each bin's squared
    gap ``(acc - conf) ** 2`` less the sampling variance of its accuracy,
    ``acc (1 - acc) / (n - 1)``, weighted by the bin's share, then the square root. It
    estimates the :func:`rmsce` (an L2, root-mean-square quantity) without the upward bias
    of the plug-in squared error, so it is read beside the RMSCE, not the ECE: a root mean
    square is never below the mean, so it often lies above the ECE.

    Parameters
    ----------
    labels, probs, logits, sample_weight, n_bins, scheme, mode
        As in :func:`reliability_stats`.

    Returns
    -------
    float
        The debiased error (formula in :func:`~calibkit.metrics.bin_errors.errors_from_sums`).

    Examples
    --------
    >>> round(debiased_ece([0, 0, 0], probs=[[0.5, 0.5]] * 3, n_bins=1), 4)
    0.5
    """
    return debiased_from_stats(reliability_stats(labels, probs, **options))


def sce(
    labels: object,
    probs: object = None,
    *,
    logits: object = None,
    n_bins: int = 15,
    sample_weight: object = None,
) -> float:
    """Static calibration error (Nixon et al. 2019): classwise ECE averaged over classes.

    For every class k, all N probabilities ``p_k`` are binned (equal width, ``[a, b)``) and
    compared with the frequency of ``y = k`` in the bin: ``SCE = 1/K sum_k sum_b (n_kb / N)
    |freq_kb - conf_kb|``.

    Parameters
    ----------
    labels, probs, logits, sample_weight
        The outputs (see the module docstring).
    n_bins : int
        Number of equal-width bins per class.

    Returns
    -------
    float
        The static calibration error, a fraction.

    Examples
    --------
    >>> sce([0, 1], probs=[[1.0, 0.0], [0.0, 1.0]])
    0.0
    >>> round(sce([1, 0], probs=[[0.2, 0.8], [0.4, 0.6]], n_bins=10), 4)  # (0.2 + 0.6) * 2 / 4
    0.4
    """
    out = as_outputs(labels, probs, logits=logits)
    n_bins = check_n_bins(n_bins)
    w = check_weight(sample_weight, out.n_samples)
    return sce_from_index(sce_index(out.probs, n_bins), out.probs, out.labels, n_bins, w)
