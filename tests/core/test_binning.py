"""Binning (calibkit.core.binning): the bin rules, checked against the real libraries they mimic."""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from netcal.metrics import MCE as NetcalMCE
from sklearn.calibration import calibration_curve
from torchmetrics.functional.classification import binary_calibration_error

from calibkit.core.binning import (
    CONVENTIONS,
    bin_index,
    bin_stats,
    check_n_bins,
    equal_mass_cuts,
    equal_mass_cuts_rows,
    equal_mass_edges,
    equal_mass_index,
    equal_width_index,
    index_from_edges,
    tie_runs,
    torchmetrics_edges,
)
from calibkit.core.errors import InputError

# The confidences of the table in /work/shared/notes/calibration-conventions.md (10 bins).
TABLE_CONF = np.array([0.0, 0.1, 0.3, 0.5, 0.6, 0.7, 0.95, 1.0])
TABLE = {
    "calibkit": [0, 1, 3, 5, 6, 7, 9, 9],  # nominal edges: 0.3 -> bin 3, 0.6 -> 6, 0.7 -> 7
    "netcal": [0, 1, 2, 5, 5, 6, 9, 9],
    "sklearn": [0, 0, 2, 4, 5, 6, 9, 9],
    # What torchmetrics really computes (probed below). The notes' row "0 1 2 5 5 6 9 10"
    # assumes np.linspace edges, but torch.linspace edges differ: in float64 0.6 and 0.7 land
    # in bins 6 and 7; in float32 (the multiclass metric casts to float32) 0.3 lands in 3 too.
    "torchmetrics_float32": [0, 1, 3, 5, 6, 7, 9, 10],
    "torchmetrics_float64": [0, 1, 2, 5, 6, 7, 9, 10],
}


def ours(conv: str, conf: np.ndarray, n_bins: int) -> list[int]:
    """Our bin index under ``conv`` ("torchmetrics_float32" etc. pick the dtype)."""
    if conv.startswith("torchmetrics"):
        dtype = conv.split("_")[1]
        idx = equal_width_index(conf, n_bins, "torchmetrics", torchmetrics_dtype=dtype)  # type: ignore[arg-type]
    else:
        idx = equal_width_index(conf, n_bins, conv)  # type: ignore[arg-type]
    return [int(i) for i in idx]


# --- the real libraries' bin of one confidence, probed through their public API ------------
# Two samples, c with outcome 1 and the midpoint m of a bin with outcome 0: their maximum
# calibration error is |1/2 - (c + m)/2| if they share a bin, and max(1 - c, m) otherwise.


def same_bin_gap(c: float, m: float) -> float:
    return abs(0.5 - (c + m) / 2)


def probe(mce_of_pair: Callable[[float, float], float], c: float, n_bins: int) -> int:
    """The bin of ``c`` (``n_bins`` when it shares no bin with a midpoint: an extra bin)."""
    hits = [
        b
        for b in range(n_bins)
        if abs(mce_of_pair(c, (b + 0.5) / n_bins) - same_bin_gap(c, (b + 0.5) / n_bins)) < 1e-6
    ]
    assert len(hits) <= 1
    return hits[0] if hits else n_bins


def torchmetrics_pair(dtype: torch.dtype, n_bins: int) -> Callable[[float, float], float]:
    def mce(c: float, m: float) -> float:
        preds = torch.tensor([c, m], dtype=dtype)
        return float(binary_calibration_error(preds, torch.tensor([1, 0]), n_bins, norm="max"))

    return mce


def netcal_pair(n_bins: int) -> Callable[[float, float], float]:
    def mce(c: float, m: float) -> float:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return float(NetcalMCE(bins=n_bins).measure(np.array([c, m]), np.array([1, 0])))

    return mce


def sklearn_pair(n_bins: int) -> Callable[[float, float], float]:
    def mce(c: float, m: float) -> float:
        prob_true, prob_pred = calibration_curve([1, 0], [c, m], n_bins=n_bins)
        return float(np.max(np.abs(prob_true - prob_pred)))

    return mce


