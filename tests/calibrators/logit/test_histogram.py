"""Tests of top-label and class-wise histogram binning."""

from __future__ import annotations

import numpy as np
import pytest

from calibkit.calibrators import Calibrator, ClasswiseHistogramBinning, HistogramBinning
from calibkit.core.errors import InputError, NotFittedError
from calibkit.metrics import ece
from tests.calibrators.problems import (
    CIFAR10,
    cat_vs_dog,
    load_logits,
    needs_cifar10,
    random_problem,
    seeded_split,
    softmax,
)


# ----- hand-computed values ---------------------------------------------------------------
def test_top_label_hand_computed() -> None:
    # confidences 0.95, 0.95 (one right), 0.65, 0.65 (both right), 0.35 (wrong): 10 bins.
    # (No confidence sits on a bin edge: softmax(log p) can land one ulp below 0.9.)
    probs = [[0.95, 0.03, 0.02], [0.95, 0.03, 0.02], [0.65, 0.25, 0.1], [0.65, 0.25, 0.1],
             [0.35, 0.33, 0.32]]  # fmt: skip
    h = HistogramBinning(n_bins=10, smoothing=0).fit(np.log(probs), [0, 1, 0, 0, 2])
    expected_counts = np.zeros(10, dtype=np.int64)
    expected_counts[[3, 6, 9]] = [1, 2, 2]
    np.testing.assert_array_equal(h.bin_counts_, expected_counts)
    assert h.bin_accuracy_[9] == 0.5
    assert h.bin_accuracy_[6] == 1.0
    assert h.bin_accuracy_[3] == 0.0
    # 0.92 -> bin 9 -> 0.5; the rest 0.5 is split 0.06 : 0.02 -> 0.375 : 0.125
    out = h.predict_proba(np.log([[0.92, 0.06, 0.02]]))
    np.testing.assert_allclose(out, [[0.5, 0.375, 0.125]], rtol=1e-12)


def test_classwise_hand_computed() -> None:
    probs = np.array([[0.7, 0.2, 0.1], [0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6]])
    h = ClasswiseHistogramBinning(n_bins=2, smoothing=0).fit(np.log(probs), [0, 1, 1, 2])
    # class 0: p0 = .7,.7 (y=0 once) in bin 1; .1,.2 (never 0) in bin 0
    np.testing.assert_allclose(h.bin_frequency_[0], [0.0, 0.5])
    np.testing.assert_allclose(h.bin_frequency_[1], [1 / 3, 1.0])
    np.testing.assert_allclose(h.bin_frequency_[2], [0.0, 1.0])
    # row (.7, .2, .1) -> (0.5, 1/3, 0) -> normalised (0.6, 0.4, 0)
    np.testing.assert_allclose(h.predict_proba(np.log(probs[:1])), [[0.6, 0.4, 0.0]], atol=1e-15)


def test_binary_classwise_bins_only_the_positive_class() -> None:
    z = np.log([[0.8, 0.2], [0.7, 0.3], [0.2, 0.8], [0.4, 0.6]])
    h = ClasswiseHistogramBinning(n_bins=2, smoothing=0).fit(z, [0, 1, 1, 1])
    assert h.edges_.shape == (1, 3)
    np.testing.assert_allclose(h.bin_frequency_[0], [0.5, 1.0])
    np.testing.assert_allclose(h.predict_proba(z), [[0.5, 0.5]] * 2 + [[0.0, 1.0]] * 2)


def test_empty_bin_keeps_the_input_probabilities() -> None:
    z = np.log([[0.95, 0.05], [0.9, 0.1], [0.97, 0.03]])
    h = HistogramBinning(n_bins=10, smoothing=0).fit(z, [0, 1, 0])
    new = np.log([[0.55, 0.45], [0.25, 0.75]])  # bins 5 and 7: empty at fit time
    out = h.predict_proba(new)
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, [[0.55, 0.45], [0.25, 0.75]], rtol=1e-12)
    hc = ClasswiseHistogramBinning(n_bins=10, smoothing=0).fit(z, [0, 1, 0])
    np.testing.assert_allclose(hc.predict_proba(new), [[0.55, 0.45], [0.25, 0.75]], rtol=1e-12)


