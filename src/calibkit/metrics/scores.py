"""Proper scores and summary statistics: accuracy, NLL, Brier, predictive entropy, mean
confidence.

Each takes ``labels`` (``(N,)`` integers, or a :class:`~calibkit.core.outputs.ClassifierOutputs`)
and exactly one of ``probs`` or ``logits`` (``(N, K)``), plus optional non-negative
``sample_weight`` ``(N,)``; all return a float64 Python float.

>>> accuracy([0, 1, 1], probs=[[0.9, 0.1], [0.4, 0.6], [0.7, 0.3]])
0.6666666666666666
>>> round(nll([0], probs=[[0.5, 0.5]]), 6)
0.693147
>>> brier([0], probs=[[1.0, 0.0]])
0.0
"""

from __future__ import annotations

from collections.abc import Callable

from calibkit.core.docs import fill_doc
from calibkit.core.outputs import ClassifierOutputs, as_outputs
from calibkit.metrics.samples import (
    F64,
    brier_per_sample,
    check_weight,
    entropy_per_sample,
    nll_per_sample,
    weighted_mean,
)

#: The Parameters section and the return type of accuracy, nll, brier, entropy, confidence.
_SIGNATURE = """Parameters
----------
labels, probs, logits, sample_weight
    The outputs (see the module docstring).

Returns
-------
float"""


def _mean(
    per_sample: Callable[[ClassifierOutputs], F64],
    labels: object,
    probs: object,
    logits: object,
    sample_weight: object,
) -> float:
    """The (weighted) mean of ``per_sample`` over the validated outputs."""
    out = as_outputs(labels, probs, logits=logits)
    return weighted_mean(per_sample(out), check_weight(sample_weight, out.n_samples))


@fill_doc(signature=_SIGNATURE)
def accuracy(
    labels: object, probs: object = None, *, logits: object = None, sample_weight: object = None
) -> float:
    """Fraction of samples whose argmax class equals the label.

    {signature}
        The (weighted) accuracy in [0, 1].

    Examples
    --------
    >>> accuracy([1, 0], probs=[[0.2, 0.8], [0.4, 0.6]])
    0.5
    >>> accuracy([1, 0], probs=[[0.2, 0.8], [0.4, 0.6]], sample_weight=[3, 1])
    0.75
    """
    return _mean(lambda out: out.correct, labels, probs, logits, sample_weight)


@fill_doc(signature=_SIGNATURE)
def nll(
    labels: object, probs: object = None, *, logits: object = None, sample_weight: object = None
) -> float:
    """Mean negative log-likelihood of the labels (nats), from log-softmax for logits.

    {signature}
        ``mean_i -log p_i(y_i)``; a probability of exactly 0 counts as about 708.

    Examples
    --------
    >>> round(nll([0], logits=[[0.0, 0.0]]), 4)  # log 2
    0.6931
    """
    return _mean(nll_per_sample, labels, probs, logits, sample_weight)


@fill_doc(signature=_SIGNATURE)
def brier(
    labels: object, probs: object = None, *, logits: object = None, sample_weight: object = None
) -> float:
    """Multiclass Brier score: mean of ``sum_k (p_k - [y = k])^2``, in [0, 2].

    For two classes this is twice scikit-learn's ``brier_score_loss`` (which scores only
    the positive class).

    {signature}
        The Brier score (not halved).

    Examples
    --------
    >>> round(brier([1, 0], probs=[[0.2, 0.8], [0.4, 0.6]]), 4)  # (0.08 + 0.72) / 2
    0.4
    """
    return _mean(brier_per_sample, labels, probs, logits, sample_weight)


@fill_doc(signature=_SIGNATURE)
def entropy(
    labels: object, probs: object = None, *, logits: object = None, sample_weight: object = None
) -> float:
    """Mean predictive entropy in nats (labels are checked but do not enter).

    {signature}
        ``mean_i -sum_k p_ik log p_ik`` (``0 log 0 = 0``).

    Examples
    --------
    >>> round(entropy([0, 1], probs=[[0.5, 0.5], [1.0, 0.0]]), 4)  # (log 2 + 0) / 2
    0.3466
    """
    return _mean(entropy_per_sample, labels, probs, logits, sample_weight)


def top_confidence(outputs: ClassifierOutputs) -> F64:
    """Each sample's top-label confidence (its largest probability), float64.

    Parameters
    ----------
    outputs : ClassifierOutputs
        The classifier outputs.

    Returns
    -------
    ndarray of shape (N,)
        The largest probability of each row.

    Examples
    --------
    >>> from calibkit.core.outputs import as_outputs
    >>> top_confidence(as_outputs([0, 1], probs=[[0.8, 0.2], [0.4, 0.6]])).tolist()
    [0.8, 0.6]
    """
    return outputs.confidence


@fill_doc(signature=_SIGNATURE)
def confidence(
    labels: object, probs: object = None, *, logits: object = None, sample_weight: object = None
) -> float:
    """Mean top-label confidence (labels are checked but do not enter): beside the accuracy,
    how confident the model is on average.

    {signature}
        ``mean_i max_k p_ik``, in (0, 1].

    Examples
    --------
    >>> confidence([1, 0], probs=[[0.2, 0.8], [0.4, 0.6]])
    0.7
    """
    return _mean(top_confidence, labels, probs, logits, sample_weight)