def test_table_ours() -> None:
    for conv, expected in TABLE.items():
        assert ours(conv, TABLE_CONF, 10) == expected, conv


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_table_torchmetrics_real(dtype: str) -> None:
    mce = torchmetrics_pair(getattr(torch, dtype), 10)
    assert [probe(mce, float(c), 10) for c in TABLE_CONF] == TABLE[f"torchmetrics_{dtype}"]


def test_table_netcal_real() -> None:
    assert [probe(netcal_pair(10), float(c), 10) for c in TABLE_CONF] == TABLE["netcal"]


def test_table_sklearn_real() -> None:
    assert [probe(sklearn_pair(10), float(c), 10) for c in TABLE_CONF] == TABLE["sklearn"]


def edge_confidences(n_bins: int) -> np.ndarray:
    """Every kind of edge value of ``n_bins`` bins and its float neighbours."""
    edges = np.concatenate(
        [
            np.arange(n_bins + 1) / n_bins,
            np.linspace(0, 1, n_bins + 1),
            torchmetrics_edges(n_bins, "float32"),
            torchmetrics_edges(n_bins, "float64"),
        ]
    )
    near = np.concatenate([edges, np.nextafter(edges, 0), np.nextafter(edges, 1)])
    return np.unique(np.clip(near, 0, 1))


@pytest.mark.parametrize("n_bins", [7, 15])
def test_edges_match_real_libraries(n_bins: int) -> None:
    """Every edge value and its neighbours, for n where torch.linspace != np.linspace."""
    conf = edge_confidences(n_bins)
    probes = {
        "netcal": netcal_pair(n_bins),
        "sklearn": sklearn_pair(n_bins),
        "torchmetrics_float32": torchmetrics_pair(torch.float32, n_bins),
        "torchmetrics_float64": torchmetrics_pair(torch.float64, n_bins),
    }
    for conv, mce in probes.items():
        cast = np.float32 if conv == "torchmetrics_float32" else np.float64
        # a float32 probe sees float32-rounded confidences: probe those exact values
        values = np.unique(conf.astype(cast).astype(np.float64))
        real = [probe(mce, float(c), n_bins) for c in values]
        assert ours(conv, values, n_bins) == real, conv


def test_torchmetrics_edges_are_torch_linspace() -> None:
    # np.linspace and torch.linspace disagree in the last bit for 15 bins
    assert not np.array_equal(
        torchmetrics_edges(15, "float32"), np.linspace(0, 1, 16, dtype=np.float32)
    )
    for dtype in (torch.float32, torch.float64):
        name = str(dtype).removeprefix("torch.")
        expected = torch.linspace(0, 1, 16, dtype=dtype).double().numpy()
        np.testing.assert_array_equal(torchmetrics_edges(15, name), expected)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="torchmetrics_dtype"):
        torchmetrics_edges(15, "float16")  # type: ignore[arg-type]


# --- the calibkit rule ------------------------------------------------------------------


def test_nominal_edges_for_every_bin_count() -> None:
    """k/n lands in bin k and its predecessor in bin k-1, for all n <= 300 (0.29 * 100!)."""
    for n in range(1, 301):
        edges = np.arange(n + 1) / n
        assert equal_width_index(edges[:-1], n).tolist() == list(range(n))
        assert equal_width_index(np.nextafter(edges[1:-1], 0), n).tolist() == list(range(n - 1))
    assert equal_width_index(np.array([0.29, 0.57, 0.58]), 100).tolist() == [29, 57, 58]


def test_clipping_and_closed_last_bin() -> None:
    conf = np.array([-0.5, 0.0, np.nextafter(1.0, 0), 1.0, 1.5])
    assert equal_width_index(conf, 4).tolist() == [0, 0, 3, 3, 3]
    assert equal_width_index(conf, 1).tolist() == [0] * 5


@given(st.lists(st.floats(0, 1), min_size=1, max_size=50), st.integers(1, 40))
@settings(max_examples=200, deadline=None)
def test_calibkit_rule_is_half_open_on_the_edges(conf_list: list[float], n_bins: int) -> None:
    conf = np.array(conf_list)
    idx, edges, used = bin_index(conf, n_bins)
    assert used == n_bins
    lo, hi = edges[idx], edges[idx + 1]
    assert np.all(lo <= conf)
    assert np.all((conf < hi) | ((idx == n_bins - 1) & (conf <= 1.0)))


