"""Murphy's decomposition of the Brier score: reliability, resolution and uncertainty.

Murphy (1973, "A new vector partition of the probability score", J. Appl. Meteorology)
splits the Brier score of binned forecasts into three parts. calibkit takes the
multiclass, one-vs-rest form: each class ``k`` is a binary forecast ``p_ik`` of the event
``o_ik = 1[y_i = k]``, binned into the equal-width bins of :mod:`calibkit.core.binning`
(the bins of every other binned metric), and the parts are summed over the classes, as the
multiclass Brier score of :func:`calibkit.metrics.brier` sums its classes. With, per class
and bin ``b``, the weight ``w_b`` (fraction of samples), the mean forecast ``f_b``, the
event's frequency ``o_b`` and its overall frequency ``o_bar``:

- reliability ``REL = sum_k sum_b w_b (f_b - o_b)^2`` (lower is better; 0: calibrated
  in every class and bin, like a squared classwise ECE);
- resolution ``RES = sum_k sum_b w_b (o_b - o_bar)^2`` (higher is better: how far the
  bins' frequencies move away from the base rate);
- uncertainty ``UNC = sum_k o_bar (1 - o_bar)`` (a property of the labels alone).

``Brier = REL - RES + UNC`` holds exactly when the forecasts are constant within each bin
(e.g. outputs of histogram binning with the same bins); otherwise the difference,
``residual``, is the within-bin terms ``sum_k sum_b w_b (var_b(p) - 2 cov_b(p, o))``.

This is not :func:`~calibkit.metrics.decomposition.score_decomposition`: there the
calibration part is what an in-sample temperature removes from the score, with no bins;
here it is binned and needs no fit. For a 1-D ``probs`` (``P(y = 1)``) both classes count,
so the parts are twice those of the one-event binary form, as the Brier score is.

Two samples with forecast (0.8, 0.2), labels 0 and 1: class 0 has f = 0.8, o = 0.5 in
one bin; REL = 2 * 0.3^2 = 0.18, RES = 0, UNC = 2 * 0.25, and Brier = 0.68 = REL + UNC.

>>> d = brier_decomposition([0, 1], probs=[[0.8, 0.2], [0.8, 0.2]])
>>> round(d.reliability, 6), d.resolution, d.uncertainty, round(d.brier, 6)
(0.18, 0.0, 0.5, 0.68)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calibkit.core.binning import bin_stats, check_n_bins
from calibkit.core.outputs import as_outputs
from calibkit.metrics.parts import part_metric
from calibkit.metrics.samples import brier_per_sample, check_weight, weighted_mean


@dataclass(frozen=True)
class BrierDecomposition:
    """The three parts of the binned, one-vs-rest Brier score (see the module docstring).

    Attributes
    ----------
    reliability, resolution, uncertainty : float
        The parts, summed over the classes.
    brier : float
        The Brier score of the outputs (summed over classes, in [0, 2]).
    residual : float
        ``brier - (reliability - resolution + uncertainty)``: 0 when forecasts are constant
        within bins.
    n_bins : int
        Number of equal-width bins per class.

    Examples
    --------
    >>> probs = [[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.3, 0.7]]
    >>> parts = brier_decomposition([0, 1, 1, 1], probs=probs)
    >>> parts.reliability, parts.resolution, parts.uncertainty, parts.brier, parts.residual
    (0.25, 0.375, 0.375, 0.25, 0.0)
    """

    reliability: float
    resolution: float
    uncertainty: float
    brier: float
    residual: float
    n_bins: int


def brier_decomposition(
    labels: object,
    probs: object = None,
    *,
    logits: object = None,
    n_bins: int = 15,
    sample_weight: object = None,
) -> BrierDecomposition:
    """Murphy's reliability, resolution and uncertainty of the multiclass Brier score.

    Parameters
    ----------
    labels, probs, logits, sample_weight
        The outputs, as for every metric.
    n_bins : int
        Equal-width bins per class (the bins of :func:`~calibkit.metrics.ece`).

    Returns
    -------
    BrierDecomposition
        The parts, the Brier score and the residual.

    Examples
    --------
    >>> d = brier_decomposition([0, 0, 1, 1], probs=[[0.9, 0.1]] * 2 + [[0.3, 0.7]] * 2)
    >>> round(d.reliability - d.resolution + d.uncertainty, 6) == round(d.brier, 6)
    True
    """
    n_bins = check_n_bins(n_bins)
    out = as_outputs(labels, probs, logits=logits)
    w = check_weight(sample_weight, out.n_samples)
    rel = res = unc = 0.0
    for k in range(out.n_classes):
        stats = bin_stats(out.probs[:, k], (out.labels == k).astype(np.float64), n_bins, weight=w)
        full = stats.nonempty
        weights, f, o = stats.weights[full], stats.mean_confidence[full], stats.accuracy[full]
        base = float(stats.accuracy_sum.sum() / stats.total)
        rel += float(weights @ (f - o) ** 2)
        res += float(weights @ (o - base) ** 2)
        unc += base * (1.0 - base)
    brier = weighted_mean(brier_per_sample(out), w)
    return BrierDecomposition(rel, res, unc, brier, brier - (rel - res + unc), n_bins)


#: Reliability (lower is better), resolution (higher is better) and uncertainty.
brier_reliability = part_metric(brier_decomposition, "reliability", "brier_reliability")
brier_resolution = part_metric(brier_decomposition, "resolution", "brier_resolution")
brier_uncertainty = part_metric(brier_decomposition, "uncertainty", "brier_uncertainty")

_PART_EXAMPLE = """

Examples
--------
>>> probs = [[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.3, 0.7]]
>>> round({name}([0, 1, 1, 1], probs=probs), 6)
{value}
"""
for _metric, _value in (
    (brier_reliability, 0.25),
    (brier_resolution, 0.375),
    (brier_uncertainty, 0.375),
):
    _metric.__doc__ = (_metric.__doc__ or "") + _PART_EXAMPLE.format(
        name=_metric.__name__, value=_value
    )
#: The parts' examples, run as doctests (their functions are made, not written, here).
__test__ = {m.__name__: m.__doc__ for m in (brier_reliability, brier_resolution, brier_uncertainty)}