# ----- references ------------------------------------------------------------------------
@pytest.mark.parametrize("scheme", ["equal_width", "equal_mass"])
def test_top_label_matches_a_brute_force_loop(scheme: str) -> None:
    z, y = random_problem(400, 4, seed=1)
    h = HistogramBinning(n_bins=7, scheme=scheme, smoothing=0).fit(z, y)
    p = softmax(z)
    conf, pred = p.max(axis=1), p.argmax(axis=1)
    edges = h.edges_
    if scheme == "equal_width":
        np.testing.assert_array_equal(edges, np.arange(8) / 7)
    z_new, _ = random_problem(50, 4, seed=2)
    p_new = softmax(z_new)
    out = h.predict_proba(z_new)
    for i, row in enumerate(p_new):
        c, t = row.max(), row.argmax()
        b = next(j for j in range(7) if edges[j] <= c < edges[j + 1] or j == 6)
        in_bin = (conf >= edges[b]) & ((conf < edges[b + 1]) | (b == 6))
        acc = float(np.mean(pred[in_bin] == y[in_bin])) if in_bin.any() else c
        expect = row * (1 - acc) / (1 - c)
        expect[t] = acc
        np.testing.assert_allclose(out[i], expect, rtol=1e-10, atol=1e-15)


def test_classwise_matches_netcal_when_no_bin_is_empty() -> None:
    netcal_binning = pytest.importorskip("netcal.binning")
    z, y = random_problem(3000, 3, seed=3)
    p = softmax(z)
    ours = ClasswiseHistogramBinning(n_bins=5, smoothing=0).fit(z, y)
    assert np.all(ours.bin_counts_ > 0)  # netcal puts bin centres in empty bins
    ref = netcal_binning.HistogramBinning(bins=5).fit(p, y)
    z_new, _ = random_problem(500, 3, seed=4)
    np.testing.assert_allclose(ours.predict_proba(z_new), ref.transform(softmax(z_new)), atol=1e-12)


def test_equal_mass_bins_hold_equal_counts_and_agree_with_fit_time() -> None:
    z, y = random_problem(600, 3, seed=5)
    h = HistogramBinning(n_bins=6, scheme="equal_mass", smoothing=0).fit(z, y)
    np.testing.assert_array_equal(h.bin_counts_, np.full(6, 100))
    # each calibration sample gets its own bin's accuracy
    p = softmax(z)
    out = h.predict_proba(z)
    new_conf = out[np.arange(600), p.argmax(axis=1)]
    assert set(np.round(new_conf, 12)) <= set(np.round(h.bin_accuracy_, 12))
    correct = p.argmax(axis=1) == y
    assert np.isclose(new_conf.mean(), correct.mean())  # equal weights: the means agree


# ----- argmax ------------------------------------------------------------------------------
def test_top_label_can_change_the_argmax_even_above_one_over_k() -> None:
    # 3 classes, bin [0.4, 0.5) has accuracy 0.4 >= 1/3; runner-up 0.44 -> 0.44 * 0.6 / 0.55
    row = [0.45, 0.44, 0.11]
    h = HistogramBinning(n_bins=10, smoothing=0).fit(np.log([row] * 5), [0, 0, 1, 1, 1])
    assert h.bin_accuracy_[4] == pytest.approx(0.4)
    out = h.predict_proba(np.log([row]))
    np.testing.assert_allclose(out, [[0.4, 0.48, 0.12]], rtol=1e-12)
    assert out.argmax() == 1