# --- bin_index / bin_stats --------------------------------------------------------------


def test_bin_index_edges_per_convention() -> None:
    conf = np.array([0.5])
    _, e, used = bin_index(conf, 4)
    assert (e.tolist(), used) == ([0.0, 0.25, 0.5, 0.75, 1.0], 4)
    _, e, used = bin_index(conf, 3, convention="netcal")
    np.testing.assert_array_equal(e, np.linspace(0, 1, 4))
    _, e, used = bin_index(conf, 3, convention="torchmetrics")
    assert used == 4
    assert e[-2:].tolist() == [1.0, 1.0]  # the extra bin holding exactly 1.0
    stats = bin_stats(np.array([1.0, 0.5]), np.array([1.0, 0.0]), 3, convention="torchmetrics")
    assert stats.counts.tolist() == [0.0, 1.0, 0.0, 1.0]


def test_bin_stats_sums_and_empty_bins() -> None:
    conf = np.array([0.05, 0.15, 0.12, 0.95])
    outcome = np.array([1.0, 0.0, 1.0, 1.0])
    stats = bin_stats(conf, outcome, 10)
    assert stats.counts.dtype == np.float64
    assert stats.counts.tolist() == [1, 2, 0, 0, 0, 0, 0, 0, 0, 1]
    assert stats.confidence_sum[1] == pytest.approx(0.27)
    assert stats.accuracy.tolist()[:3] == [1.0, 0.5, pytest.approx(np.nan, nan_ok=True)]
    assert np.isnan(stats.mean_confidence[5])
    assert stats.gaps[5] == 0.0
    assert stats.gaps[1] == pytest.approx(0.5 - 0.135)
    assert stats.total == 4.0
    assert stats.weights.sum() == 1.0
    assert stats.nonempty.tolist() == [True, True] + [False] * 7 + [True]
    weighted = bin_stats(conf, outcome, 10, weight=np.array([2.0, 0.0, 1.0, 1.0]))
    assert weighted.counts[1] == 1.0
    assert weighted.nonempty[1]
    assert weighted.accuracy[1] == 1.0


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "3", None])
def test_bad_bin_counts(bad: object) -> None:
    with pytest.raises(InputError, match=r"^n_bins: expected an integer in \[1, 100000\]"):
        check_n_bins(bad)
    with pytest.raises(InputError, match=r"^n_bins"):
        bin_stats(np.array([0.5]), np.array([1.0]), bad)  # type: ignore[arg-type]


def test_bad_scheme_and_convention() -> None:
    conf = np.array([0.5])
    with pytest.raises(InputError, match=r"^scheme: expected one of equal_width, equal_mass"):
        bin_index(conf, 3, scheme="quantile")  # type: ignore[arg-type]
    with pytest.raises(
        InputError, match=r"^convention: expected one of " + re.escape(", ".join(CONVENTIONS))
    ):
        bin_index(conf, 3, convention="relplot")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="'calibkit' with scheme='equal_mass', got 'netcal'"):
        bin_index(conf, 3, scheme="equal_mass", convention="netcal")


# --- equal-mass bins --------------------------------------------------------------------


def test_sixty_percent_tied() -> None:
    """60% of the confidences tied at 0.99: the tie stays whole, the rest fill 4 bins of 10%."""
    rng = np.random.default_rng(0)
    conf = np.concatenate([rng.uniform(0.3, 0.9, 400), np.full(600, 0.99)])
    rng.shuffle(conf)
    idx, edges = equal_mass_index(conf, 10)
    counts = np.bincount(idx, minlength=10)
    assert np.count_nonzero(counts) == 5
    assert sorted(counts[counts > 0].tolist()) == [100, 100, 100, 100, 600]
    assert np.unique(idx[conf == 0.99]).size == 1
    assert not np.any(idx[conf < 0.99] == idx[conf == 0.99][0])
    assert edges[idx[conf == 0.99][0]] == 0.99


