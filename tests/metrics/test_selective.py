"""Selective prediction and failure detection (metrics/selective.py): hand-computed cases with
ties, scikit-learn's AUROC, the fd-shifts and torch-uncertainty formulas restated, a plain
O(n^2) reference, invariances, edge cases, speed."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from calibkit import Binning, Resampling
from calibkit.core.errors import InputError
from calibkit.core.outputs import as_outputs
from calibkit.metrics import evaluate
from calibkit.metrics.selective import (
    Ranking,
    augrc,
    augrc_of,
    aurc,
    aurc_of,
    auroc_of,
    cov_at_risk5_of,
    coverage_at_risk,
    eaurc,
    eaurc_of,
    failure_auroc,
    ranking_change,
    risk_at_cov80_of,
    risk_at_coverage,
    risk_coverage_curve,
)
from tests.conftest import shared_path

SIX = (failure_auroc, aurc, eaurc, augrc, risk_at_coverage, coverage_at_risk)


def binary(conf: np.ndarray, correct: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two-class probabilities whose top-label confidence is ``conf`` (>= 0.5) and labels
    whose prediction (class 0) is right where ``correct``."""
    conf = np.asarray(conf, dtype=np.float64)
    probs = np.stack([conf, 1.0 - conf], axis=1)
    return np.where(np.asarray(correct) == 1, 0, 1), probs


# ----- hand-computed, with ties ----------------------------------------------------------------
# scores  0.9  0.8  0.8  0.6  0.6  0.6      groups by decreasing score:
# correct   1    0    1    1    0    0      g1 {0.9: 1 right}, g2 {0.8: 1 wrong, 1 right},
#                                           g3 {0.6: 1 right, 2 wrong}
# n_g = 1, 2, 3; wrong e_g = 0, 1, 2; cumulative C = 1, 3, 6; E = 0, 1, 3; R = E/C = 0, 1/3, 1/2
# AURC  = (1 * 0 + 2 * 1/3 + 3 * 1/2) / 6 = 13/36 (each sample: the risk of its own group's end)
# AUROC = pairs (right, wrong) ordered right, ties half: 0.9 beats 3 wrong (3); the right 0.8
#         ties one wrong and beats two (2.5); the right 0.6 loses to 0.8, ties two (1):
#         6.5 / 9 = 13/18
# AUGRC = trapezoids through (0, 0), (1/6, 0), (3/6, 1/6), (1, 3/6):
#         0 + (1/3)(1/12) + (1/2)(1/3) = 1/36 + 6/36 = 7/36
#         (= (1 - AUROC) acc (1 - acc) + (1 - acc)^2 / 2 = (5/18)/4 + 1/8 = 7/36)
# optimal AURC (3 right, then 3 wrong one by one) = (1/4 + 2/5 + 3/6) / 6 = 23/120
# E-AURC = 13/36 - 23/120 = 61/360
# risk at coverage: achievable coverages 1/6, 1/2, 1 -> c = 0.1: 0; c = 0.4 or 0.5: 1/3; 1: 1/2
# coverage at risk: r = 0: 1/6; r = 0.4: 1/2 (R = 1/3 at 1/2); r = 0.5: 1
HAND_CONF = np.array([0.9, 0.8, 0.8, 0.6, 0.6, 0.6])
HAND_CORRECT = np.array([1, 0, 1, 1, 0, 0])


def test_hand_computed_case_with_ties() -> None:
    y, p = binary(HAND_CONF, HAND_CORRECT)
    # exact fractions computed in another order: rounding only
    assert failure_auroc(y, p) == pytest.approx(13 / 18, abs=1e-15)
    assert aurc(y, p) == pytest.approx(13 / 36, abs=1e-15)
    assert augrc(y, p) == pytest.approx(7 / 36, abs=1e-15)
    assert eaurc(y, p) == pytest.approx(61 / 360, abs=1e-14)  # digamma differences
    for c, want in ((0.1, 0.0), (1 / 6, 0.0), (0.4, 1 / 3), (0.5, 1 / 3), (1.0, 0.5)):
        assert risk_at_coverage(y, p, coverage=c) == pytest.approx(want, abs=1e-15), c
    for r, want in ((0.0, 1 / 6), (0.4, 0.5), (0.5, 1.0)):
        assert coverage_at_risk(y, p, risk=r) == pytest.approx(want, abs=1e-15), r
    rc = risk_coverage_curve(y, p)
    np.testing.assert_allclose(rc.coverage, [1 / 6, 1 / 2, 1], atol=1e-15)
    np.testing.assert_allclose(rc.risk, [0, 1 / 3, 1 / 2], atol=1e-15)
    np.testing.assert_allclose(rc.generalized_risk, [0, 1 / 6, 1 / 2], atol=1e-15)
    assert rc.threshold.tolist() == [0.9, 0.8, 0.6]


