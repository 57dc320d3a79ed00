"""Per-group metrics: a hand-computed case, equality with the global metric on each subset,
the stratified bootstrap, the noise-floor warning and bad groups."""

from __future__ import annotations

import numpy as np
import pytest

from calibkit import Binning, Resampling
from calibkit.core.errors import InputError
from calibkit.metrics import evaluate
from calibkit.metrics.groups import evaluate_groups

PROBS = [[0.2, 0.8], [0.4, 0.6], [0.1, 0.9], [0.3, 0.7]]


def test_hand_computed_tiny_set() -> None:
    # group 0: conf 0.8 right (gap 0.2), 0.6 wrong (gap 0.6) -> ECE 0.4, accuracy 0.5
    # group 1: conf 0.9 right (0.1), 0.7 right (0.3) -> ECE 0.2, accuracy 1
    res = evaluate_groups(
        [1, 0, 1, 1],
        probs=PROBS,
        groups=["x", "x", "y", "y"],
        n_floor_draws=0,
        binning=Binning(n_bins=10),
        resampling=Resampling(n_boot=0),
    )
    assert res.names == ["x", "y"]
    assert res.sizes == [2, 2]
    assert res.values["x"]["ece"] == pytest.approx(0.4, abs=1e-12)  # sums of 2 floats
    assert res.values["y"]["ece"] == pytest.approx(0.2, abs=1e-12)
    assert (res.values["x"]["accuracy"], res.values["y"]["accuracy"]) == (0.5, 1.0)
    assert res.values["y"]["confidence"] == pytest.approx(0.8, abs=1e-12)
    assert res.gap == pytest.approx(0.2, abs=1e-12)
    assert res.worst_group == "x"


def test_each_group_equals_the_global_metric_on_its_subset() -> None:
    rng = np.random.default_rng(1)
    z, y = rng.normal(size=(600, 4)) * 2, rng.integers(0, 4, 600)
    g = rng.integers(0, 3, 600)
    res = evaluate_groups(
        y, logits=z, groups=g, n_floor_draws=50, resampling=Resampling(n_boot=0, seed=3)
    )
    for name in res.names:
        rows = g == int(name)
        ref = evaluate(
            y[rows], logits=z[rows], n_floor_draws=50, resampling=Resampling(n_boot=0, seed=3)
        ).values
        for metric in ("ece", "nll", "accuracy"):
            assert res.values[name][metric] == ref[metric]  # the same code path: exact
        assert res.values[name]["ece_floor"] == ref["ece_floor"]


def test_bootstrap_is_seeded_and_brackets_the_gap() -> None:
    rng = np.random.default_rng(2)
    z, y = rng.normal(size=(400, 3)) * 3, rng.integers(0, 3, 400)
    g = np.repeat(["a", "b"], 200)
    one = evaluate_groups(y, logits=z, groups=g, resampling=Resampling(n_boot=200, seed=5))
    two = evaluate_groups(y, logits=z, groups=g, resampling=Resampling(n_boot=200, seed=5))
    assert one.ci == two.ci
    assert one.gap_ci == two.gap_ci
    for name in one.names:
        lo, hi = one.ci[name]["accuracy"]
        assert lo <= one.values[name]["accuracy"] <= hi


def test_small_group_warning() -> None:
    rng = np.random.default_rng(3)
    p = rng.dirichlet(np.ones(3), size=40)
    y = np.array([rng.choice(3, p=row) for row in p])  # calibrated: ECE is noise
    res = evaluate_groups(y, probs=p, groups=np.arange(40) % 2, resampling=Resampling(n_boot=0))
    assert res.warnings
    assert "noise floor" in res.warnings[0]


@pytest.mark.parametrize(
    ("groups", "cause"),
    [
        ([0, 0, 1], "entries"),
        ([0, 0, 0, 1], "1 sample"),
        ([0, 0, None, 1], "missing"),
        ([0.0, 0.0, np.nan, 1.0], "missing"),
    ],
)
def test_bad_groups(groups, cause: str) -> None:
    with pytest.raises(InputError, match=f"^groups: .*{cause}"):
        evaluate_groups([1, 0, 1, 1], probs=PROBS, groups=groups, resampling=Resampling(n_boot=0))


def test_one_group_alone_is_said_not_silently_a_zero_gap() -> None:
    res = evaluate_groups(
        [1, 0, 1, 1], probs=PROBS, groups=["Paris"] * 4, resampling=Resampling(n_boot=0)
    )
    assert res.gap == 0.0
    assert res.warnings[0] == "one group only ('Paris'): the worst-group gap compares nothing"


