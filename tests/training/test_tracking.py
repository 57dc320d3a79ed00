"""Tests of per-epoch tracking: values equal independent computations."""

from __future__ import annotations

import numpy as np
import pytest

from calibkit.metrics import ece
from calibkit.training import TRACKED, TRACKING_TEMPERATURES, track_split


def _problem(seed: int = 0, n: int = 400, k: int = 4) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 4.0  # overconfident logits
    y = np.argmax(z / 4.0 + rng.gumbel(size=z.shape), axis=1)
    return z, y


def _log_softmax(z: np.ndarray) -> np.ndarray:
    m = z.max(axis=1, keepdims=True)
    return z - m - np.log(np.exp(z - m).sum(axis=1, keepdims=True))


def test_temperature_grid() -> None:
    t = TRACKING_TEMPERATURES
    assert t.shape == (1000,)
    assert t[0] == 0.01
    assert t[-1] == 10.0
    assert np.allclose(np.diff(t), 0.01)
    assert 1.0 in t
    assert np.all(np.diff(t) > 0)


@pytest.mark.parametrize("seed", [0, 1])
def test_values_equal_independent_computations(seed: int) -> None:
    z, y = _problem(seed)
    row = track_split(z, y, n_bins=10)
    assert tuple(row) == TRACKED
    assert all(isinstance(v, float) for v in row.values())
    assert row["accuracy"] == pytest.approx(np.mean(z.argmax(1) == y), abs=1e-12)
    expected_nll = -np.mean(_log_softmax(z)[np.arange(len(y)), y])
    assert row["nll"] == pytest.approx(expected_nll, rel=1e-9)
    assert row["ece"] == pytest.approx(ece(y, logits=z, n_bins=10), abs=1e-12)

    best_t = row["optimal_temperature"]
    assert best_t in TRACKING_TEMPERATURES
    # ECE over a subsample of the grid, including the argmin found, computed directly
    i_best = int(np.flatnonzero(best_t == TRACKING_TEMPERATURES)[0])
    idx = sorted({*range(0, 1000, 37), 99, i_best, max(i_best - 1, 0), min(i_best + 1, 999)})
    direct = {i: ece(y, logits=z / TRACKING_TEMPERATURES[i], n_bins=10) for i in idx}
    assert row["optimal_ece"] == pytest.approx(direct[i_best], abs=1e-9)
    assert row["optimal_ece"] <= min(direct.values()) + 1e-9
    assert direct[99] == pytest.approx(row["ece"], abs=1e-9)  # T = 1
    assert row["optimal_ece"] <= row["ece"]
    assert best_t > 1.0  # overconfident logits want softening
    assert row["optimal_ece"] < row["ece"] - 0.05


def test_accepts_float32_logits_and_perfect_case() -> None:
    z = np.array([[9.0, 0.0], [0.0, 9.0], [9.0, 0.0], [0.0, 9.0]], dtype=np.float32)
    row = track_split(z, np.array([0, 1, 0, 1]))
    assert row["accuracy"] == 1.0
    # all correct: the lowest ECE is at the sharpest temperature of the grid
    assert row["optimal_temperature"] == 0.01
    assert row["optimal_ece"] == pytest.approx(0.0, abs=1e-12)
    assert row["ece"] == pytest.approx(1.0 - 1.0 / (1.0 + np.exp(-9.0)), abs=1e-6)


def test_n_bins_is_used() -> None:
    rng = np.random.default_rng(3)
    z = rng.normal(size=(300, 3))
    p = np.exp(_log_softmax(z))
    y = (rng.random(300)[:, None] > np.cumsum(p, axis=1)).sum(axis=1)  # y ~ softmax(z)
    a, b = track_split(z, y, n_bins=5), track_split(z, y, n_bins=15)
    assert a["ece"] == pytest.approx(ece(y, logits=z, n_bins=5), abs=1e-12)
    assert b["ece"] == pytest.approx(ece(y, logits=z, n_bins=15), abs=1e-12)
    assert abs(a["ece"] - b["ece"]) > 1e-4
    assert a["accuracy"] == b["accuracy"]
    assert a["nll"] == b["nll"]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tracking_reads_the_accumulator_with_the_functions_numbers(dtype: type) -> None:
    from calibkit.metrics import accuracy, ece, nll

    rng = np.random.default_rng(3)
    z = (rng.normal(size=(3001, 7)) * 3).astype(dtype)
    y = rng.integers(0, 7, 3001)
    row = track_split(z, y, n_bins=15)
    # the same per-sample values and bin sums, summed in the same order: train.json
    # histories written before keep their digits, so equality is exact
    assert row["accuracy"] == accuracy(y, logits=z)
    assert row["nll"] == nll(y, logits=z)
    assert row["ece"] == ece(y, logits=z, n_bins=15)


def test_tracking_reads_a_given_accumulator_updated_batch_by_batch() -> None:
    from calibkit.core.errors import InputError
    from calibkit.metrics import StreamingCalibration

    z, y = _problem(seed=5, n=900)
    metric = StreamingCalibration(n_bins=10)
    for lo in range(0, 900, 128):  # uneven last batch
        metric.update(y[lo : lo + 128], logits=z[lo : lo + 128])
    got, want = track_split(z, y, n_bins=10, metric=metric), track_split(z, y, n_bins=10)
    assert list(got) == list(TRACKED)
    for name in TRACKED:
        # batch sums added in another order than one sum over all rows: float64 rounding
        assert got[name] == pytest.approx(want[name], rel=1e-12, abs=1e-15), name
    with pytest.raises(InputError, match=r"^metric: expected n_bins=15"):
        track_split(z, y, n_bins=15, metric=metric)