def test_the_order_of_tied_samples_does_not_matter() -> None:
    y, p = binary(HAND_CONF, HAND_CORRECT)
    flip = np.array([0, 2, 1, 5, 4, 3])  # the tied samples in reverse order
    for fn in SIX:
        assert fn(y[flip], p[flip]) == fn(y, p), fn.__name__


# ----- independent implementations --------------------------------------------------------------
def _data(n: int, seed: int, decimals: int | None = 2) -> tuple[np.ndarray, np.ndarray]:
    """Confidences in [0.5, 1] (rounded: many ties) and correctness more likely when sure."""
    rng = np.random.default_rng(seed)
    conf = 0.5 + 0.5 * rng.random(n)
    if decimals is not None:
        conf = np.round(conf, decimals)
    correct = (rng.random(n) < conf).astype(np.int64)
    return conf, correct


@pytest.mark.parametrize("seed", range(4))
def test_auroc_is_scikit_learns_roc_auc_score(seed: int) -> None:
    conf, correct = _data(500, seed)
    y, p = binary(conf, correct)
    w = np.random.default_rng(seed + 10).integers(0, 4, 500).astype(np.float64)
    # sums in another order: rounding only
    assert failure_auroc(y, p) == pytest.approx(roc_auc_score(correct, conf), abs=1e-12)
    got = failure_auroc(y, p, sample_weight=w)
    assert got == pytest.approx(roc_auc_score(correct, conf, sample_weight=w), abs=1e-12)


def _fd_shifts_points(
    conf: np.ndarray, residuals: np.ndarray, generalized: bool
) -> tuple[np.ndarray, np.ndarray]:
    """fd-shifts' RC points (``fd_shifts/analysis/rc_stats_utils.py``, selective_risk_stats
    and generalized_risk_stats), restated plainly: ascending confidences; from coverage 1,
    remove one sample at a time and add a point where the confidence changes (ties leave
    together); a last point at coverage 0 (with the last selective risk, or generalized 0)."""
    order = np.argsort(conf, kind="stable")
    c, res = conf[order], residuals[order].astype(np.float64)
    n = len(c)
    cov, err = n, res.sum()
    coverages, risks = [1.0], [err / (n if generalized else cov)]
    for i in range(n - 1):
        cov -= 1
        err -= res[i]
        if c[i] != c[i + 1]:
            coverages.append(cov / n)
            risks.append(err / (n if generalized else cov))
    coverages.append(0.0)
    risks.append(0.0 if generalized else risks[-1])
    return np.array(coverages), np.array(risks)


def _trapezoid(y: np.ndarray, x: np.ndarray) -> float:
    return float(np.sum((x[:-1] - x[1:]) * (y[:-1] + y[1:]) / 2))  # x descending


