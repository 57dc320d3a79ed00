"""CalibrationMetrics: batch accumulation equals the one-shot suite, exactly."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from calibkit.core.errors import InputError
from calibkit.core.outputs import as_outputs
from calibkit.metrics import METRIC_NAMES, CalibrationMetrics
from calibkit.metrics.suite import MetricSuite
from tests.metrics import reference as ref


def one_shot(labels: np.ndarray, probs: np.ndarray, **kw: object) -> dict[str, float]:
    return MetricSuite.from_outputs(as_outputs(labels, probs=probs), **kw).compute()  # type: ignore[arg-type]


@pytest.mark.parametrize(("k", "n_bins"), [(2, 15), (7, 10)])
def test_batches_equal_one_shot(k: int, n_bins: int) -> None:
    labels, probs = ref.overconfident_data(3000, k, seed=k)
    acc = CalibrationMetrics(n_bins=n_bins)
    for lo, hi in ((0, 1), (1, 700), (700, 701), (701, 3000)):  # uneven, incl. one-row batches
        acc.update(labels[lo:hi], probs=probs[lo:hi])
    assert acc.n_samples == 3000
    got, expected = acc.compute(), one_shot(labels, probs, n_bins=n_bins)
    assert list(got) == list(METRIC_NAMES)
    for name in METRIC_NAMES:
        assert got[name] == pytest.approx(expected[name], abs=1e-12), name


def test_logits_tensors_and_mixed_batches() -> None:
    rng = np.random.default_rng(3)
    z = rng.normal(size=(1200, 4)) * 3
    labels = rng.integers(0, 4, 1200)
    probs = np.exp(z - z.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    acc = CalibrationMetrics()
    acc.update(labels[:400], logits=z[:400])
    acc.update(torch.from_numpy(labels[400:800]), logits=torch.from_numpy(z[400:800]))
    acc.update(labels[800:], probs=probs[800:])
    got, expected = acc.compute(), one_shot(labels, probs)
    for name in METRIC_NAMES:
        assert got[name] == pytest.approx(expected[name], abs=1e-12), name


def test_positive_class_mode() -> None:
    rng = np.random.default_rng(4)
    p = rng.random(900)
    labels = (rng.random(900) < p).astype(np.int64)
    acc = CalibrationMetrics(mode="positive_class")
    for lo in range(0, 900, 300):
        acc.update(labels[lo : lo + 300], probs=p[lo : lo + 300])
    expected = one_shot(labels, p, mode="positive_class")
    got = acc.compute()
    for name in METRIC_NAMES:
        assert got[name] == pytest.approx(expected[name], abs=1e-12), name


def test_reset_and_errors() -> None:
    acc = CalibrationMetrics(n_bins=5)
    with pytest.raises(InputError, match=r"^CalibrationMetrics: expected at least one update"):
        acc.compute()
    acc.update([0], probs=[[0.6, 0.4]])
    with pytest.raises(InputError, match=r"^probs/logits: expected 2 columns as in earlier"):
        acc.update([0], probs=[[0.6, 0.2, 0.2]])
    assert acc.n_samples == 1  # the rejected batch left no trace
    acc.reset()
    assert acc.n_samples == 0
    with pytest.raises(InputError, match=r"^CalibrationMetrics"):
        acc.compute()
    with pytest.raises(InputError, match=r"^n_bins"):
        CalibrationMetrics(n_bins=0)


def test_failed_first_update_leaves_no_state() -> None:
    acc = CalibrationMetrics(mode="positive_class")
    with pytest.raises(InputError, match=r"^mode"):
        acc.update([0], probs=[[0.5, 0.3, 0.2]])  # 3 classes cannot be positive-class
    acc.update([1, 0], probs=[0.9, 0.2])  # a binary batch is still accepted
    assert acc.compute()["accuracy"] == 1.0
