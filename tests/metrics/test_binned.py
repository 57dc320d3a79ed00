"""Binned calibration errors: hand cases, parity with torchmetrics / netcal / sklearn, precision."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import torch
from netcal.metrics import ECE as NetcalECE
from sklearn.calibration import calibration_curve
from torchmetrics.functional.classification import (
    binary_calibration_error,
    multiclass_calibration_error,
)

from calibkit.core.binning import torchmetrics_edges
from calibkit.core.errors import InputError
from calibkit.metrics import (
    aece,
    calibration_error,
    debiased_ece,
    ece,
    mce,
    reliability_stats,
    rmsce,
    sce,
)
from tests.metrics import reference as ref

NORM_FNS = {"l1": ece, "l2": rmsce, "max": mce}


# --- hand-computed cases ------------------------------------------------------------------


def test_one_sample() -> None:
    probs = [[0.7, 0.3]]
    for fn in (ece, rmsce, mce, aece):
        assert fn([0], probs=probs) == pytest.approx(0.3, abs=1e-15)
    assert debiased_ece([0], probs=probs) == 0.0  # a bin of one sample has no variance estimate
    assert sce([0], probs=probs) == pytest.approx(0.3, abs=1e-15)


def test_all_tied() -> None:
    probs = np.tile([0.8, 0.1, 0.1], (10, 1))
    labels = [0] * 7 + [1] * 3
    for fn in (ece, rmsce, mce, aece):
        assert fn(labels, probs=probs) == pytest.approx(0.1, abs=1e-15)
    assert aece(labels, probs=probs, n_bins=4) == pytest.approx(0.1, abs=1e-15)
    # debiased: 0.1^2 - 0.7 * 0.3 / 9 < 0, so the estimate is clipped to 0
    assert debiased_ece(labels, probs=probs) == 0.0


def test_confidence_exactly_one_and_zero() -> None:
    probs = [[1.0, 0.0]] * 4
    assert ece([0, 0, 0, 1], probs=probs) == pytest.approx(0.25, abs=1e-15)
    # positive class: P(y = 1) = 0 exactly, in the first bin
    assert ece([0, 0], probs=[0.0, 0.0], mode="positive_class") == 0.0
    assert ece([1, 0], probs=[0.0, 0.0], mode="positive_class") == 0.5
    stats = reliability_stats([1, 0], probs=[0.0, 1.0], mode="positive_class", n_bins=10)
    assert stats.counts.tolist() == [1.0] + [0.0] * 8 + [1.0]


def test_confidence_on_a_bin_edge() -> None:
    """0.6 starts bin 6 of 10; 0.55 is in bin 5: two bins, not one."""
    probs = [[0.6, 0.4], [0.55, 0.45]]
    for n_bins, bin_of_06 in ((10, 6), (15, 9)):
        stats = reliability_stats([0, 1], probs=probs, n_bins=n_bins)
        assert stats.counts[bin_of_06] == 1.0
        out = ece([0, 1], probs=probs, n_bins=n_bins)
        assert out == pytest.approx(0.5 * 0.4 + 0.5 * 0.55, abs=1e-15)
    # netcal's np.linspace edge is 0.6000000000000001: 0.6 joins 0.55 in bin 5
    shared = ece([0, 1], probs=probs, n_bins=10, convention="netcal")
    assert shared == pytest.approx(abs(0.5 - 0.575), abs=1e-15)


def test_empty_bins_are_ignored() -> None:
    labels = [0, 0, 1]
    probs = [[0.95, 0.05], [0.95, 0.05], [0.55, 0.45]]
    # bins 8 (0.55, wrong) and 14 (0.95, both right); 13 empty bins in between
    assert ece(labels, probs=probs) == pytest.approx((2 * 0.05 + 0.55) / 3, abs=1e-15)
    assert mce(labels, probs=probs) == pytest.approx(0.55, abs=1e-15)
    assert rmsce(labels, probs=probs) == pytest.approx(
        np.sqrt((2 * 0.05**2 + 0.55**2) / 3), abs=1e-15
    )


def test_sce_hand_case() -> None:
    # class 0: p = 0.9 (y=0), 0.2 (y=1); class 1: p = 0.1 (y=0), 0.8 (y=1); 10 bins
    labels = [0, 1]
    probs = [[0.9, 0.1], [0.2, 0.8]]
    per_class = [(0.1 + 0.2) / 2, (0.1 + 0.2) / 2]
    assert sce(labels, probs=probs, n_bins=10) == pytest.approx(np.mean(per_class), abs=1e-15)


def test_positive_class_versus_top_label() -> None:
    """p = 0.2 (true rate 0.3) and p = 0.8 (true rate 0.9): 0.1 positive-class, 0 top-label."""
    p = np.array([0.2] * 10 + [0.8] * 10)
    labels = np.array([1] * 3 + [0] * 7 + [1] * 9 + [0])
    assert ece(labels, probs=p, mode="positive_class") == pytest.approx(0.1, abs=1e-15)
    assert ece(labels, probs=p) == pytest.approx(0.0, abs=1e-15)


def test_probability_a_hair_above_one() -> None:
    """1.0000000000000002 (netcal issue #54) passes validation and lands in the last bin."""
    probs = [[1.0000000000000002, 0.0], [0.5, 0.5]]
    stats = reliability_stats([0, 1], probs=probs, n_bins=10)
    assert stats.counts[9] == 1.0
    assert np.isfinite(ece([0, 1], probs=probs))


# --- torchmetrics' parity vector and the same data, two answers -------------------------


@pytest.mark.parametrize("convention", ["calibkit", "torchmetrics", "netcal"])
def test_torchmetrics_parity_vector(convention: str) -> None:
    labels = [0, 0, 1, 1, 1]
    p1 = [0.25, 0.25, 0.55, 0.75, 0.75]
    expected = {"l1": 0.2900, "l2": 0.2918, "max": 0.3167}
    for norm, value in expected.items():
        got = calibration_error(
            labels,
            probs=p1,
            n_bins=2,
            norm=norm,  # type: ignore[arg-type]
            mode="positive_class",
            convention=convention,  # type: ignore[arg-type]
        )
        assert round(got, 4) == value
        real = binary_calibration_error(torch.tensor(p1), torch.tensor(labels), 2, norm=norm)  # type: ignore[arg-type]
        assert got == pytest.approx(float(real), abs=1e-7)


def test_same_data_two_answers() -> None:
    """50 at 1.0 (45 right) and 50 at 0.96 (all right), 15 bins: 0.07 vs 0.03."""
    conf = np.array([1.0] * 50 + [0.96] * 50)
    labels = np.array([1] * 45 + [0] * 5 + [1] * 50)
    tm = ece(labels, probs=conf, mode="positive_class", convention="torchmetrics")
    ck = ece(labels, probs=conf, mode="positive_class")
    nc = ece(labels, probs=conf, mode="positive_class", convention="netcal")
    assert tm == pytest.approx(0.07, abs=1e-12)
    assert ck == pytest.approx(0.03, abs=1e-12)
    assert nc == pytest.approx(0.03, abs=1e-12)
    real_tm = binary_calibration_error(torch.tensor(conf), torch.tensor(labels), n_bins=15)
    assert float(real_tm) == pytest.approx(0.07, abs=1e-12)
    assert netcal_ece(conf, labels, 15) == pytest.approx(0.03, abs=1e-12)
    # the same in top-label mode (these confidences are all above 0.5)
    assert ece(labels, probs=conf, convention="torchmetrics") == pytest.approx(0.07, abs=1e-7)
    assert ece(labels, probs=conf) == pytest.approx(0.03, abs=1e-12)


# --- agreement on random inputs ---------------------------------------------------------


def netcal_ece(x: np.ndarray, y: np.ndarray, n_bins: int) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(NetcalECE(bins=n_bins).measure(x, y))


def with_edge_confidences(probs: np.ndarray, edges: np.ndarray, seed: int) -> np.ndarray:
    """Replace some rows by [e, (1 - e)/(K-1), ...] so that the top confidence sits on an edge."""
    rng = np.random.default_rng(seed)
    k = probs.shape[1]
    e = edges[edges >= 1.0 / k + 1e-3]
    rows = rng.choice(probs.shape[0], size=e.size, replace=False)
    out = probs.copy()
    out[rows] = (1 - e[:, None]) / (k - 1)
    out[rows, 0] = e
    return out


@pytest.mark.parametrize(("k", "n_bins", "dtype"), [(3, 15, np.float32), (10, 7, np.float64)])
def test_torchmetrics_multiclass_random(k: int, n_bins: int, dtype: type) -> None:
    labels, probs = ref.overconfident_data(3000, k, seed=k)
    probs = with_edge_confidences(probs, torchmetrics_edges(n_bins), seed=k).astype(dtype)
    tp, tl = torch.from_numpy(probs), torch.from_numpy(labels)
    for norm, fn in NORM_FNS.items():
        real = multiclass_calibration_error(tp, tl, k, n_bins, norm=norm)  # type: ignore[arg-type]
        got = fn(labels, probs=probs, n_bins=n_bins, convention="torchmetrics")
        assert got == pytest.approx(float(real), abs=2e-6), norm
    # logits: torchmetrics applies the softmax itself, and its float32 softmax may differ
    # from ours in the last bit, which matters only for a confidence on an edge: none here
    z: np.ndarray = (np.random.default_rng(k).normal(size=probs.shape) * 3).astype(dtype)
    real = multiclass_calibration_error(torch.from_numpy(z), tl, k, n_bins)
    got = ece(labels, logits=z, n_bins=n_bins, convention="torchmetrics")
    assert got == pytest.approx(float(real), abs=2e-6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_torchmetrics_binary_random(dtype: torch.dtype) -> None:
    rng = np.random.default_rng(7)
    p = rng.beta(0.5, 0.5, 2000)
    p[:64] = torchmetrics_edges(15, "float64")[np.arange(64) % 16]  # on float64 edges
    p[64:128] = torchmetrics_edges(15, "float32")[np.arange(64) % 16]  # on float32 edges
    t = torch.tensor(p, dtype=dtype)
    labels = (rng.random(2000) < p).astype(np.int64)
    for norm, fn in NORM_FNS.items():
        real = binary_calibration_error(t, torch.from_numpy(labels), 15, norm=norm)  # type: ignore[arg-type]
        got = fn(labels, probs=t, mode="positive_class", convention="torchmetrics")
        tol = 1e-12 if dtype == torch.float64 else 2e-6
        assert got == pytest.approx(float(real), abs=tol), norm


@pytest.mark.parametrize("k", [3, 6])
def test_netcal_multiclass_random(k: int) -> None:
    labels, probs = ref.overconfident_data(4000, k, seed=k)
    probs = with_edge_confidences(probs, np.linspace(0, 1, 11), seed=k)
    assert len(np.unique(labels)) > 2  # else netcal reads the problem as binary
    got = ece(labels, probs=probs, n_bins=10, convention="netcal")
    assert got == pytest.approx(netcal_ece(probs, labels, 10), abs=1e-12)


def test_netcal_binary_random() -> None:
    rng = np.random.default_rng(11)
    p = np.concatenate([rng.random(1500), np.linspace(0, 1, 16), [0.0, 1.0]])
    labels = (rng.random(p.size) < p**2).astype(np.int64)
    got = ece(labels, probs=p, n_bins=15, mode="positive_class", convention="netcal")
    assert got == pytest.approx(netcal_ece(p, labels, 15), abs=1e-12)


@pytest.mark.parametrize("n_bins", [5, 10, 15])
def test_sklearn_calibration_curve(n_bins: int) -> None:
    rng = np.random.default_rng(n_bins)
    p = np.concatenate([rng.random(1000), np.linspace(0, 1, n_bins + 1)])
    labels = (rng.random(p.size) < p).astype(np.int64)
    stats = reliability_stats(
        labels, probs=p, n_bins=n_bins, mode="positive_class", convention="sklearn"
    )
    prob_true, prob_pred = calibration_curve(labels, p, n_bins=n_bins)
    keep = stats.nonempty
    np.testing.assert_allclose(stats.accuracy[keep], prob_true, rtol=0, atol=1e-12)
    np.testing.assert_allclose(stats.mean_confidence[keep], prob_pred, rtol=0, atol=1e-12)


# --- against the direct float64 references ----------------------------------------------


@pytest.mark.parametrize("seed", [0, 1])
def test_ece_norms_vs_reference(seed: int) -> None:
    labels, probs = ref.overconfident_data(5000, 4, seed)
    conf, correct = probs.max(axis=1), (probs.argmax(axis=1) == labels).astype(float)
    expected = ref.binned_errors(conf, correct, ref.nominal_bins(conf, 15))
    for norm, fn in NORM_FNS.items():
        assert fn(labels, probs=probs) == pytest.approx(expected[norm], abs=1e-13)


def test_debiased_vs_reference() -> None:
    labels, probs = ref.overconfident_data(3000, 5, 2)
    conf, correct = probs.max(axis=1), (probs.argmax(axis=1) == labels).astype(float)
    expected = ref.debiased(conf, correct, ref.nominal_bins(conf, 15))
    assert expected > 0.05
    assert debiased_ece(labels, probs=probs) == pytest.approx(expected, abs=1e-13)
    # the bias correction is what brings a calibrated model's estimate down
    cal_labels, cal_probs = ref.calibrated_data(3000, 5, 2)
    assert debiased_ece(cal_labels, probs=cal_probs) < rmsce(cal_labels, probs=cal_probs)


def test_sce_vs_per_class_loop() -> None:
    labels, probs = ref.overconfident_data(3000, 6, 4)
    probs[:10, :] = 0.0  # probabilities exactly 0 and 1
    probs[:10, 2] = 1.0
    for n_bins in (10, 15):
        expected = ref.sce(probs, labels, n_bins)
        assert sce(labels, probs=probs, n_bins=n_bins) == pytest.approx(expected, abs=1e-13)


def test_aece_equal_mass_bins() -> None:
    """Distinct confidences: 15 bins of exactly 200 samples each, by rank."""
    labels, probs = ref.overconfident_data(3000, 3, 5)
    conf, correct = probs.max(axis=1), (probs.argmax(axis=1) == labels).astype(float)
    assert np.unique(conf).size == conf.size
    idx = np.empty(3000, dtype=np.int64)
    idx[np.argsort(conf)] = np.arange(3000) // 200
    expected = ref.binned_errors(conf, correct, idx)["l1"]
    assert aece(labels, probs=probs) == pytest.approx(expected, abs=1e-13)
    stats = reliability_stats(labels, probs=probs, scheme="equal_mass")
    assert stats.counts.tolist() == [200.0] * 15
    assert np.all(np.diff(stats.edges) > 0)


def test_logits_and_probs_agree() -> None:
    rng = np.random.default_rng(8)
    z = rng.normal(size=(2000, 5)) * 3
    labels = rng.integers(0, 5, 2000)
    probs = np.exp(z - z.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    for fn in (ece, rmsce, mce, aece, debiased_ece, sce):
        assert fn(labels, logits=z) == pytest.approx(fn(labels, probs=probs), abs=1e-12)


def test_torchmetrics_dtype_follows_binary_input() -> None:
    """0.3 (float64) is below torch's float64 edge 0.30000000000000004: bin 2, not 3."""
    labels = [1, 0]
    p64 = np.array([0.3, 0.25])
    both_in_bin_2 = abs(0.5 - 0.275)
    assert mce(
        labels, probs=p64, n_bins=10, mode="positive_class", convention="torchmetrics"
    ) == pytest.approx(both_in_bin_2, abs=1e-15)
    apart = max(0.7, 0.25)  # float32: 0.3f equals the float32 edge, bin 3
    got32 = mce(
        labels,
        probs=p64.astype(np.float32),
        n_bins=10,
        mode="positive_class",
        convention="torchmetrics",
    )
    assert got32 == pytest.approx(apart, abs=1e-7)


# --- the float64 claim at a million samples ---------------------------------------------


def test_float64_accuracy_at_a_million() -> None:
    """1,000,000 x 10 float32 probabilities: exact to 1e-9 against a float64 reference.

    Contrast (documented, not a calibkit property): torchmetrics sums its bins in float32
    and is off by more than 1e-5 on the same input under its own bin rule.
    """
    rng = np.random.default_rng(0)
    n, k = 1_000_000, 10
    z = rng.normal(size=(n, k)).astype(np.float32) * np.float32(10.0)  # a confident model
    p32 = torch.softmax(torch.from_numpy(z), dim=1).numpy()
    labels = rng.integers(0, k, n)
    p64 = p32.astype(np.float64)
    conf, correct = p64.max(axis=1), (p64.argmax(axis=1) == labels).astype(np.float64)
    expected = ref.binned_errors(conf, correct, ref.nominal_bins(conf, 15))["l1"]
    assert abs(ece(labels, probs=p32) - expected) < 1e-9
    # torchmetrics' rule (float32 edges, 1.0 in an extra bin), our float64 sums
    tm_idx = np.searchsorted(
        torchmetrics_edges(15).astype(np.float32), conf.astype(np.float32), side="right"
    )
    tm_expected = ref.binned_errors(conf, correct, tm_idx - 1)["l1"]
    ours_tm = ece(labels, probs=p32, convention="torchmetrics")
    assert abs(ours_tm - tm_expected) < 1e-9
    real = float(multiclass_calibration_error(torch.from_numpy(p32), torch.from_numpy(labels), k))
    assert abs(real - tm_expected) > 1e-5


# --- argument errors --------------------------------------------------------------------


def test_argument_errors() -> None:
    labels, probs = [0, 1, 2], np.eye(3)
    with pytest.raises(InputError, match=r"^norm: expected one of l1, l2, max, got 'l3'"):
        calibration_error(labels, probs=probs, norm="l3")  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"^mode: expected 'top_label' for a problem with more"):
        ece(labels, probs=probs, mode="positive_class")
    with pytest.raises(InputError, match=r"^mode: expected one of top_label, positive_class"):
        ece(labels, probs=probs, mode="binary")  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"^convention: expected 'calibkit' with scheme"):
        calibration_error(labels, probs=probs, scheme="equal_mass", convention="netcal")
    with pytest.raises(InputError, match=r"^n_bins"):
        sce(labels, probs=probs, n_bins=0)
    for bad, got in (
        ([1.0, 1.0], "shape (2,)"),
        ([1.0, -1.0, 1.0], "a weight of -1"),
        ([0.0, 0.0, 0.0], "all zero"),
        ([np.nan, 1.0, 1.0], "NaN or infinity"),
    ):
        with pytest.raises(InputError, match=r"^sample_weight: expected .*got " + re.escape(got)):
            ece(labels, probs=probs, sample_weight=bad)
    w = torch.ones(3, requires_grad=True)  # tensors are fine as weights
    assert ece(labels, probs=probs, sample_weight=w) == 0.0
