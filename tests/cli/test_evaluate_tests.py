"""``calibkit evaluate --extra tests`` and the compare report's calibration-test table."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from calibkit import Resampling
from calibkit.cli import main
from calibkit.core.outputs import as_outputs
from calibkit.core.splits import split_outputs
from calibkit.metrics.calibration_tests import calibration_tests
from calibkit.reporting.compare_report import compare_document, results_dict
from calibkit.reporting.render import to_markdown
from calibkit.workflows.compare import compare


@pytest.fixture
def preds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    z = rng.normal(size=(300, 3)) * 3.0
    y = rng.integers(0, 3, 300)
    np.savez(tmp_path / "preds.npz", logits=z, labels=y)
    return tmp_path / "preds.npz"


def test_extra_tests_adds_every_statistic_and_p_value_without_intervals(
    preds: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    argv = ["evaluate", str(preds), "--n-boot", "10", "--format", "json", "--extra", "tests"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    data = np.load(preds)
    expected = calibration_tests(data["labels"], logits=data["logits"])
    for name, test in expected.items():
        assert out[f"{name}_statistic"] == test.statistic  # the same function, same input
        assert out[f"{name}_p"] == test.p_value
        assert f"{name}_p" not in out["ci"]
    assert main(["evaluate", str(preds), "--n-boot", "0", "--extra", "tests"]) == 0
    table = capsys.readouterr().out
    assert "Spiegelhalter Z p-value" in table
    assert "Hosmer-Lemeshow statistic" in table


def test_compare_reports_each_calibrators_tests() -> None:
    rng = np.random.default_rng(1)
    z = rng.normal(size=(800, 3)) * 3.0
    y = np.argmax(z / 3.0 + rng.gumbel(size=z.shape), axis=1)  # overconfident logits
    cal, test = split_outputs(as_outputs(y, logits=z), 0.5, seed=0)
    comp = compare(cal, test, ["temperature"], resampling=Resampling(n_boot=0))
    assert [list(r.tests) for r in comp.rows] == [
        ["spiegelhalter", "ks", "kuiper", "hosmer_lemeshow"]
    ] * 2
    assert comp.row("none").tests["ks"].p_value < 0.01 < comp.row("temperature").tests["ks"].p_value
    md = to_markdown(compare_document(comp, "t", []))
    assert "Calibration tests on the test part" in md
    assert "Cumulative KS (ECCE-MAD) (p)" in md
    saved = results_dict(comp, "t")["methods"][1]["tests"]["kuiper"]
    assert saved["p_value"] == comp.row("temperature").tests["kuiper"].p_value


def test_compare_report_says_why_a_test_is_undefined() -> None:
    """Issue 42: the table showed 'n/a (n/a)' where the test is undefined, never why."""
    rng = np.random.default_rng(2)
    probs = np.zeros((400, 3))
    probs[:, 0] = 1.0  # every top-label confidence is 1: Spiegelhalter's variance is 0
    y = np.where(rng.random(400) < 0.75, 0, 1)
    cal, test = split_outputs(as_outputs(y, probs=probs), 0.5, seed=0)
    comp = compare(cal, test, ["histogram"], resampling=Resampling(n_boot=0))
    assert np.isnan(comp.row("none").tests["spiegelhalter"].p_value)
    md = to_markdown(compare_document(comp, "t", []))
    assert "n/a (n/a)" not in md
    assert "| none | undefined | undefined | undefined | undefined |" in md
    section = md.split("## Calibration tests left undefined, and why\n", 1)[1]
    assert (
        "| Spiegelhalter Z | none | every confidence is 0, 1/2 or 1 (Z's null variance is 0) |"
        in section
    )
    assert (
        "| Cumulative KS (ECCE-MAD) | none | every confidence is 0 or 1 (sigma is 0) |" in section
    )
    saved = results_dict(comp, "t")["methods"][0]["tests"]["spiegelhalter"]
    assert saved["undefined"] == "every confidence is 0, 1/2 or 1 (Z's null variance is 0)"