@pytest.mark.parametrize(("seed", "decimals"), [(0, 2), (1, 1), (2, None), (3, 3)])
def test_augrc_and_aurc_against_fd_shifts(seed: int, decimals: int | None) -> None:
    conf, correct = _data(400, seed, decimals)
    y, p = binary(conf, correct)
    # AUGRC: fd-shifts' trapezoid through its generalized-risk points (``-np.trapz``)
    cov, grisk = _fd_shifts_points(conf, 1 - correct, generalized=True)
    assert augrc(y, p) == pytest.approx(_trapezoid(grisk, cov), abs=1e-12)  # rounding
    # AURC: the same points; this AURC takes each segment at its larger-coverage end (each
    # sample at its own group's risk), fd-shifts' linear-interpolation AURC the trapezoid
    cov, risk = _fd_shifts_points(conf, 1 - correct, generalized=False)
    steps = float(np.sum((cov[:-1] - cov[1:]) * risk[:-1]))
    assert aurc(y, p) == pytest.approx(steps, abs=1e-12)
    half_steps = float(np.sum((cov[:-1] - cov[1:]) * (risk[1:] - risk[:-1]) / 2))
    assert _trapezoid(risk, cov) == pytest.approx(aurc(y, p) + half_steps, abs=1e-12)
    # fd-shifts' optimal AURC for binary residuals, err + (1 - err) log(1 - err), is the
    # large-n limit of the exact sum used here: O(log(n) / n) apart
    err = 1 - correct.mean()
    limit = err + (1 - err) * np.log(1 - err)
    exact = aurc(y, p) - eaurc(y, p)
    assert abs(exact - limit) < 2 * np.log(400) / 400


def _torch_uncertainty(conf: np.ndarray, errors: np.ndarray) -> tuple[float, float, np.ndarray]:
    """torch-uncertainty's AURC and AUGRC (metrics/classification/risk_coverage.py), restated:
    errors by descending score (ties in sort order), cumulative error rates at coverage
    k/n, trapezoids over k = 1..n normalised by 1 - 1/n; and the error rates."""
    n = len(conf)
    e = errors[np.argsort(-conf, kind="stable")].astype(np.float64)
    rates = np.cumsum(e) / np.arange(1, n + 1)
    cov = np.arange(1, n + 1) / n
    area = float(np.sum(np.diff(cov) * (rates[1:] + rates[:-1]) / 2)) / (1 - 1 / n)
    g = rates * cov
    garea = float(np.sum(np.diff(cov) * (g[1:] + g[:-1]) / 2)) / (1 - 1 / n)
    return area, garea, rates


@pytest.mark.parametrize("seed", range(3))
def test_against_torch_uncertainty_without_ties(seed: int) -> None:
    """torch-uncertainty breaks ties by sort order, so the two agree on distinct scores only,
    up to its normalisation and the first and last half-trapezoids (exact identities)."""
    n = 1000
    conf, correct = _data(n, seed, decimals=None)
    assert np.unique(conf).size == n
    y, p = binary(conf, correct)
    area, garea, rates = _torch_uncertainty(conf, 1 - correct)
    # Geifman's mean of the selective risks: the trapezoid plus half its two end values
    assert aurc(y, p) == pytest.approx(area * (1 - 1 / n) + (rates[0] + rates[-1]) / (2 * n))
    # the generalized curve also runs from (0, 0) to the first point
    assert augrc(y, p) == pytest.approx(garea * (1 - 1 / n) + rates[0] / (2 * n * n))
    # RiskAtxCov: error_rates[ceil(n * c) - 1] (800 and 500 are exact products here)
    for c in (0.8, 0.5):
        assert risk_at_coverage(y, p, coverage=c) == rates[math.ceil(n * c) - 1]


def _reference(conf: np.ndarray, correct: np.ndarray, w: np.ndarray) -> dict[str, float]:
    """Every metric from the definitions, by plain loops over thresholds and pairs (O(n^2)),
    weights as repeated samples."""
    conf, correct, w = (np.repeat(a, w.astype(np.int64)) for a in (conf, correct, w))
    n = len(conf)
    pos, neg = conf[correct == 1], conf[correct == 0]
    pairs = sum((a > b) + 0.5 * (a == b) for a in pos for b in neg)
    ths = np.unique(conf)[::-1]
    cov = np.array([np.mean(conf >= t) for t in ths])
    risk = np.array([1 - np.mean(correct[conf >= t]) for t in ths])
    own = [1 - np.mean(correct[conf >= c]) for c in conf]  # each sample's own threshold
    m, right = n - correct.sum(), correct.sum()
    optimal = sum(j / (right + j) for j in range(1, m + 1)) / n
    gcov, grisk = np.r_[0.0, cov], np.r_[0.0, cov * risk]
    at80 = risk[np.argmax(cov >= 0.8)]
    ok = risk <= 0.05
    return {
        "auroc": pairs / (len(pos) * len(neg)) if len(pos) and len(neg) else math.nan,
        "aurc": float(np.mean(own)),
        "eaurc": float(np.mean(own)) - optimal,
        "augrc": float(np.sum(np.diff(gcov) * (grisk[1:] + grisk[:-1]) / 2)),
        "risk80": float(at80),
        "cov5": float(cov[ok].max()) if ok.any() else 0.0,
    }


