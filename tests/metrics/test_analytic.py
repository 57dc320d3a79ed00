"""Analytic intervals (calibkit.metrics.analytic): the t quantile, the means' Student-t
intervals and the ranking metrics' influence-function intervals: their values, what
evaluate reports of them, and their coverage of a known truth over repeated draws."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from calibkit import Resampling
from calibkit.core.errors import InputError
from calibkit.core.outputs import as_outputs
from calibkit.metrics import MetricSuite, evaluate
from calibkit.metrics.analytic import RankInfluence, mean_interval, t_quantile
from calibkit.metrics.info import METRICS, MetricInfo
from calibkit.metrics.kernels import BinNorm, RankStatistic, SampleMean
from calibkit.metrics.scores import accuracy
from calibkit.metrics.selective import (
    augrc,
    augrc_of,
    aurc,
    aurc_of,
    auroc_of,
    eaurc,
    eaurc_of,
    failure_auroc,
    risk_at_cov80_of,
)
from calibkit.metrics.simulated import simulate

MEANS = ("accuracy", "nll", "brier", "entropy", "confidence")
RANKED = ("failure_auroc", "aurc", "eaurc", "augrc")


def test_t_quantile_is_scipys() -> None:
    for df in [*range(1, 60), 199, 200, 201, 1000, 10**6]:
        for p in (0.5, 0.75, 0.9, 0.95, 0.975, 0.995, 0.9995):
            want = stats.t.ppf(p, df)
            assert t_quantile(p, df) == pytest.approx(want, rel=1e-9, abs=1e-12), (df, p)
    assert t_quantile(0.975, math.inf) == pytest.approx(stats.norm.ppf(0.975), rel=1e-12)
    for bad in ((0.4, 3), (1.0, 3), (0.9, 0), (0.9, 2.5)):
        with pytest.raises(InputError):
            t_quantile(*bad)


def test_mean_interval_is_the_t_interval() -> None:
    v = np.random.default_rng(0).exponential(size=50)
    lo, hi = mean_interval(v, 0.9)
    want = stats.t.interval(0.9, 49, loc=v.mean(), scale=stats.sem(v))
    assert (lo, hi) == pytest.approx(want, rel=1e-9)
    assert all(math.isnan(x) for x in mean_interval(v[:1], 0.9))


def _delong(score: np.ndarray, correct: np.ndarray) -> tuple[float, float]:
    """DeLong's AUROC and standard error by the pairs themselves (O(n^2))."""
    pos, neg = score[correct == 1], score[correct == 0]
    psi = (pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])
    v10, v01 = psi.mean(axis=1), psi.mean(axis=0)
    return float(psi.mean()), math.sqrt(v10.var(ddof=1) / pos.size + v01.var(ddof=1) / neg.size)


@pytest.mark.parametrize("ties", [False, True])
def test_rank_influence_estimates_are_the_metrics(ties: bool) -> None:
    sim = simulate(600, 4, seed=3, shape="platt")
    y, p = sim.labels, np.round(sim.probs, 2) if ties else sim.probs
    p = p / p.sum(axis=1, keepdims=True)
    out = as_outputs(y, probs=p)
    ranks = RankInfluence(out.confidence, out.correct)
    for function, metric in (
        (auroc_of, failure_auroc),
        (aurc_of, aurc),
        (eaurc_of, eaurc),
        (augrc_of, augrc),
    ):
        value, se = ranks.estimate_se(function)
        assert value == pytest.approx(metric(y, p), rel=1e-12, abs=1e-15), metric.__name__
        assert 0.0 < se < 0.1
    value, se = ranks.estimate_se(auroc_of)
    assert (value, se) == pytest.approx(_delong(out.confidence, out.correct), rel=1e-12)


def test_the_influence_standard_errors_are_the_jackknifes() -> None:
    """The standard error of AURC, E-AURC and AUGRC from their influence functions is close
    to the jackknife's (leave one out, n times): the derivation checked numerically."""
    sim = simulate(400, 3, seed=7, shape="platt", params=(0.6, 0.2))
    out = as_outputs(sim.labels, probs=sim.probs)
    ranks = RankInfluence(out.confidence, out.correct)
    n = out.n_samples
    for function, metric in ((aurc_of, aurc), (eaurc_of, eaurc), (augrc_of, augrc)):
        loo = np.array(
            [metric(np.delete(sim.labels, i), np.delete(sim.probs, i, axis=0)) for i in range(n)]
        )
        jackknife = math.sqrt((n - 1) / n * np.sum((loo - loo.mean()) ** 2))
        assert ranks.estimate_se(function)[1] == pytest.approx(jackknife, rel=0.05), function


