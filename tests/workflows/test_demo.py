"""The built-in demo (calibkit.workflows.demo and ``calibkit demo``)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from calibkit.cli import main
from calibkit.core.errors import InputError
from calibkit.reporting.compare_report import demo_summary
from calibkit.workflows.demo import DemoSettings, noisy_digits, run_demo, three_way_split

SMALL = DemoSettings(epochs=30, n_boot=10, methods=("temperature",))


def test_split_is_a_stratified_partition() -> None:
    _, labels = noisy_digits()
    y = labels.numpy()
    train, cal, test = three_way_split(y, 0.2, seed=3)
    every = np.concatenate([train, cal, test])
    assert sorted(every.tolist()) == list(range(len(y)))
    assert (len(train), len(cal), len(test)) == (359, 719, 719)
    for part in (train, cal, test):
        share = np.bincount(y[part], minlength=10) / len(part)
        np.testing.assert_allclose(share, np.bincount(y) / len(y), atol=0.01)


def test_noise_is_seeded() -> None:
    a, _ = noisy_digits(0.2, seed=0)
    b, _ = noisy_digits(0.2, seed=0)
    c, _ = noisy_digits(0.2, seed=1)
    clean, _ = noisy_digits()
    assert torch.equal(a, b)
    assert not torch.equal(a, c)
    assert float((a - clean).std()) == pytest.approx(0.2, rel=0.02)


def test_demo_is_deterministic_for_a_seed() -> None:
    tiny = DemoSettings(epochs=2, n_boot=0, methods=("temperature",))
    threads = torch.get_num_threads()
    runs = [run_demo(seed=seed, settings=tiny) for seed in (0, 0, 1)]
    assert torch.get_num_threads() == threads  # restored after training
    values = [[r.evaluation.values for r in run.comparison.rows] for run in runs]
    assert values[0] == values[1]  # the same computation, run twice
    assert values[0] != values[2]
    assert demo_summary(runs[0]) == demo_summary(runs[1])


def test_settings_are_validated() -> None:
    with pytest.raises(InputError, match="epochs"):
        DemoSettings(epochs=0)
    with pytest.raises(InputError, match="train_fraction"):
        DemoSettings(train_fraction=1.0)
    with pytest.raises(InputError, match="pixel_noise"):
        DemoSettings(pixel_noise=-1.0)


def test_small_demo_becomes_overconfident() -> None:
    res = run_demo(seed=0, settings=SMALL)
    comp = res.comparison
    assert [r.method for r in comp.rows] == ["none", "temperature"]
    assert res.train_accuracy > 0.99
    assert comp.row("temperature").params["temperature"] > 1.2  # overconfident
    assert comp.row("temperature").evaluation.values["ece"] < res.ece_before
    assert res.recommended == "temperature"  # the only method compared
    assert "recommended: temperature (temperature scaling): on the test part it" in demo_summary(
        res
    )


def test_demo_recommends_by_the_comparisons_rule_not_the_lowest_test_ece() -> None:
    """Histogram binning can reach the lowest test ECE; the demo names the method the
    comparison chose on the calibration part (its verdict), never the lowest-ECE one."""
    from calibkit.reporting.compare_report import demo_report

    settings = DemoSettings(epochs=30, n_boot=0, methods=("temperature", "histogram"))
    res = run_demo(seed=0, settings=settings)
    comp = res.comparison
    assert comp.recommendation is not None
    assert res.recommended == comp.recommendation.method
    report = demo_report(res, title="demo")
    verdict = report.document.verdict
    assert verdict is not None
    assert verdict.headline.startswith(f"Use `{comp.recommendation.method}`")
    lowest = min(comp.rows[1:], key=lambda r: r.evaluation.values["ece"]).method
    if lowest != comp.recommendation.method:
        assert f"`{lowest}`" not in verdict.headline
    assert report.text.splitlines()[0].startswith("Trained a 64-128-10 MLP")


def test_cli_demo_small(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["demo", "--out", str(tmp_path / "rep"), "--epochs", "30", "--n-boot", "0"]
    assert main([*argv, "--methods", "temperature"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith(
        "Use temperature (temperature scaling): on the test part it lowers NLL from "
    )
    assert "against the uncalibrated model" in out.splitlines()[0]
    assert "before calibration" in out
    assert "temperature=" in out
    assert "epoch 30/30" in err
    results = json.loads((tmp_path / "rep" / "results.json").read_text())
    assert results["n_cal"] == results["n_test"] == 719
    assert results["command"] == "calibkit demo"
    assert results["verdict"]["headline"].startswith("Use `temperature`")
    assert results["options"]["epochs"] == 30
    assert results["demo"]["n_train"] == 359
    assert {p.name for p in (tmp_path / "rep").iterdir()} >= {"report.html", "results.json"}
    assert (
        "calibkit demo: an overconfident MLP on digits"
        in (tmp_path / "rep" / "report.html").read_text()
    )


def test_cli_demo_unknown_method_fails_before_training(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", "--out", str(tmp_path / "rep"), "--methods", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("calibkit: error: --methods: expected one of")
    assert len(err.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_full_demo_is_deterministic_and_fast(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    start = time.perf_counter()
    assert main(["demo", "--out", str(tmp_path / "a")]) == 0
    seconds = time.perf_counter() - start
    first = capsys.readouterr().out
    assert seconds < 30
    assert main(["demo", "--out", str(tmp_path / "b")]) == 0
    assert capsys.readouterr().out.replace("/b/", "/a/") == first
    a = json.loads((tmp_path / "a" / "results.json").read_text())
    b = json.loads((tmp_path / "b" / "results.json").read_text())
    for ra, rb in zip(a["methods"], b["methods"], strict=True):
        assert ra["values"] == rb["values"]
    rows = {m["method"]: m["values"] for m in a["methods"]}
    none, temp = rows["none"], rows["temperature"]
    assert none["ece"] > 0.04  # clearly overconfident before calibration
    assert temp["ece"] < none["ece"] / 2
