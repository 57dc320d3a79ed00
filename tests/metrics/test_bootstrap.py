"""bootstrap_ci: weighted and resampling paths agree, seeded, and matches the suite."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from calibkit import Resampling
from calibkit.core.errors import InputError
from calibkit.core.outputs import as_outputs
from calibkit.core.progress import progress_of
from calibkit.metrics import MetricSuite, accuracy, ece, evaluate
from calibkit.metrics.bootstrap import bootstrap_ci


def _data(n: int = 600, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(4) * 0.4, size=n)
    y = (p.cumsum(1) < rng.random((n, 1))).sum(1).clip(0, 3)
    return y, p


def test_weighted_and_resampled_paths_give_the_same_interval() -> None:
    y, p = _data()

    def ece_without_weights(labels: np.ndarray, probs: np.ndarray) -> float:
        return ece(labels, probs=probs)

    a = bootstrap_ci(ece, y, probs=p, resampling=Resampling(n_boot=100, seed=3))
    b = bootstrap_ci(ece_without_weights, y, probs=p, resampling=Resampling(n_boot=100, seed=3))
    assert a.estimate == b.estimate
    assert a.low == pytest.approx(b.low, abs=1e-12)
    assert a.high == pytest.approx(b.high, abs=1e-12)


def test_matches_the_suite_and_is_seeded() -> None:
    y, p = _data()
    ci = bootstrap_ci(accuracy, y, probs=p, resampling=Resampling(n_boot=200, seed=1))
    again = bootstrap_ci(accuracy, y, probs=p, resampling=Resampling(n_boot=200, seed=1))
    assert ci == again
    suite = MetricSuite.from_outputs(as_outputs(y, probs=p))
    boot = suite.bootstrap(Resampling(n_boot=200, seed=1), names=("accuracy",))  # the same draws
    assert (ci.low, ci.high) == pytest.approx(boot["accuracy"], abs=1e-12)
    res = evaluate(y, probs=p, n_floor_draws=0, resampling=Resampling(n_boot=200, seed=1))
    assert ci.estimate == res.values["accuracy"]
    # evaluate prints accuracy's analytic interval (a mean): about the bootstrap's
    low, high = res.ci["accuracy"]
    assert low == pytest.approx(ci.low, abs=0.01)
    assert high == pytest.approx(ci.high, abs=0.01)


def test_kwargs_reach_the_metric_and_logits_work() -> None:
    y, p = _data()
    z = np.log(p)
    ci = bootstrap_ci(ece, y, logits=z, n_bins=5, resampling=Resampling(n_boot=50))
    assert ci.estimate == pytest.approx(ece(y, probs=p, n_bins=5), abs=1e-12)


def test_bad_arguments_name_themselves() -> None:
    y, p = _data(50)
    with pytest.raises(InputError, match=r"^n_boot: expected an integer >= 1"):
        bootstrap_ci(ece, y, probs=p, resampling=Resampling(n_boot=0))
    with pytest.raises(InputError, match=r"^metric:"):
        bootstrap_ci(3, y, probs=p)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("field", "value"),
    [("n_boot", -1), ("n_boot", 1.5), ("level", 0.0), ("level", 1.0), ("seed", -1), ("seed", True)],
)
def test_a_bad_resampling_value_names_its_field(field: str, value: object) -> None:
    with pytest.raises(InputError, match=f"^{field}: expected"):
        Resampling(**{field: value})  # type: ignore[arg-type]


def test_the_resampling_object_is_what_reaches_the_bootstrap() -> None:
    """One Resampling gives the same interval through evaluate, the suite and the metric
    function (the same draws of the same seed); another seed gives another."""
    y, p = _data(400)
    chosen = Resampling(n_boot=150, level=0.9, seed=11)
    direct = bootstrap_ci(accuracy, y, probs=p, resampling=chosen)
    suite = MetricSuite.from_outputs(as_outputs(y, probs=p))
    via_suite = suite.bootstrap(chosen, names=("accuracy",))["accuracy"]
    assert (direct.low, direct.high) == pytest.approx(via_suite, rel=1e-9)
    assert (direct.level, direct.n_boot) == (0.9, 150)
    res = evaluate(y, probs=p, resampling=chosen, n_floor_draws=0)
    assert res.level == 0.9  # the object's level reaches the printed intervals
    assert (
        res.ci["risk_at_cov80"]
        == suite.bootstrap(chosen, names=("risk_at_cov80",))["risk_at_cov80"]
    )
    other = bootstrap_ci(accuracy, y, probs=p, resampling=Resampling(n_boot=150, seed=12))
    assert (other.low, other.high) != (direct.low, direct.high)


def test_the_bootstrap_reports_its_replicates_block_by_block(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A step per block of the bootstrap's cells per N replicates, the last one short: on
    big files the bootstrap takes seconds (a compare at 100 classes: one per method)."""
    from calibkit.metrics import suite as suite_module

    y, p = _data(20_000)
    with caplog.at_level(logging.DEBUG, logger="calibkit.metrics.suite"):
        evaluate(y, probs=p, resampling=Resampling(n_boot=200, seed=0))
    events = [e for r in caplog.records if r.levelno == logging.DEBUG if (e := progress_of(r))]
    block = suite_module.block_rows(20_000)  # 16 replicates a block
    assert block == suite_module._BLOCK_MIN_ROWS
    assert [e.step for e in events] == [*range(0, 200, block), 200]
    assert {e.total for e in events} == {200}
    assert events[0].label == "bootstrap (200 replicates of 20,000 samples)"
