"""The debiased marginal (class-wise) calibration error of Kumar, Liang & Ma (2019).

"Verified uncertainty calibration" measures the squared l2 calibration error of every class
``k`` separately: bin the probabilities ``p_k``, and in every bin ``b`` (weight ``w_b``,
``n_b`` samples, mean probability ``conf_b``, frequency of ``y = k`` ``acc_b``) remove the
plug-in estimate's bias,

    ``E_k = sum_b w_b [(acc_b - conf_b)^2 - acc_b (1 - acc_b) / (n_b - 1)]``

(bins of fewer than 2 samples count 0; the formula is that of
:func:`calibkit.metrics.bin_errors.errors_from_sums`, whose top-label version is
:func:`calibkit.metrics.debiased_ece`). The marginal error is
``sqrt(mean_k max(E_k, 0))``, as in the authors' ``get_calibration_error(probs, labels)``
(``mode="marginal"``, ``p=2``, ``debias=True``).

Bins: ``"equal_mass"`` (their choice for a model with continuous outputs, 15 bins),
``"equal_width"`` (:mod:`calibkit.core.binning`'s rules), or ``"distinct"``: one bin per
distinct value of ``p_k``, the estimator for a *binned* model such as
:class:`calibkit.calibrators.ScalingBinning`, whose error it then estimates without the
binning's own bias (the authors' ``get_binning_ce``).

>>> round(debiased_marginal_ce([0, 1, 0, 1], probs=[[0.5, 0.5]] * 4, n_bins=1), 6)
0.0
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from calibkit.core.binning import bin_index, check_n_bins
from calibkit.core.errors import InputError
from calibkit.core.outputs import as_outputs
from calibkit.metrics.bin_errors import errors_from_sums
from calibkit.metrics.samples import F64

DebiasedScheme = Literal["equal_mass", "equal_width", "distinct"]
SCHEMES: tuple[str, ...] = ("equal_mass", "equal_width", "distinct")


def class_squared_error(score: F64, outcome: F64, n_bins: int, scheme: DebiasedScheme) -> float:
    """``max(E_k, 0)`` of one class's probabilities ``score`` (see the module docstring)."""
    if scheme == "distinct":
        idx = np.unique(score, return_inverse=True)[1].reshape(-1)
        width = int(idx.max()) + 1
    else:
        idx, _, width = bin_index(score, n_bins, scheme=scheme)
    counts = np.bincount(idx, minlength=width).astype(np.float64)
    conf = np.bincount(idx, weights=score, minlength=width).astype(np.float64)
    acc = np.bincount(idx, weights=outcome, minlength=width).astype(np.float64)
    return float(errors_from_sums(counts, conf, acc)["debiased"]) ** 2


def debiased_marginal_ce(
    labels: object,
    probs: object = None,
    *,
    logits: object = None,
    n_bins: int = 15,
    scheme: DebiasedScheme = "equal_mass",
) -> float:
    """Debiased marginal l2 calibration error (Kumar et al. 2019; module docstring).

    Parameters
    ----------
    labels, probs, logits
        The outputs, as for every metric (exactly one of ``probs`` and ``logits``; a 1-D
        ``probs`` is ``P(y = 1)`` of a binary problem, whose two classes are then both
        counted, as for a two-column ``probs``).
    n_bins : int
        Bins per class (ignored with ``scheme="distinct"``).
    scheme : {"equal_mass", "equal_width", "distinct"}
        How each class's probabilities are binned.

    Returns
    -------
    float
        ``sqrt(mean_k max(E_k, 0))``, a probability-scale error (not a percentage).

    Examples
    --------
    >>> labels = [0, 0, 1, 1]  # two bins of two; class 1: acc (0, 1), conf (0.25, 0.75)
    >>> probs = [[0.8, 0.2], [0.7, 0.3], [0.3, 0.7], [0.2, 0.8]]
    >>> round(debiased_marginal_ce(labels, probs=probs, n_bins=2), 6)  # 0.25^2 - 0 per bin
    0.25
    """
    out = as_outputs(labels, probs, logits=logits)
    n_bins = check_n_bins(n_bins)
    if scheme not in SCHEMES:
        raise InputError("scheme", "one of " + ", ".join(SCHEMES), repr(scheme))
    p = out.probs
    errors = [
        class_squared_error(p[:, k], (out.labels == k).astype(np.float64), n_bins, scheme)
        for k in range(out.n_classes)
    ]
    return float(np.sqrt(np.mean(errors)))