def test_evaluate_reports_the_analytic_intervals_and_their_estimands() -> None:
    sim = simulate(2000, 5, seed=1, shape="platt")
    res = evaluate(
        sim.labels, probs=sim.probs, n_floor_draws=0, resampling=Resampling(n_boot=100, seed=0)
    )
    suite = MetricSuite.from_outputs(as_outputs(sim.labels, probs=sim.probs), names=MEANS)
    for name in ("accuracy", "nll", "brier", "entropy"):
        assert METRICS.get(name).interval == "mean"
        assert res.ci[name] == suite.mean_intervals((name,), 0.95)[name]
    estimand = res.to_dict()["ci_estimand"]
    assert estimand["nll"] == "the population NLL (a mean of per-sample terms: Student-t interval)"
    assert estimand["failure_auroc"] == (
        "the population Failure AUROC (normal interval, DeLong's variance)"
    )
    assert "influence function" in estimand["aurc"]
    boot = [n for n in res.values if n in METRICS and METRICS.get(n).interval == "bootstrap"]
    assert boot  # the risk and coverage points at least
    assert all(estimand[n].endswith("(percentile bootstrap)") for n in boot)
    assert list(res.ci) == [n for n in res.values if n in res.ci]  # report order
    for name in RANKED:
        assert METRICS.get(name).interval == "influence"
        lo, hi = res.ci[name]
        assert 0.0 <= lo < res.values[name] < hi <= 1.0, name
    assert evaluate(sim.labels, probs=sim.probs, resampling=Resampling(n_boot=0)).ci == {}


def test_entries_declare_only_intervals_they_can_have() -> None:
    with pytest.raises(InputError, match="a SampleMean kernel"):
        MetricInfo("toy", "Toy", "error", True, "min", False, accuracy,
                   kernel=BinNorm("l1", "width"), interval="mean")  # fmt: skip
    with pytest.raises(InputError, match="known influence function"):
        MetricInfo("toy", "Toy", "score", True, "min", False, accuracy,
                   kernel=RankStatistic(risk_at_cov80_of), interval="influence")  # fmt: skip
    with pytest.raises(InputError, match="known influence function"):
        MetricInfo("toy", "Toy", "score", True, "min", False, accuracy,
                   kernel=SampleMean("nll"), interval="influence")  # fmt: skip


@pytest.mark.parametrize(
    ("case", "n"),
    [("overconfident", 500), ("overconfident", 4000), ("calibrated", 1000), ("platt", 2000)],
)
def test_analytic_intervals_cover_the_truth(case: str, n: int) -> None:
    """Over 200 simulated test sets, each metric's 95% interval holds the population value:
    exact for accuracy and mean confidence (calibkit.metrics.simulated), from 2,000,000
    samples for the others (their own noise is 3% of the intervals' half-width at n = 4,000).
    At least 90% (a miss rate 3 standard errors of 200 draws above 5%) and at most 99.5%."""
    kw = {
        "overconfident": {"shape": "constant", "gap": 0.1, "low": 0.3},
        "calibrated": {"shape": "constant", "gap": 0.0},
        "platt": {"shape": "platt", "params": (0.5, 0.0)},
    }[case]
    big = simulate(2_000_000, 10, seed=10**6, **kw)  # type: ignore[arg-type]
    out = as_outputs(big.labels, probs=big.probs)
    truth = MetricSuite.from_outputs(out, names=MEANS).compute(names=("nll", "brier", "entropy"))
    ranks = RankInfluence(out.confidence, out.correct)
    truth |= {name: ranks.estimate_se(METRICS.get(name).kernel.function)[0] for name in RANKED}  # type: ignore[union-attr]
    truth |= {"accuracy": big.truth.accuracy, "confidence": big.truth.confidence}
    del big, out, ranks
    reps = 200
    covered = dict.fromkeys(truth, 0)
    for rep in range(reps):
        sim = simulate(n, 10, seed=rep, **kw)  # type: ignore[arg-type]
        suite = MetricSuite.from_outputs(as_outputs(sim.labels, probs=sim.probs), names=MEANS)
        ci = suite.mean_intervals(MEANS, 0.95) | suite.influence_intervals(RANKED, 0.95)
        for name, (lo, hi) in ci.items():
            covered[name] += lo <= truth[name] <= hi
    rate = {name: c / reps for name, c in covered.items()}
    assert all(0.90 <= r <= 0.995 for r in rate.values()), rate
