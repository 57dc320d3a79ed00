"""The calibration / refinement split of NLL and Brier: hand values and invariants."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import log_softmax, softmax

from calibkit.core.errors import InputError
from calibkit.metrics import METRICS, brier, nll, score_decomposition


def _constant() -> tuple[np.ndarray, np.ndarray]:
    """Confidence 0.8 on class 1 for four samples, three of them of class 1."""
    return np.array([1, 1, 1, 0]), np.tile([0.2, 0.8], (4, 1))


def test_hand_computed_split_of_both_scores() -> None:
    # The best temperature moves the confidence from 0.8 to the accuracy 0.75:
    # T = log(0.8 / 0.2) / log(0.75 / 0.25) = log 4 / log 3.
    labels, probs = _constant()
    d = score_decomposition(labels, probs, score="nll")
    raw = -(3 * math.log(0.8) + math.log(0.2)) / 4
    best = -(3 * math.log(0.75) + math.log(0.25)) / 4
    assert d.value == pytest.approx(raw, abs=1e-12)
    assert d.refinement == pytest.approx(best, abs=1e-10)
    assert d.calibration == pytest.approx(raw - best, abs=1e-10)  # 0.007382
    assert d.temperature == pytest.approx(math.log(4) / math.log(3), rel=1e-8)
    b = score_decomposition(labels, probs, score="brier")
    # Brier (summed over both classes): (3 * 2 * 0.2**2 + 2 * 0.8**2) / 4 = 0.38, and
    # (3 * 2 * 0.25**2 + 2 * 0.75**2) / 4 = 0.375; the difference is 2 * (0.8 - 0.75)**2.
    assert b.value == pytest.approx(0.38, abs=1e-12)
    assert b.refinement == pytest.approx(0.375, abs=1e-10)
    assert b.calibration == pytest.approx(0.005, abs=1e-10)
    assert b.temperature == pytest.approx(math.log(4) / math.log(3), rel=1e-6)


@pytest.mark.parametrize("score", ["nll", "brier"])
@pytest.mark.parametrize("scale", [0.3, 1.0, 3.0])
def test_invariants_on_random_logits(score: str, scale: float) -> None:
    rng = np.random.default_rng(int(10 * scale))
    logits = rng.normal(size=(300, 5)) * 2.0
    labels = np.array([rng.choice(5, p=softmax(z)) for z in logits])
    d = score_decomposition(labels, logits=logits * scale, score=score)
    metric = nll if score == "nll" else brier
    assert d.value == pytest.approx(metric(labels, logits=logits * scale), abs=1e-12)
    assert d.calibration >= 0.0
    assert d.calibration + d.refinement == pytest.approx(d.value, abs=1e-15)
    # Rescaling the logits rescales the temperature: the refined model is the same.
    again = score_decomposition(labels, logits=logits * scale * 2.0, score=score)
    assert again.refinement == pytest.approx(d.refinement, abs=1e-9)
    assert again.temperature == pytest.approx(2.0 * d.temperature, rel=1e-6)
    # Already at its best temperature: nothing left to remove, exactly.
    best = score_decomposition(labels, logits=logits * scale / d.temperature, score=score)
    assert best.calibration == 0.0
    assert best.temperature == 1.0
    assert best.refinement == best.value


def test_probabilities_use_their_logarithms_and_weights_act_as_repeats() -> None:
    rng = np.random.default_rng(3)
    logits = rng.normal(size=(50, 3))
    labels = rng.integers(0, 3, 50)
    from_probs = score_decomposition(labels, softmax(logits, axis=1))
    from_logits = score_decomposition(labels, logits=log_softmax(logits, axis=1))
    assert from_probs.refinement == pytest.approx(from_logits.refinement, abs=1e-12)
    counts = rng.integers(0, 4, 50)
    weighted = score_decomposition(labels, logits=logits, sample_weight=counts, score="brier")
    repeated = score_decomposition(
        np.repeat(labels, counts), logits=np.repeat(logits, counts, axis=0), score="brier"
    )
    assert weighted.calibration == pytest.approx(repeated.calibration, abs=1e-12)


def test_registered_parts_and_bad_input() -> None:
    labels, probs = _constant()
    assert METRICS.get("brier_calibration")(labels, probs) == pytest.approx(0.005, abs=1e-10)
    assert METRICS.get("brier_refinement")(labels, probs) == pytest.approx(0.375, abs=1e-10)
    assert not METRICS.get("nll_calibration").in_suite
    with pytest.raises(InputError, match="score"):
        score_decomposition(labels, probs, score="ece")  # type: ignore[arg-type]


def test_all_right_with_growing_margin_stops_at_the_search_range() -> None:
    # Every prediction right: sharpening always helps; the search stops at T = 2**-20.
    d = score_decomposition([0, 1], logits=[[1.0, 0.0], [0.0, 1.0]])
    assert d.temperature == pytest.approx(2.0**-20)
    assert 0.0 < d.calibration <= d.value