@pytest.mark.parametrize("seed", range(6))
def test_weighted_metrics_equal_the_plain_reference(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 60))
    conf, correct = _data(n, seed, decimals=1)
    correct[:2] = [0, 1]
    w = rng.integers(1, 4, n).astype(np.float64)
    ref = _reference(conf, correct, w)
    sums = Ranking(conf, correct.astype(np.float64)).sums(w[None, :])
    got = {
        "auroc": auroc_of(sums)[0],
        "aurc": aurc_of(sums)[0],
        "eaurc": eaurc_of(sums)[0],
        "augrc": augrc_of(sums)[0],
        "risk80": risk_at_cov80_of(sums)[0],
        "cov5": cov_at_risk5_of(sums)[0],
    }
    for name, want in ref.items():  # sums in another order: rounding only
        assert got[name] == pytest.approx(want, abs=1e-12), name


@pytest.mark.parametrize("decimals", [None, 1])  # no ties, and ties (group sums)
def test_work_arrays_kept_between_blocks_change_no_value(decimals: int | None) -> None:
    """The bootstrap's blocks reuse one set of work arrays: each block's values equal those
    computed afresh, whatever the block before (integer and float weights)."""
    conf, correct = _data(300, 7, decimals)
    ranking = Ranking(conf, correct.astype(np.float64))
    rng = np.random.default_rng(1)
    kernels = (auroc_of, aurc_of, eaurc_of, augrc_of, risk_at_cov80_of, cov_at_risk5_of)
    for b, dtype in ((4, np.uint8), (3, np.int64), (4, np.float64), (2, np.uint8)):
        w = rng.poisson(1.0, (b, 300)).astype(dtype)
        kept, fresh = ranking.sums(w, reuse=True), ranking.sums(w)
        for k in kernels:  # the same operations on the same numbers
            np.testing.assert_array_equal(k(kept), k(fresh), err_msg=k.__name__)


# ----- invariances ---------------------------------------------------------------------------
def test_a_strictly_increasing_transform_changes_nothing() -> None:
    rng = np.random.default_rng(5)
    z = rng.normal(size=(2000, 5)) * 2
    y = rng.integers(0, 5, 2000)
    out = as_outputs(y, logits=z)
    for score in (np.log(out.confidence), 3 * out.confidence**3 - 7, np.arctanh(out.confidence)):
        assert ranking_change(out.confidence, score).same
        for fn in SIX:  # the same tie groups, the same sums: identical
            assert fn(y, logits=z, confidence=score) == fn(y, logits=z), fn.__name__


def _temperature_scaled(logits: np.ndarray, t: float) -> np.ndarray:
    z = logits / t
    z = z - z.max(axis=1, keepdims=True)
    return np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)


def test_temperature_keeps_the_binary_ranking_but_not_always_the_multiclass_one() -> None:
    """Two classes: the top-label confidence is sigmoid(|margin| / T), monotone in the margin
    for every T. Several classes: a sample with a close runner-up and one with many close
    competitors swap places (here A = (0, -1, -1), B = (0, -0.5, -10); at T = 1, 0.576 < 0.622;
    at T = 0.25, 0.965 > 0.881), so temperature scaling can change the selective metrics."""
    rng = np.random.default_rng(0)
    z2 = rng.normal(size=(3000, 2))
    y2 = rng.integers(0, 2, 3000)
    for t in (0.6, 2.5):  # far below 1, confidences round to exactly 1.0: new ties
        p = _temperature_scaled(z2, t)
        assert ranking_change(as_outputs(y2, logits=z2).confidence, p.max(axis=1)).same
        for fn in SIX:  # sigmoid rounding could tie two close margins: not seen here
            assert fn(y2, p) == pytest.approx(fn(y2, logits=z2), abs=1e-12), fn.__name__
    z3 = np.array([[0.0, -1.0, -1.0], [0.0, -0.5, -10.0]])
    y3 = np.array([0, 1])  # A right, B wrong
    assert failure_auroc(y3, logits=z3) == 0.0  # B (wrong) is the more confident
    assert failure_auroc(y3, _temperature_scaled(z3, 0.25)) == 1.0
    change = ranking_change(_temperature_scaled(z3, 1).max(1), _temperature_scaled(z3, 0.25).max(1))
    assert change == type(change)(False, -1.0)


