"""Per-sample quantities shared by the metric functions and the metric suite.

Every metric is a (weighted) average of these, so sample weights give exact bootstrap
replicates without copying data: a replicate is a vector of multinomial counts.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from calibkit.core.binning import MODES as MODES
from calibkit.core.binning import Mode as Mode
from calibkit.core.docs import fill_doc
from calibkit.core.errors import InputError
from calibkit.core.outputs import ClassifierOutputs, check_labels, log_softmax64, to_numpy

F64 = npt.NDArray[np.float64]
#: Entries per block of :func:`probs_and_scores`: 256 KB float64 temporaries, which the
#: allocator recycles (at 2 MB each block's were new pages: 0.7-1.1 s of page faults at
#: 50,000 x 1,000 on the benchmark machine, against 0.03-0.45 s).
_BLOCK = 1 << 15


#: The Parameters section of the per-sample scores.
_PARAMETERS = """Parameters
----------
outputs : ClassifierOutputs
    Validated outputs."""
#: The Parameters and Returns sections of the per-sample terms (nll, brier, entropy).
_PER_SAMPLE = f"""{_PARAMETERS}

Returns
-------
ndarray of shape (N,)
    The term of each sample."""


def calibration_target(outputs: ClassifierOutputs, mode: Mode = "top_label") -> tuple[F64, F64]:
    """The confidence and the outcome whose agreement a calibration metric measures.

    ``top_label``: confidence = max probability, outcome = 1 if the prediction is correct.
    ``positive_class`` (binary problems only): confidence = P(y = 1), outcome = 1 if y = 1.

    Parameters
    ----------
    outputs : ClassifierOutputs
        Validated outputs.
    mode : {"top_label", "positive_class"}
        Which confidence and outcome (see :mod:`calibkit.core.binning`).

    Returns
    -------
    conf, outcome : ndarray of shape (N,)
        Confidences and 0/1 outcomes, float64.

    Examples
    --------
    >>> from calibkit.core.outputs import as_outputs
    >>> out = as_outputs([1, 0], probs=[[0.2, 0.8], [0.4, 0.6]])
    >>> [c.tolist() for c in calibration_target(out)]
    [[0.8, 0.6], [1.0, 0.0]]
    >>> [c.tolist() for c in calibration_target(out, "positive_class")]
    [[0.8, 0.6], [1.0, 0.0]]
    """
    if mode == "top_label":
        return outputs.confidence, outputs.correct
    if mode == "positive_class":
        if outputs.n_classes != 2:
            raise InputError(
                "mode",
                "'top_label' for a problem with more than 2 classes",
                f"'positive_class' with {outputs.n_classes} classes",
            )
        return outputs.probs[:, 1].copy(), (outputs.labels == 1).astype(np.float64)
    raise InputError("mode", "one of " + ", ".join(MODES), repr(mode))


def check_weight(sample_weight: object, n: int) -> F64 | None:
    """Validate optional non-negative sample weights (one per sample, not all zero).

    Parameters
    ----------
    sample_weight : array-like of shape (n,) or None
        The weights.
    n : int
        Number of samples.

    Returns
    -------
    ndarray of shape (n,) or None
        The weights as float64 (None stays None).

    Examples
    --------
    >>> check_weight([1, 2], 2).tolist()
    [1.0, 2.0]
    """
    if sample_weight is None:
        return None
    w = np.asarray(to_numpy(sample_weight, "sample_weight"), dtype=np.float64)
    if w.shape != (n,):
        raise InputError("sample_weight", f"shape ({n},)", f"shape {w.shape}")
    expected = "finite non-negative weights, not all zero"
    if not np.all(np.isfinite(w)):
        raise InputError("sample_weight", expected, "NaN or infinity")
    if w.min() < 0:
        raise InputError("sample_weight", expected, f"a weight of {w.min():.6g}")
    if w.sum() <= 0:
        raise InputError("sample_weight", expected, "all zero")
    return w


def weighted_mean(values: F64, weight: F64 | None) -> float:
    """Mean of ``values``, weighted by ``weight`` when given (float64).

    Parameters
    ----------
    values : ndarray of shape (N,)
        Per-sample values.
    weight : ndarray of shape (N,) or None
        Sample weights (None: the plain mean).

    Returns
    -------
    float
        The (weighted) mean.

    Examples
    --------
    >>> weighted_mean(np.array([1.0, 3.0]), np.array([3.0, 1.0]))
    1.5
    """
    if weight is None:
        return float(np.mean(values, dtype=np.float64))
    return float(np.dot(values, weight) / weight.sum())


@fill_doc(parameters=_PER_SAMPLE)
def nll_per_sample(outputs: ClassifierOutputs) -> F64:
    """``-log p(y_i)`` in nats; a probability of exactly 0 counts as ``-log(tiny)`` (about 708).

    {parameters}

    Examples
    --------
    >>> from calibkit.core.outputs import as_outputs
    >>> out = as_outputs([1, 0], probs=[[0.2, 0.8], [0.4, 0.6]])
    >>> np.round(nll_per_sample(out), 4).tolist()  # -log 0.8, -log 0.4
    [0.2231, 0.9163]
    """
    lp = outputs.log_probs
    out: F64 = -np.take_along_axis(lp, outputs.labels[:, None], axis=1)[:, 0]
    return out


@fill_doc(parameters=_PER_SAMPLE)
def brier_per_sample(outputs: ClassifierOutputs) -> F64:
    """``sum_k (p_k - [y = k])^2``, in [0, 2] (the multiclass Brier score; not halved).

    {parameters}

    Examples
    --------
    >>> from calibkit.core.outputs import as_outputs
    >>> out = as_outputs([1, 0], probs=[[0.2, 0.8], [0.4, 0.6]])
    >>> np.round(brier_per_sample(out), 4).tolist()  # 0.2^2 + 0.2^2, 0.6^2 + 0.6^2
    [0.08, 0.72]
    """
    p = outputs.probs
    p_true = np.take_along_axis(p, outputs.labels[:, None], axis=1)[:, 0]
    out: F64 = np.einsum("ij,ij->i", p, p) - 2.0 * p_true + 1.0
    return out


@fill_doc(parameters=_PER_SAMPLE)
def entropy_per_sample(outputs: ClassifierOutputs) -> F64:
    """Predictive entropy ``-sum_k p_k log p_k`` in nats (``0 log 0 = 0``).

    {parameters}

    Examples
    --------
    >>> from calibkit.core.outputs import as_outputs
    >>> out = as_outputs([0, 1], probs=[[0.5, 0.5], [0.5, 0.5]])
    >>> np.round(entropy_per_sample(out), 4).tolist()  # log 2 each
    [0.6931, 0.6931]
    """
    p = outputs.probs
    lp = outputs.log_probs
    finite = lp if p.min(initial=1.0) > 0 else np.where(p > 0, lp, 0.0)  # the same numbers
    out: F64 = -np.einsum("ij,ij->i", p, finite)
    return out


@fill_doc(parameters=_PARAMETERS)
def per_sample_scores(outputs: ClassifierOutputs) -> dict[str, F64]:
    """The per-sample NLL, Brier score and entropy, keyed by their metric names.

    {parameters}

    Returns
    -------
    dict of str to ndarray of shape (N,)
        ``"nll"``, ``"brier"`` and ``"entropy"``, each averaged into the metric of its name.

    Examples
    --------
    >>> from calibkit.core.outputs import as_outputs
    >>> out = as_outputs([1, 0], probs=[[0.2, 0.8], [0.4, 0.6]])
    >>> {k: np.round(v, 4).tolist() for k, v in per_sample_scores(out).items()}
    {'nll': [0.2231, 0.9163], 'brier': [0.08, 0.72], 'entropy': [0.5004, 0.673]}
    """
    return {
        "nll": nll_per_sample(outputs),
        "brier": brier_per_sample(outputs),
        "entropy": entropy_per_sample(outputs),
    }


def probs_and_scores(outputs: ClassifierOutputs) -> tuple[F64, dict[str, F64]]:
    """The float64 probabilities and :func:`per_sample_scores`, by blocks of rows.

    Row by row the numbers of ``outputs.probs`` and :func:`per_sample_scores`, without
    their ``(N, K)`` float64 temporaries: the log-probabilities are never held whole.

    Parameters
    ----------
    outputs : ClassifierOutputs
        Validated outputs.

    Returns
    -------
    probs : ndarray of shape (N, K)
        The probabilities (``outputs.probs`` itself for probability inputs).
    scores : dict of str to ndarray of shape (N,)
        As :func:`per_sample_scores`.

    Examples
    --------
    >>> from calibkit.core.outputs import as_outputs
    >>> out = as_outputs([1, 0], logits=[[0.0, 1.0], [2.0, 0.0]])
    >>> p, s = probs_and_scores(out)
    >>> bool(np.array_equal(p, out.probs)), np.round(s["nll"], 4).tolist()
    (True, [0.3133, 0.1269])
    """
    n, k = outputs.n_samples, outputs.n_classes
    probs = outputs.probs if outputs.kind == "probs" else np.empty((n, k))
    scores = {name: np.empty(n) for name in ("nll", "brier", "entropy")}
    step = max(1, _BLOCK // max(k, 1))
    for start in range(0, n, step):
        rows = slice(start, start + step)
        part = ClassifierOutputs(outputs.labels[rows], outputs.scores[rows], outputs.kind)
        if outputs.kind != "probs":  # one log-softmax for both (the properties' numbers)
            part.log_probs = log_softmax64(part.scores)
            probs[rows] = part.probs = np.exp(part.log_probs)
        for name, values in per_sample_scores(part).items():
            scores[name][rows] = values
    return probs, scores


__all__ = [
    "MODES",
    "Mode",
    "brier_per_sample",
    "calibration_target",
    "check_labels",
    "check_weight",
    "entropy_per_sample",
    "nll_per_sample",
    "per_sample_scores",
    "probs_and_scores",
    "weighted_mean",
]
