"""Tests of inductive Venn-Abers calibration against its definition.

``p0`` (``p1``) is the isotonic regression, at the new score, of the calibration points
plus the new point with outcome 0 (1): scikit-learn's ``IsotonicRegression`` refitted for
every new score is the reference.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.isotonic import IsotonicRegression

from calibkit.calibrators import VennAbers
from calibkit.calibrators.logit.venn_abers import block_starts, place_of, venn_abers_values
from tests.calibrators.problems import random_problem, softmax


def _reference(score: np.ndarray, outcome: np.ndarray, new: float, label: float) -> float:
    iso = IsotonicRegression().fit(np.append(score, new), np.append(outcome, label))
    return float(iso.predict([new])[0])


def test_hand_computed_gap() -> None:
    # scores .1 .3 .6 .8 with outcomes 0 1 0 1; a new score 0.5 falls between .3 and .6:
    # with outcome 0 the run 1, 0, 0 pools to 1/3; with outcome 1 the run 1, 1, 0 to 2/3
    s = np.array([0.1, 0.3, 0.6, 0.8])
    va = VennAbers().fit(np.log(np.column_stack([1 - s, s])), [0, 1, 0, 1])
    p0, p1 = va.interval(np.log([[0.5, 0.5]]))
    assert (p0[0, 1], p1[0, 1]) == pytest.approx((1 / 3, 2 / 3))
    # merged: (2/3) / (1 - 1/3 + 2/3) = 1/2
    assert va.predict_proba(np.log([[0.5, 0.5]]))[0] == pytest.approx([0.5, 0.5])


def test_hand_computed_ends_never_give_zero() -> None:
    # scores .1 .2 .7 .8, outcomes 0 0 1 1; at .1: p0 = 0 (pooled with the 0), p1: the new 1
    # pools with .1's 0 and .2's 0 -> 1/3; merged (1/3) / (1 + 1/3) = 1/4
    z = np.log([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.2, 0.8]])
    va = VennAbers().fit(z, [0, 0, 1, 1])
    p0, p1 = va.interval(z[:1])
    assert (p0[0, 1], p1[0, 1]) == (0.0, pytest.approx(1 / 3))
    assert va.predict_proba(z)[:, 1] == pytest.approx([1 / 4, 1 / 3, 2 / 3, 3 / 4])


@pytest.mark.parametrize("label", [0.0, 1.0])
def test_every_place_matches_a_refitted_isotonic_regression(label: float) -> None:
    rng = np.random.default_rng(1)
    score = rng.integers(0, 30, 400) / 30.0  # ties: new scores on a calibration score
    outcome = (rng.random(400) < score).astype(np.float64)
    x, values = venn_abers_values(score, outcome, label)
    new = np.concatenate([x, (x[:-1] + x[1:]) / 2, [-0.1, 1.1]])
    expected = [_reference(score, outcome, t, label) for t in new]
    np.testing.assert_allclose(values[place_of(new, x)], expected, rtol=0, atol=1e-12)


def test_multiclass_intervals_match_the_definition() -> None:
    z, y = random_problem(600, 4, seed=5)
    va = VennAbers().fit(z[:400], y[:400])
    p = softmax(z)
    p0, p1 = va.interval(z[400:430])
    for k in range(4):
        outcome = (y[:400] == k).astype(np.float64)
        for i in range(30):
            ref0 = _reference(p[:400, k], outcome, p[400 + i, k], 0.0)
            ref1 = _reference(p[:400, k], outcome, p[400 + i, k], 1.0)
            assert (p0[i, k], p1[i, k]) == (pytest.approx(ref0), pytest.approx(ref1))


def test_multiclass_merge_then_normalise() -> None:
    z, y = random_problem(600, 4, seed=5)
    va = VennAbers().fit(z[:400], y[:400])
    p0, p1 = va.interval(z[400:])
    merged = p1 / (1 - p0 + p1)
    np.testing.assert_allclose(va.predict_proba(z[400:]), merged / merged.sum(1, keepdims=True))
    assert np.all(p0 <= p1)
    assert va.predict_proba(z[400:]).min() > 0


def test_binary_fits_class_one_only() -> None:
    z, y = random_problem(300, 2, seed=6)
    va = VennAbers().fit(z, y)
    assert len(va.scores_) == 1
    p0, p1 = va.interval(z)
    np.testing.assert_allclose(p0[:, 0], 1 - p1[:, 1])
    out = va.predict_proba(z)
    np.testing.assert_allclose(out[:, 1], p1[:, 1] / (1 - p0[:, 1] + p1[:, 1]))
    np.testing.assert_allclose(out.sum(axis=1), 1.0)


def test_prefix_blocks_are_those_of_pool_adjacent_violators() -> None:
    # prefix 0..3 of outcomes 1, 0, 0, 1: pools (1, 0, 0) -> block start 0 at u = 1, 2
    starts = block_starts(np.ones(4), np.array([1.0, 0.0, 0.0, 1.0]))
    assert starts.tolist() == [0, 0, 0, 3]
