"""KS error and MMCE: direct formulas, brute force, netcal, weights, ties, kernel widths."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from netcal.metrics import MMCE as NetcalMMCE

from calibkit.core.errors import InputError
from calibkit.metrics import ks_error, mmce
from calibkit.metrics.continuous import ks_from_sorted, mmce_from_sorted
from tests.metrics import reference as ref


def top_label(labels: np.ndarray, probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return probs.max(axis=1), (probs.argmax(axis=1) == labels).astype(np.float64)


# --- KS -------------------------------------------------------------------------------


def test_ks_hand_case() -> None:
    # sorted confidences 0.6 (right), 0.8 (right): cumulative gaps 0.4/2, (0.4+0.2)/2
    assert ks_error([0, 1], probs=[[0.6, 0.4], [0.2, 0.8]]) == pytest.approx(0.3, abs=1e-15)
    assert ks_error([1], probs=[[0.7, 0.3]]) == pytest.approx(0.7, abs=1e-15)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ks_vs_direct_formula(seed: int) -> None:
    labels, probs = ref.overconfident_data(4000, 4, seed)
    conf, correct = top_label(labels, probs)
    assert np.unique(conf).size == conf.size  # no ties: the direct formula is unambiguous
    assert ks_error(labels, probs=probs) == pytest.approx(ref.ks(conf, correct), abs=1e-13)
    p1 = probs[:, 1] / (probs[:, 0] + probs[:, 1])
    y = (labels == 1).astype(np.int64)
    assert ks_error(y, probs=p1, mode="positive_class") == pytest.approx(
        ref.ks(p1, y.astype(np.float64)), abs=1e-13
    )


def test_ks_is_independent_of_order_within_ties() -> None:
    conf = np.array([0.5, 0.5, 0.5, 0.5, 0.9])
    right_first = np.array([1.0, 1.0, 0.0, 0.0, 1.0])
    wrong_first = right_first[[2, 3, 0, 1, 4]]
    a = ks_from_sorted(conf, right_first)
    assert a == ks_from_sorted(conf, wrong_first)
    # read only at the end of the tie: |2 - 2.0| / 5 = 0, then |3 - 2.9| / 5
    assert a == pytest.approx(0.1 / 5, abs=1e-15)
    assert ref.ks(conf, right_first) != a  # the naive formula depends on the order


def test_ks_weights() -> None:
    rng = np.random.default_rng(5)
    conf = np.sort(rng.random(300))
    outcome = (rng.random(300) < conf**2).astype(np.float64)
    w = rng.integers(0, 4, 300)
    rep = np.repeat(np.arange(300), w)
    assert ks_from_sorted(conf, outcome, w.astype(np.float64)) == pytest.approx(
        ks_from_sorted(conf[rep], outcome[rep]), abs=1e-14
    )
    half = ks_from_sorted(conf, outcome, np.full(300, 0.5))
    assert half == pytest.approx(ks_from_sorted(conf, outcome), abs=1e-15)


# --- MMCE -----------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1])
def test_mmce_vs_brute_force(seed: int) -> None:
    labels, probs = ref.overconfident_data(1500, 5, seed)
    conf, correct = top_label(labels, probs)
    assert mmce(labels, probs=probs) == pytest.approx(ref.mmce(conf, correct), abs=1e-13)
    w = np.random.default_rng(seed).random(1500)
    assert mmce(labels, probs=probs, sample_weight=w) == pytest.approx(
        ref.mmce(conf, correct, w), abs=1e-13
    )


def test_mmce_vs_netcal() -> None:
    """netcal's MMCE is top-label with the kernel exp(-2.5 |r - r'|): width 0.4."""
    labels, probs = ref.overconfident_data(1000, 4, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = float(NetcalMMCE().measure(probs, labels))
    assert mmce(labels, probs=probs) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("width", [2.0, 0.05, 1e-3, 1e-6])
def test_mmce_any_width(width: float) -> None:
    """Narrow kernels: exp(1/width) would overflow for width < 1/709 without blocking."""
    rng = np.random.default_rng(6)
    conf = np.sort(np.round(rng.random(400), 3))  # ties and near-ties
    outcome = (rng.random(400) < conf).astype(np.float64)
    w = rng.random(400)
    got = mmce_from_sorted(conf, outcome, w, width)
    assert np.isfinite(got)
    assert got == pytest.approx(ref.mmce(conf, outcome, w, width), abs=1e-13)


def test_mmce_edge_cases() -> None:
    assert mmce([0], probs=[[0.7, 0.3]]) == pytest.approx(0.3, abs=1e-15)
    assert mmce([0, 1], probs=[[1.0, 0.0], [0.0, 1.0]]) == 0.0
    # all tied: the kernel is 1 everywhere, MMCE = |mean(outcome - conf)|
    got = mmce([0, 0, 1, 1], probs=[[0.8, 0.2]] * 4)
    assert got == pytest.approx(abs(0.5 - 0.8), abs=1e-15)
    for bad in (0, -0.4, "0.4", float("nan")):
        with pytest.raises(InputError, match=r"^width: expected a positive number"):
            mmce([0], probs=[[0.7, 0.3]], width=bad)  # type: ignore[arg-type]


def test_integer_weights_equal_repeats() -> None:
    labels, probs = ref.overconfident_data(400, 3, 9)
    w = np.random.default_rng(9).integers(0, 4, 400)
    rep = np.repeat(np.arange(400), w)
    for fn in (ks_error, mmce):
        assert fn(labels, probs=probs, sample_weight=w) == pytest.approx(
            fn(labels[rep], probs=probs[rep]), abs=1e-13
        )


def test_logits_and_probs_agree() -> None:
    rng = np.random.default_rng(10)
    z = rng.normal(size=(800, 4)) * 3
    labels = rng.integers(0, 4, 800)
    probs = np.exp(z - z.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    for fn in (ks_error, mmce):
        assert fn(labels, logits=z) == pytest.approx(fn(labels, probs=probs), abs=1e-12)
