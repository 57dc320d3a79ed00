"""Accuracy, NLL, Brier and entropy against scikit-learn and scipy, and hand cases."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.stats import entropy as scipy_entropy
from sklearn.metrics import accuracy_score, brier_score_loss, log_loss

from calibkit.metrics import accuracy, brier, entropy, nll
from tests.metrics import reference as ref


def test_hand_cases() -> None:
    assert accuracy([0, 1, 1], probs=[[0.9, 0.1], [0.4, 0.6], [0.7, 0.3]]) == 2 / 3
    assert nll([0], probs=[[0.5, 0.5]]) == pytest.approx(np.log(2), abs=1e-15)
    assert brier([0], probs=[[1.0, 0.0]]) == 0.0
    assert brier([1], probs=[[1.0, 0.0]]) == 2.0  # the multiclass maximum
    assert entropy([0], probs=[[0.25] * 4]) == pytest.approx(np.log(4), abs=1e-15)
    assert entropy([0], probs=[[1.0, 0.0, 0.0]]) == 0.0  # 0 log 0 = 0


def test_probability_zero_on_the_label() -> None:
    """A probability of exactly 0 costs -log(tiny) (about 708), not infinity."""
    got = nll([1], probs=[[1.0, 0.0]])
    assert got == pytest.approx(-np.log(np.finfo(np.float64).tiny), abs=1e-12)
    assert np.isfinite(nll([1], logits=[[0.0, -1e6]]))
    assert nll([1], logits=[[0.0, -1e6]]) == pytest.approx(1e6, rel=1e-12)


@pytest.mark.parametrize("k", [2, 5, 20])
def test_vs_sklearn_and_scipy(k: int) -> None:
    labels, probs = ref.overconfident_data(3000, k, seed=k)
    w = np.random.default_rng(k).random(3000)
    onehot = np.eye(k)[labels]
    assert accuracy(labels, probs=probs) == pytest.approx(
        accuracy_score(labels, probs.argmax(axis=1)), abs=1e-15
    )
    assert nll(labels, probs=probs) == pytest.approx(
        log_loss(labels, probs, labels=np.arange(k)), abs=1e-12
    )
    assert nll(labels, probs=probs, sample_weight=w) == pytest.approx(
        log_loss(labels, probs, labels=np.arange(k), sample_weight=w), abs=1e-12
    )
    multiclass = np.mean(np.sum((probs - onehot) ** 2, axis=1))
    assert brier(labels, probs=probs) == pytest.approx(multiclass, abs=1e-13)
    assert brier(labels, probs=probs, sample_weight=w) == pytest.approx(
        brier_score_loss(labels, probs, sample_weight=w, scale_by_half=False, labels=np.arange(k)),
        abs=1e-13,
    )
    assert entropy(labels, probs=probs) == pytest.approx(
        np.mean(scipy_entropy(probs, axis=1)), abs=1e-13
    )


def test_binary_brier_is_twice_sklearn() -> None:
    rng = np.random.default_rng(3)
    p = rng.random(1000)
    labels = (rng.random(1000) < p).astype(np.int64)
    assert brier(labels, probs=p) == pytest.approx(2 * brier_score_loss(labels, p), abs=1e-14)
    assert nll(labels, probs=p) == pytest.approx(log_loss(labels, p), abs=1e-12)


def test_logits_and_probs_agree() -> None:
    rng = np.random.default_rng(4)
    z = rng.normal(size=(1000, 7)) * 4
    labels = rng.integers(0, 7, 1000)
    probs = np.exp(z - z.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    for fn in (accuracy, nll, brier, entropy):
        assert fn(labels, logits=z) == pytest.approx(fn(labels, probs=probs), abs=1e-12)
    # NLL from logits uses log-softmax: exact even where the softmax underflows
    big = np.array([[0.0, 800.0]])
    assert nll([0], logits=big) == pytest.approx(800.0, rel=1e-15)


def test_torch_inputs() -> None:
    labels, probs = ref.calibrated_data(500, 4, seed=5)
    for fn in (accuracy, nll, brier, entropy):
        expected = fn(labels, probs=probs)
        assert fn(torch.from_numpy(labels), probs=torch.from_numpy(probs)) == expected
        got32 = fn(labels, probs=torch.from_numpy(probs).float())
        assert got32 == pytest.approx(expected, rel=1e-6)
