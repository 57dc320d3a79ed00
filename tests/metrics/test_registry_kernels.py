"""The metric registry drives every engine: registering a metric with its kernel is the only
step to reach ``evaluate``, the bootstrap (both paths), the noise floor, the streaming metric,
``evaluate --extra`` and the reports."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from calibkit import Binning, Resampling
from calibkit.cli import main
from calibkit.core.errors import InputError
from calibkit.core.outputs import ClassifierOutputs, as_outputs
from calibkit.metrics import (
    METRICS,
    BinNorm,
    MetricInfo,
    MetricSuite,
    SampleMean,
    StreamingCalibration,
    brier_decomposition,
    evaluate,
    register_metric,
    rmsce,
)
from calibkit.metrics.resampled import POISSON_MIN_N
from calibkit.reporting.tables import comparison_tables, format_evaluation_table
from calibkit.workflows.compare import compare


def _top(out: ClassifierOutputs) -> np.ndarray:
    return np.asarray(out.probs.max(axis=1), dtype=np.float64)


def _mean_top(labels: object, probs: object = None, *, logits: object = None) -> float:
    return float(_top(as_outputs(labels, probs, logits=logits)).mean())


def _rms_mass(labels: object, probs: object = None, **kw: object) -> float:
    return float("nan")  # the engines never call it: they compute from the kernel


TOY = (
    MetricInfo("mean_top", "Mean top prob.", "score", False, None, False, _mean_top,
               kernel=SampleMean(_top)),
    # an L2 norm of equal-mass bins, with a noise floor: no engine has a branch for it
    MetricInfo("rmsce_mass", "Adaptive RMSCE", "error", True, "min", True, _rms_mass,
               kernel=BinNorm("l2", "mass")),
    MetricInfo("rmsce_twin", "RMSCE twin", "error", True, "min", True, rmsce,
               kernel=BinNorm("l2"), interval="true_error"),
)  # fmt: skip


@pytest.fixture
def toys() -> Iterator[None]:
    for info in TOY:
        register_metric(info)
    try:
        yield
    finally:
        for info in TOY:
            METRICS.unregister(info.name)


def _data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, 4)) * 2.0
    return z, rng.integers(0, 4, n)


def test_a_registered_metric_reaches_evaluate_bootstrap_floor_and_stream(toys: None) -> None:
    z, y = _data(600)
    ev = evaluate(
        y,
        logits=z,
        n_floor_draws=20,
        binning=Binning(n_bins=10),
        resampling=Resampling(n_boot=40, seed=0),
    )
    out = as_outputs(y, logits=z)
    # a mean of a per-sample term: exact up to the summation order
    assert ev.values["mean_top"] == pytest.approx(_top(out).mean(), rel=1e-12)
    # a new norm of new bins with a floor; the twin of a built-in equals it
    assert ev.values["rmsce_twin"] == ev.values["rmsce"]
    assert ev.values["rmsce_mass"] > 0
    assert 0 < ev.values["rmsce_mass_floor"] < 1
    assert ev.values["rmsce_twin_floor"] > 0
    for name in ("mean_top", "rmsce_mass", "rmsce_twin"):
        lo, hi = ev.ci[name]
        assert lo <= hi
    assert ev.ci["rmsce_twin"] == ev.ci["rmsce"]  # the same data, the same true-error interval
    table = format_evaluation_table(ev)
    assert "Mean top prob." in table
    assert "Adaptive RMSCE" in table
    stream = StreamingCalibration(n_bins=10)
    stream.update(y[:250], logits=z[:250])
    stream.update(y[250:], logits=z[250:])
    res = stream.compute()
    assert "rmsce_mass" not in res  # equal-mass bins do not stream
    # sums of 2 batches vs one pass: rounding only
    assert res["mean_top"] == pytest.approx(ev.values["mean_top"], rel=1e-12)
    assert res["rmsce_twin"] == pytest.approx(ev.values["rmsce"], rel=1e-12)


@pytest.mark.parametrize("n", [40_000, POISSON_MIN_N])  # sorted (multinomial, Poisson) paths
def test_the_large_n_bootstrap_computes_registered_metrics(toys: None, n: int) -> None:
    z, y = _data(n, seed=1)
    suite = MetricSuite.from_outputs(as_outputs(y, logits=z), n_bins=15)
    names = ("mean_top", "rmsce_mass", "rmsce_twin", "rmsce", "aece")
    ci = suite.bootstrap(Resampling(n_boot=8, seed=0), names=names)
    assert set(ci) == set(names)
    assert ci["rmsce_twin"] == ci["rmsce"]
    values = suite.compute()
    for name in ("mean_top", "rmsce_mass"):
        lo, hi = ci[name]
        assert lo <= hi
        assert abs(values[name] - (lo + hi) / 2) < 0.05


def test_a_registered_metric_reaches_the_comparison_tables(toys: None) -> None:
    z, y = _data(400)
    cal, test = as_outputs(y[:200], logits=z[:200]), as_outputs(y[200:], logits=z[200:])
    comp = compare(cal, test, ["temperature"], resampling=Resampling(n_boot=10))
    tables = {t.title: t for t in comparison_tables(comp)}
    scores = tables["Accuracy and proper scores on the test part"]
    binned = tables["Binned calibration errors on the test part"]
    assert "Mean top prob." in scores.header
    # an L2 norm of bins: placed by its kernel with the binned errors, after the RMSCE
    header = list(binned.header)
    assert {"Adaptive RMSCE", "Adaptive RMSCE floor"} <= set(header)
    assert header.index("Adaptive RMSCE") > header.index("RMSCE")


def test_a_registered_extra_reaches_evaluate_extra(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    z, y = _data(300)
    np.savez(tmp_path / "p.npz", logits=z, labels=y)
    argv = ["evaluate", str(tmp_path / "p.npz"), "--n-boot", "0", "--format", "json"]
    capsys.readouterr()
    assert main([*argv, "--n-bins", "10", "--extra", "brier_reliability"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["brier_reliability"] == brier_decomposition(y, logits=z, n_bins=10).reliability
    info = MetricInfo("toy_extra", "Toy", "score", False, None, False, _mean_top, in_suite=False)
    register_metric(info)
    try:
        assert main([*argv, "--extra", "toy_extra"]) == 0
        assert json.loads(capsys.readouterr().out)["toy_extra"] == _mean_top(y, logits=z)
    finally:
        METRICS.unregister("toy_extra")
    assert main([*argv, "--extra", "toy_extra"]) == 2


def test_an_entry_without_a_kernel_fails_when_it_is_made() -> None:
    with pytest.raises(InputError, match=r"kernel.*'no_kernel'"):
        MetricInfo("no_kernel", "X", "error", True, "min", False, rmsce)
    with pytest.raises(InputError, match="floor"):  # the floor redraws top-label bins
        MetricInfo(
            "sce2", "X", "error", True, "min", True, rmsce, kernel=BinNorm("l1", "classwise")
        )
    with pytest.raises(InputError, match="norm"):
        BinNorm("l3")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="term"):
        SampleMean("no_such_term")
    with pytest.raises(ValueError, match="already registered"):
        register_metric(METRICS.get("ece"))
    assert "no_kernel" not in METRICS