def test_top_label_keeps_the_argmax_when_the_new_confidence_is_at_least_half() -> None:
    z, y = random_problem(2000, 5, seed=6)
    h = HistogramBinning(n_bins=15, smoothing=0).fit(z, y)
    z_new, _ = random_problem(2000, 5, seed=7)
    before = softmax(z_new).argmax(axis=1)
    out = h.predict_proba(z_new)
    new_conf = out[np.arange(2000), before]
    high, low = new_conf >= 0.5, new_conf < 1 / 5
    assert high.any()
    assert low.any()
    np.testing.assert_array_equal(out[high].argmax(axis=1), before[high])
    assert np.all(out[low].argmax(axis=1) != before[low])
    # the exact rule: the top class stays a maximum iff c' >= r / (1 - c + r)
    p = np.sort(softmax(z_new), axis=1)
    c, r = p[:, -1], p[:, -2]
    keeps = new_conf >= r / (1 - c + r) - 1e-12
    assert np.array_equal(out.max(axis=1) <= new_conf + 1e-12, keeps)


# ----- invariants ---------------------------------------------------------------------------
@pytest.mark.parametrize("cls", [HistogramBinning, ClasswiseHistogramBinning])
@pytest.mark.parametrize("scheme", ["equal_width", "equal_mass"])
def test_probabilities_valid_and_save_load_bit_exact(
    cls: type[Calibrator], scheme: str, tmp_path: object
) -> None:
    z, y = random_problem(500, 4, seed=8)
    cal = cls(n_bins=10, scheme=scheme).fit(z, y)  # type: ignore[call-arg]
    z_new, _ = random_problem(300, 4, seed=9)
    out = cal.predict_proba(z_new.astype(np.float32))
    assert out.dtype == np.float64
    assert np.all(out >= 0)
    np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-12)
    path = tmp_path / "h.json"  # type: ignore[operator]
    cal.save(path)
    back = Calibrator.load(path)
    assert type(back) is cls
    np.testing.assert_array_equal(back.predict_proba(z_new), cal.predict_proba(z_new))


@pytest.mark.parametrize("cls", [HistogramBinning, ClasswiseHistogramBinning])
def test_errors(cls: type[Calibrator]) -> None:
    with pytest.raises(NotFittedError):
        cls().predict_proba(np.zeros((2, 3)))
    with pytest.raises(InputError, match="scheme"):
        cls(scheme="quantile")  # type: ignore[call-arg]
    with pytest.raises(InputError, match="n_bins"):
        cls(n_bins=0)  # type: ignore[call-arg]
    z, y = random_problem(50, 3, seed=10)
    with pytest.raises(InputError, match="3 columns"):
        cls().fit(z, y).predict_proba(np.zeros((2, 4)))


# ----- real data ----------------------------------------------------------------------------
@pytest.mark.parametrize("cls", [HistogramBinning, ClasswiseHistogramBinning])
@pytest.mark.parametrize("scheme", ["equal_width", "equal_mass"])
@pytest.mark.shared_data
@needs_cifar10
def test_cifar10_test_ece_goes_down(cls: type[Calibrator], scheme: str) -> None:
    z, y = load_logits(CIFAR10)
    cal, test = seeded_split(len(y), 5000)
    before = ece(y[test], logits=z[test])
    after = ece(y[test], probs=cls(scheme=scheme).fit(z[cal], y[cal]).predict_proba(z[test]))  # type: ignore[call-arg]
    assert after < before
    # binary: cat (3) vs dog (5), columns renormalised
    zb, yb = cat_vs_dog(z, y)
    cal, test = seeded_split(len(yb))
    before = ece(yb[test], logits=zb[test])
    fitted = cls(scheme=scheme).fit(zb[cal], yb[cal])  # type: ignore[call-arg]
    assert ece(yb[test], probs=fitted.predict_proba(zb[test])) < before


def test_the_other_classes_share_stays_finite_beside_a_subnormal_sum() -> None:
    """``rest * (remaining / rest_sum)`` overflowed to inf when the other classes' sum was
    subnormal (a saturated softmax; under another CPU's kernels the ResNet-18 smoke run met
    it and stopped with "probs: expected finite values")."""
    from calibkit.calibrators.logit.histogram import replace_top_label

    probs = np.array([[1.0, 1e-310, 0.0], [0.7, 0.2, 0.1]])
    out = replace_top_label(probs, np.array([0, 0]), np.array([0.9, 0.4]))
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(out[0], [0.9, 0.1, 0.0])
    np.testing.assert_allclose(out[1], [0.4, 0.4, 0.2])
