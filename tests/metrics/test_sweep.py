"""ECE_sweep (Roelofs et al. 2022, :mod:`calibkit.metrics.sweep`): a value by hand, a plain
reference, the paper's claims on calibrated data, bad input, and ``calibkit evaluate
--extra ece_sweep``."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest

from calibkit.cli import main
from calibkit.core.errors import InputError
from calibkit.metrics import ece
from calibkit.metrics.simulated import simulate
from calibkit.metrics.sweep import ece_sweep, sweep_bins


def reference(conf: list[float], outcome: list[float]) -> tuple[int, float, float]:
    """``b*`` and the L1 and L2 errors in plain loops. For b = 1, 2, ..., N: cut the sorted
    confidences at ``k N / b`` rounded to the nearer sample (half down), moved to the nearer
    end of a run of tied confidences (the lower end on a tie), never before the previous
    cut; stop at the first b whose non-empty bins' accuracies fall, and keep the one
    before."""
    pairs = sorted(zip(conf, outcome, strict=True), key=lambda p: p[0])
    c = [p[0] for p in pairs]
    n = len(c)

    def bins(b: int) -> list[list[tuple[float, float]]]:
        cuts = [0]
        for k in range(1, b):
            t = n * k / b
            raw = min(math.floor(t), n - 1)
            start, end = raw, raw + 1
            while start > 0 and c[start - 1] == c[raw]:
                start -= 1
            while end < n and c[end] == c[raw]:
                end += 1
            cuts.append(max(cuts[-1], end if abs(end - t) < abs(start - t) else start))
        cuts.append(n)
        return [pairs[lo:hi] for lo, hi in itertools.pairwise(cuts)]

    def rising(found: list[list[tuple[float, float]]]) -> bool:
        acc = [sum(o for _, o in one) / len(one) for one in found if one]
        return all(a <= b for a, b in itertools.pairwise(acc))

    best = bins(1)
    for b in range(2, n + 1):
        found = bins(b)
        if not rising(found):
            break
        best = found
    l1 = l2 = 0.0
    for one in best:
        if one:
            gap = sum(o for _, o in one) / len(one) - sum(x for x, _ in one) / len(one)
            l1, l2 = l1 + len(one) / n * abs(gap), l2 + len(one) / n * gap**2
    return len(best), l1, math.sqrt(l2)


def test_a_value_by_hand() -> None:
    # Sorted confidences 0.55 0.6 0.65 0.7 0.8 0.9, right (1) or wrong (0): 0 1 1 0 1 1.
    # b = 1: one bin, accuracy 4/6.
    # b = 2: cut at 3: {0.55 0.6 0.65} 2/3, {0.7 0.8 0.9} 2/3: equal, so rising.
    # b = 3: cuts at 2, 4: {0.55 0.6} 1/2, {0.65 0.7} 1/2, {0.8 0.9} 1: rising.
    # b = 4: targets 1.5, 3, 4.5 round half down to 1, 3, 4: {0.55} 0, {0.6 0.65} 1,
    #        {0.7} 0: falls, so b* = 3.
    # ECE over b = 3: gaps |0.5 - 0.575| = 0.075, |0.5 - 0.675| = 0.175, |1 - 0.85| = 0.15,
    # each bin a third: (0.075 + 0.175 + 0.15) / 3 = 0.4 / 3; L2: sqrt(0.05875 / 3).
    labels = [0, 1, 1, 0, 1, 1]
    probs = [[1 - c, c] for c in (0.55, 0.6, 0.65, 0.7, 0.8, 0.9)]
    assert sweep_bins(labels, probs) == 3
    assert ece_sweep(labels, probs) == pytest.approx(0.4 / 3, rel=1e-9)
    assert ece_sweep(labels, probs, norm="l2") == pytest.approx(math.sqrt(0.05875 / 3), rel=1e-9)


@pytest.mark.parametrize(
    ("n", "ties"),
    [(1, False), (2, False), (7, True), (50, False), (50, True), (300, True), (2000, False)],
)
def test_the_reference_agrees_on_random_data(n: int, ties: bool) -> None:
    """Several sizes, with and without ties (rounded confidences: some b leave bins empty,
    and where the runs of ties rise the sweep goes on to b = N)."""
    rng = np.random.default_rng(n + 7 * ties)
    p1 = rng.beta(4, 2, n)
    p1 = np.round(p1, 1) if ties else p1  # ties: about 10 distinct confidences
    y = (rng.random(n) < p1**1.5).astype(int)  # a little over-confident
    probs = np.stack([1 - p1, p1], axis=1)
    for mode in ("top_label", "positive_class"):
        conf = p1 if mode == "positive_class" else probs.max(axis=1)
        outcome = y == 1 if mode == "positive_class" else probs.argmax(axis=1) == y
        b, l1, l2 = reference(conf.tolist(), outcome.astype(float).tolist())
        assert sweep_bins(y, probs, mode=mode) == b
        for norm, value in (("l1", l1), ("l2", l2)):
            got = ece_sweep(y, probs, mode=mode, norm=norm)
            assert got == pytest.approx(value, rel=1e-9, abs=1e-12)


def test_every_answer_right_keeps_one_bin_a_sample() -> None:
    """The runs of ties rise, so every b rises: b* = N, as the plain sweep finds."""
    conf = np.linspace(0.5, 1.0, 40)
    y = np.ones(40, dtype=int)
    probs = np.stack([1 - conf, conf], axis=1)
    assert sweep_bins(y, probs) == reference(conf.tolist(), [1.0] * 40)[0] == 40
    assert ece_sweep(y, probs) == pytest.approx(float(np.mean(1 - conf)), rel=1e-9)


def test_integer_weights_are_repeated_rows() -> None:
    rng = np.random.default_rng(3)
    p1 = rng.beta(4, 2, 300)
    y = (rng.random(300) < p1).astype(int)
    w = rng.integers(0, 4, 300)  # zero weights too
    probs = np.stack([1 - p1, p1], axis=1)
    rows = np.repeat(np.arange(300), w)
    assert sweep_bins(y, probs, sample_weight=w) == sweep_bins(y[rows], probs[rows])
    weighted = ece_sweep(y, probs, sample_weight=w)
    assert weighted == pytest.approx(ece_sweep(y[rows], probs[rows]), rel=1e-9)
    # equal weights are no weights (divided by the smallest, they sum as counts do)
    assert sweep_bins(y, probs, sample_weight=np.full(300, 0.1)) == sweep_bins(y, probs)


def test_less_biased_than_15_bins_on_a_calibrated_model_and_more_bins_with_more_data() -> None:
    """The paper's claim: on a perfectly calibrated model (true error 0) the sweep's error is
    nearer 0 than the 15-bin ECE at small n; and b* grows with n."""
    for n in (200, 500):
        sims = [simulate(n, 10, seed=s, gap=0.0, confidence=(5, 2)) for s in range(30)]
        sweep = np.mean([ece_sweep(s.labels, s.probs) for s in sims])
        binned = np.mean([ece(s.labels, s.probs) for s in sims])
        assert sweep < 0.8 * binned, (n, sweep, binned)  # 0.040 vs 0.064, 0.031 vs 0.045
    chosen = [
        np.mean([sweep_bins(*_calibrated(n, s)) for s in range(10)]) for n in (200, 2000, 20000)
    ]
    assert chosen[0] < chosen[1] < chosen[2], chosen  # about 5, 8, 15


def _calibrated(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    sim = simulate(n, 10, seed=seed, gap=0.0, confidence=(5, 2))
    return sim.labels, sim.probs


@pytest.mark.parametrize(
    ("argument", "options"),
    [
        ("norm", {"norm": "l3"}),
        ("mode", {"mode": "positive"}),
        ("sample_weight", {"sample_weight": [1.0, -1.0]}),
        ("probs", {"probs": [[0.5, 0.6], [0.5, 0.5]]}),
        ("labels", {"labels": [0, 2]}),
    ],
)
def test_bad_input_is_one_input_error_naming_the_argument(
    argument: str, options: dict[str, object]
) -> None:
    given: dict[str, object] = {"labels": [0, 1], "probs": [[0.8, 0.2], [0.3, 0.7]]} | options
    with pytest.raises(InputError) as err:
        ece_sweep(**given)
    assert err.value.argument == argument


def test_calibkit_evaluate_extra_ece_sweep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    y, probs = _calibrated(500, 0)
    np.savez("preds.npz", probs=probs, labels=y)
    argv = ["evaluate", "preds.npz", "--n-boot", "0", "--extra", "ece_sweep"]
    capsys.readouterr()
    assert main([*argv, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ece_sweep"] == pytest.approx(ece_sweep(y, probs), rel=1e-9)
    assert "ece_sweep" not in out["ci"]  # no interval: none was measured to cover the truth
    assert main(argv) == 0
    assert "ECE sweep" in capsys.readouterr().out
