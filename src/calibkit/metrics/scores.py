"""Proper scores and summary statistics: accuracy, NLL, Brier, predictive entropy.

Each takes ``labels`` and exactly one of ``probs`` or ``logits``, plus optional
``sample_weight``; all return a float64 Python float.

>>> accuracy([0, 1, 1], probs=[[0.9, 0.1], [0.4, 0.6], [0.7, 0.3]])
0.6666666666666666
>>> round(nll([0], probs=[[0.5, 0.5]]), 6)
0.693147
>>> brier([0], probs=[[1.0, 0.0]])
0.0
"""

from __future__ import annotations

from calibkit.core.outputs import as_outputs
from calibkit.metrics.samples import (
    brier_per_sample,
    check_weight,
    entropy_per_sample,
    nll_per_sample,
    weighted_mean,
)


def accuracy(
    labels: object, probs: object = None, *, logits: object = None, sample_weight: object = None
) -> float:
    """Fraction of samples whose argmax class equals the label."""
    out = as_outputs(labels, probs, logits=logits)
    return weighted_mean(out.correct, check_weight(sample_weight, out.n_samples))


def nll(
    labels: object, probs: object = None, *, logits: object = None, sample_weight: object = None
) -> float:
    """Mean negative log-likelihood of the labels (nats), from log-softmax for logits."""
    out = as_outputs(labels, probs, logits=logits)
    return weighted_mean(nll_per_sample(out), check_weight(sample_weight, out.n_samples))


def brier(
    labels: object, probs: object = None, *, logits: object = None, sample_weight: object = None
) -> float:
    """Multiclass Brier score: mean of ``sum_k (p_k - [y = k])^2``, in [0, 2].

    For two classes this is twice scikit-learn's ``brier_score_loss`` (which scores only
    the positive class).
    """
    out = as_outputs(labels, probs, logits=logits)
    return weighted_mean(brier_per_sample(out), check_weight(sample_weight, out.n_samples))


def entropy(
    labels: object, probs: object = None, *, logits: object = None, sample_weight: object = None
) -> float:
    """Mean predictive entropy in nats (labels are checked but do not enter)."""
    out = as_outputs(labels, probs, logits=logits)
    return weighted_mean(entropy_per_sample(out), check_weight(sample_weight, out.n_samples))