def test_all_tied_and_single_sample() -> None:
    idx, edges = equal_mass_index(np.full(37, 0.7), 10)
    assert np.unique(idx).size == 1
    assert edges[0] == 0.0
    assert edges[-1] == 1.0
    idx1, _ = equal_mass_index(np.array([0.4]), 15)
    assert idx1.shape == (1,)
    assert equal_mass_cuts(np.array([]), 3).tolist() == [0, 0, 0, 0]


def test_ties_spanning_several_cuts() -> None:
    sc = np.array([0.1] + [0.5] * 97 + [0.9] * 2)
    cuts = equal_mass_cuts(sc, 10)
    # the run of 0.5 is [1, 98): targets 10..40 are nearer its start, 50 (49 vs 48) its end
    assert cuts.tolist() == [0, 1, 1, 1, 1, 98, 98, 98, 98, 98, 100]
    bins = np.repeat(np.arange(10), np.diff(cuts))
    assert bins.tolist() == [0] + [4] * 97 + [9] * 2
    assert equal_mass_edges(sc, cuts).tolist() == [0.0] + [0.5] * 4 + [0.9] * 5 + [1.0]


def test_ties_at_the_minimum_are_binned() -> None:
    """Unlike a strict lower edge at the minimum, every sample of a tie at the minimum counts."""
    conf = np.concatenate([np.full(30, 0.5), np.linspace(0.6, 1.0, 70)])
    stats = bin_stats(conf, np.ones(100), 10, scheme="equal_mass")
    assert stats.total == 100.0
    assert 30.0 in stats.counts.tolist()  # one tie run, never split
    assert stats.edges[int(np.argmax(stats.counts == 30.0))] == 0.5


def test_more_bins_than_samples() -> None:
    sc = np.array([0.2, 0.4, 0.6])
    cuts = equal_mass_cuts(sc, 10)
    assert np.count_nonzero(np.diff(cuts)) == 3  # every sample alone
    edges = equal_mass_edges(sc, cuts)
    assert np.all(np.diff(edges) >= 0)


def tie_heavy_confidences() -> st.SearchStrategy[list[float]]:
    return st.lists(st.integers(0, 12).map(lambda v: v / 12), min_size=1, max_size=120)


@given(tie_heavy_confidences(), st.integers(1, 20))
@settings(max_examples=300, deadline=None)
def test_equal_mass_properties(conf_list: list[float], n_bins: int) -> None:
    conf = np.array(conf_list)
    idx, edges = equal_mass_index(conf, n_bins)
    n = conf.shape[0]
    # ties never split, and bins are ordered intervals
    for value in np.unique(conf):
        assert np.unique(idx[conf == value]).size == 1
    order = np.argsort(conf, kind="stable")
    assert np.all(np.diff(idx[order]) >= 0)
    # counts balanced within one tie run
    counts = np.bincount(idx, minlength=n_bins)
    longest = int(np.max(np.unique(conf, return_counts=True)[1]))
    assert np.all(np.abs(counts - n / n_bins) <= max(longest, 1))
    # every non-empty bin starts at its edge; edges are sorted, from 0 to 1
    for k in np.flatnonzero(counts):
        assert edges[k] == conf[idx == k].min() or k == 0
    assert np.all(np.diff(edges) >= 0)
    assert (edges[0], edges[-1]) == (0.0, 1.0)


@given(
    tie_heavy_confidences(),
    st.data(),
    st.integers(1, 12),
)
@settings(max_examples=200, deadline=None)
def test_integer_weights_equal_repeated_samples(
    conf_list: list[float], data: st.DataObject, n_bins: int
) -> None:
    """Weights 0, 1, 2, 3 cut exactly where repeating each sample that often would."""
    conf = np.array(conf_list)
    w = np.array(data.draw(st.lists(st.integers(0, 3), min_size=conf.size, max_size=conf.size)))
    if w.sum() == 0:
        w[0] = 1
    idx_w, _ = equal_mass_index(conf, n_bins, w.astype(np.float64))
    rep = np.repeat(np.arange(conf.size), w)
    idx_r, _ = equal_mass_index(conf[rep], n_bins)
    # the same bin for every repeated sample (zero-weight samples may sit anywhere)
    np.testing.assert_array_equal(idx_w[rep], idx_r)
    stats_w = bin_stats(conf, conf, n_bins, scheme="equal_mass", weight=w.astype(np.float64))
    stats_r = bin_stats(conf[rep], conf[rep], n_bins, scheme="equal_mass")
    np.testing.assert_allclose(stats_w.counts, stats_r.counts)