def test_temperature_on_a_shared_prediction_file() -> None:
    """CIFAR-10 ResNet-18 outputs, temperature fitted on the first 5,000 and applied to the
    other 5,000: restricted to two classes the metrics do not move; on ten classes the
    ranking changes a little (what Galil et al. 2023 found to help selective prediction)."""
    from calibkit.calibrators import TemperatureScaling

    data = np.load(shared_path("predictions/cifar10_resnet18.npz"))
    logits, labels = np.log(np.maximum(data["probs"].astype(np.float64), 1e-30)), data["labels"]
    ts = TemperatureScaling().fit(logits[:5000], labels[:5000])
    test_z, test_y = logits[5000:], labels[5000:]
    calibrated = ts.predict_proba(test_z)
    before = as_outputs(test_y, logits=test_z)
    change = ranking_change(before.confidence, calibrated.max(axis=1))
    assert not change.same
    assert 0.95 < change.tau < 1.0
    moved = {fn.__name__: fn(test_y, calibrated) - fn(test_y, logits=test_z) for fn in SIX}
    assert abs(moved["failure_auroc"]) < 0.02
    assert abs(moved["aurc"]) < 0.005
    two = np.isin(test_y, [3, 5])  # cat and dog
    z2, y2 = test_z[two][:, [3, 5]], (test_y[two] == 5).astype(np.int64)
    scaled = _temperature_scaled(z2, float(ts.temperature_))
    assert ranking_change(as_outputs(y2, logits=z2).confidence, scaled.max(axis=1)).same
    for fn in SIX:  # one ranking, and float64 sigmoid of distinct margins: rounding only
        assert fn(y2, scaled) == pytest.approx(fn(y2, logits=z2), abs=1e-12), fn.__name__


def test_digamma_is_scipys() -> None:
    from scipy.special import digamma as scipy_digamma

    from calibkit.metrics.selective import digamma

    x = np.r_[1.0, 1.5, 2.0, 9.99, 10.0, 10.5, np.geomspace(1, 1e7, 200)]
    # a recurrence and a series against SciPy's: float64 rounding (relative to ln x)
    np.testing.assert_allclose(digamma(x), scipy_digamma(x), rtol=0, atol=1e-13)
    big = np.geomspace(16, 1e7, 50)  # no recurrence step: the series at once
    np.testing.assert_allclose(digamma(big), scipy_digamma(big), rtol=0, atol=1e-13)
    # alone or mixed: other array layouts (SIMD body or tail), so to rounding, not bits
    np.testing.assert_allclose(digamma(np.r_[1.0, big])[1:], digamma(big), rtol=1e-15, atol=0)


# ----- edge cases and bad input ------------------------------------------------------------------
def test_all_correct_all_wrong_and_one_sample() -> None:
    y, p = binary([0.9, 0.7, 0.7, 0.6], [1, 1, 1, 1])
    assert (aurc(y, p), eaurc(y, p), augrc(y, p)) == (0.0, 0.0, 0.0)
    assert (risk_at_coverage(y, p), coverage_at_risk(y, p, risk=0.0)) == (0.0, 1.0)
    with pytest.raises(InputError, match=r"both correct and wrong.*4 correct and 0 wrong"):
        failure_auroc(y, p)
    y, p = binary([0.9, 0.7, 0.7, 0.6], [0, 0, 0, 0])
    assert (aurc(y, p), eaurc(y, p), augrc(y, p)) == (1.0, 0.0, 0.5)
    assert (risk_at_coverage(y, p), coverage_at_risk(y, p, risk=0.99)) == (1.0, 0.0)
    with pytest.raises(InputError, match="0 correct and 4 wrong"):
        failure_auroc(y, p)
    for right in (0, 1):
        y, p = binary([0.8], [right])
        assert aurc(y, p) == 1 - right
        assert eaurc(y, p) == 0.0
        assert augrc(y, p) == (1 - right) / 2
        with pytest.raises(InputError, match="for the AUROC"):
            failure_auroc(y, p)