@pytest.mark.parametrize("group_gaps", [(0.0, 0.0, 0.0), (0.0, 0.01, 0.06)])
def test_the_intervals_cover_each_group_s_true_ece_and_the_true_gap(
    group_gaps: tuple[float, ...],
) -> None:
    """On simulated models whose groups' true ECEs are known (issue 43): every group's ECE
    interval and the gap's cover their truths in at least 90% of 80 data sets. The
    bootstrap of the plug-in gap, printed before, covered a true gap of 0 in none of them
    (each group's plug-in ECE sits above its truth by its own noise floor)."""
    from calibkit.metrics.simulated import simulate

    covered = {"gap": 0, **{str(g): 0 for g in range(len(group_gaps))}}
    reps = 80
    for rep in range(reps):
        sim = simulate(3_000, 10, seed=rep, shape="groups", group_gaps=group_gaps)
        res = evaluate_groups(
            sim.labels,
            probs=sim.probs,
            groups=sim.groups,
            n_floor_draws=0,
            resampling=Resampling(n_boot=20),
        )
        truth = sim.truth
        assert truth.group_gap is not None
        covered["gap"] += res.gap_ci[0] <= truth.group_gap <= res.gap_ci[1]  # type: ignore[index]
        for g, true_ece in enumerate(truth.group_ece):
            low, high = res.ci[str(g)]["ece"]
            covered[str(g)] += low <= true_ece <= high
            assert low <= res.values[str(g)]["ece"] <= high
    assert min(covered.values()) >= 0.9 * reps, covered
    assert res.estimands["ece"].startswith("the population equal-width 15-bin L1")
    assert "Bonferroni" in res.to_dict()["ci_estimand"]["gap"]


def _sixty_groups(n: int = 6_000, seed: int = 4) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, 4)) * rng.uniform(0.5, 3.0, size=(n, 1))
    y = np.array([rng.choice(4, p=np.exp(r) / np.exp(r).sum()) for r in z])
    g = np.array([f"task{i % 60:02d}" for i in rng.permutation(n)])
    return z, y, g


def test_every_groups_interval_is_the_one_evaluate_prints_on_its_rows() -> None:
    """The one-pass intervals (issue #44, item 4) are those of each group's own rows: the
    ECE's ece_interval widened to hold the value, NLL and accuracy Student-t (as evaluate
    prints them), and the gap's Bonferroni interval equal to true_gap_interval's."""
    from calibkit.core.outputs import as_outputs
    from calibkit.metrics.analytic import mean_interval
    from calibkit.metrics.groups import true_gap_interval
    from calibkit.metrics.intervals import ece_interval

    z, y, g = _sixty_groups()
    res = evaluate_groups(y, logits=z, groups=g, n_floor_draws=0, resampling=Resampling(n_boot=10))
    parts = []
    for name in res.names:
        rows = g == name
        part = as_outputs(y[rows], logits=z[rows])
        parts.append(part)
        true = ece_interval(part)
        value = res.values[name]["ece"]
        assert res.ci[name]["ece"] == (min(true.low, value), max(true.high, value))
        right = (z[rows].argmax(1) == y[rows]).astype(float)
        assert res.ci[name]["accuracy"] == mean_interval(right, 0.95)  # exactly
        assert res.ci[name]["nll"][0] < res.values[name]["nll"] < res.ci[name]["nll"][1]
    assert res.gap_ci == true_gap_interval(parts, res.gap, 15, "top_label", 0.95)
    assert "Student-t" in res.estimands["accuracy"]


def test_group_accuracy_interval_covers_the_true_accuracy() -> None:
    """200 data sets of two groups whose true accuracies are 0.6 and 0.9: each group's 95%
    accuracy interval covers its truth in about 95% of them."""
    rng = np.random.default_rng(11)
    truth = {"a": 0.6, "b": 0.9}
    covered = {"a": 0, "b": 0}
    for _ in range(200):
        g = np.repeat(["a", "b"], 150)
        right = rng.uniform(size=300) < np.where(g == "a", truth["a"], truth["b"])
        conf = np.full(300, 0.8)
        probs = np.stack([conf, 1 - conf], axis=1)
        res = evaluate_groups(np.where(right, 0, 1), probs=probs, groups=g,
                              n_floor_draws=0, resampling=Resampling(n_boot=1))  # fmt: skip
        for name, p in truth.items():
            lo, hi = res.ci[name]["accuracy"]
            covered[name] += lo <= p <= hi
    assert 0.90 <= covered["a"] / 200 <= 0.99
    assert 0.90 <= covered["b"] / 200 <= 0.99