def test_zero_weights_never_move_a_cut() -> None:
    rng = np.random.default_rng(3)
    conf = np.sort(rng.random(200))
    w = rng.integers(0, 2, 200).astype(np.float64)
    cuts = equal_mass_cuts(conf, 8, w)
    kept = equal_mass_cuts(conf[w > 0], 8)
    # the cuts in the positive-weight subsequence are the same cuts
    pos_before = np.concatenate([[0], np.cumsum(w > 0)])
    np.testing.assert_array_equal(pos_before[cuts], kept)


def test_fractional_weight_cut() -> None:
    """One heavy sample holds most of the mass: the cuts move around it."""
    sc = np.array([0.1, 0.2, 0.3, 0.4])
    cuts = equal_mass_cuts(sc, 2, np.array([1.0, 1.0, 6.0, 1.0]))
    assert cuts.tolist() == [0, 2, 4]  # target 4.5: boundary 2 (at 2) vs 3 (at 8): 2 is nearer


@pytest.mark.parametrize("scheme", ["equal_width", "equal_mass"])
def test_index_from_edges_puts_fitted_values_back_in_their_bins(scheme: str) -> None:
    """New data equal to fitted data lands in the same bin, ties and edges included."""
    rng = np.random.default_rng(4)
    conf = np.concatenate([rng.random(300), np.full(200, 0.9), np.arange(11) / 10])
    idx, edges, _ = bin_index(conf, 10, scheme=scheme)  # type: ignore[arg-type]
    again = index_from_edges(conf[::-1].copy(), edges, scheme)  # type: ignore[arg-type]
    np.testing.assert_array_equal(again[::-1], idx)
    # between fitted values, a score goes to the bin whose [e_k, e_{k+1}) holds it
    probe = np.array([0.0, 0.05, 0.5, 0.95, 1.0])
    got = index_from_edges(probe, edges, scheme)  # type: ignore[arg-type]
    inner = edges[1:-1]
    np.testing.assert_array_equal(got, [int(np.sum(inner <= p)) for p in probe])


@pytest.mark.parametrize("n_bins", [1, 3, 10])
def test_equal_mass_cuts_rows_equal_row_by_row_cuts(n_bins: int) -> None:
    """All rows at once (the bootstrap's blocks) = equal_mass_cuts of each row, for integer
    counts (zeros, ties, cuts inside tie runs) and for float weights."""
    rng = np.random.default_rng(11)
    sc = np.sort(np.round(rng.random(200), 2))  # many tie runs
    counts = rng.poisson(1.0, (40, 200))
    counts[0] = 0
    counts[0, 5] = 3  # all weight on one sample
    weights = rng.random((5, 200))
    for cum in (np.cumsum(counts, axis=1), np.cumsum(weights, axis=1)):
        got = equal_mass_cuts_rows(sc, n_bins, cum)
        want = np.stack([equal_mass_cuts(sc, n_bins, cum=row.astype(np.float64)) for row in cum])
        np.testing.assert_array_equal(got, want)
    assert [r.tolist() for r in tie_runs(np.array([0.2, 0.2, 0.3]))] == [[0, 0, 2], [2, 2, 3]]


@pytest.mark.parametrize(("field", "value"), [("n_bins", 0), ("n_bins", 2.5), ("mode", "top")])
def test_a_bad_binning_value_names_its_field(field: str, value: object) -> None:
    from calibkit.core.options import Binning

    with pytest.raises(InputError, match=f"^{field}: expected"):
        Binning(**{field: value})  # type: ignore[arg-type]