@pytest.mark.parametrize("bad", [0.0, -0.1, 1.5, math.nan, True, "0.5", None])
def test_a_coverage_outside_0_1_is_refused(bad: object) -> None:
    y, p = binary(HAND_CONF, HAND_CORRECT)
    with pytest.raises(InputError, match=r"coverage: expected a number in \(0, 1\]"):
        risk_at_coverage(y, p, coverage=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [-0.1, 1.5, math.nan])
def test_a_risk_outside_0_1_is_refused(bad: float) -> None:
    y, p = binary(HAND_CONF, HAND_CORRECT)
    with pytest.raises(InputError, match=r"risk: expected a number in \[0, 1\]"):
        coverage_at_risk(y, p, risk=bad)


def test_a_bad_confidence_is_refused() -> None:
    y, p = binary(HAND_CONF, HAND_CORRECT)
    with pytest.raises(InputError, match=r"confidence: expected shape \(6,\)"):
        aurc(y, p, confidence=np.ones(5))
    with pytest.raises(InputError, match="confidence: expected finite scores"):
        aurc(y, p, confidence=np.r_[np.ones(5), np.nan])


def test_evaluate_gives_nan_auroc_and_skips_undefined_resamples() -> None:
    """evaluate reports every other metric when the AUROC is undefined, and with one wrong
    prediction among 40 an AUROC interval within [0, 1] (DeLong's variance, the lone wrong
    prediction's placement variance bounded by 1/4)."""
    y, p = binary(HAND_CONF[:3].repeat(10), np.ones(30))
    ev = evaluate(y, probs=p, n_floor_draws=0, resampling=Resampling(n_boot=20))
    assert math.isnan(ev.values["failure_auroc"])
    assert ev.values["aurc"] == 0.0
    conf, correct = _data(40, 0)
    correct[:] = 1
    correct[0] = 0  # one wrong prediction among 40: about 36% of resamples lack it
    y, p = binary(conf, correct)
    ev = evaluate(y, probs=p, n_floor_draws=0, resampling=Resampling(n_boot=200))
    lo, hi = ev.ci["failure_auroc"]
    assert 0.0 <= lo <= ev.values["failure_auroc"] <= hi <= 1.0


def test_the_positive_class_mode_still_ranks_by_the_top_label_confidence() -> None:
    """Binned metrics of a binary problem may read P(y = 1); the ranking metrics always judge
    the top-label prediction by its own confidence."""
    rng = np.random.default_rng(4)
    p = rng.random(500)
    y = (rng.random(500) < p).astype(np.int64)
    ev = evaluate(
        y,
        probs=p,
        n_floor_draws=0,
        binning=Binning(mode="positive_class"),
        resampling=Resampling(n_boot=0),
    )
    for fn in (failure_auroc, aurc, eaurc, augrc):  # the same sums
        assert ev.values[fn.__name__] == fn(y, probs=p), fn.__name__
    assert ev.values["failure_auroc"] != failure_auroc(y, probs=p, confidence=p)


# ----- speed ----------------------------------------------------------------------------------
def test_a_million_samples_take_well_under_a_second() -> None:
    rng = np.random.default_rng(0)
    n = 1_000_000
    conf = rng.random(n)
    correct = (rng.random(n) < conf).astype(np.float64)
    kernels = (auroc_of, aurc_of, eaurc_of, augrc_of, risk_at_cov80_of, cov_at_risk5_of)
    best = math.inf
    for _ in range(2):  # the better of two: the machine is shared
        start = time.perf_counter()
        sums = Ranking(conf, correct).sums(None)  # one sort
        values = [k(sums)[0] for k in kernels]
        best = min(best, time.perf_counter() - start)
    assert all(np.isfinite(values))
    assert best < 0.5, best  # about 0.15 s on one shared core (mostly the sort)
