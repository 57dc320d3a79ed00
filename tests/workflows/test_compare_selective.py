"""compare() and its report: which calibrators change the confidence ranking, and how much
each selective-prediction metric moves."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from calibkit import Resampling
from calibkit.core.outputs import as_outputs
from calibkit.metrics import aurc, failure_auroc
from calibkit.reporting.compare_report import write_compare_report
from calibkit.reporting.tables import comparison_tables
from calibkit.workflows.compare import compare

SELECTIVE = ("failure_auroc", "aurc", "eaurc", "augrc", "risk_at_cov80", "cov_at_risk5")


def _parts(k: int, n: int = 1200, seed: int = 0):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 2.5
    y = np.array([rng.choice(k, p=np.exp(r / 2) / np.exp(r / 2).sum()) for r in z])
    half = n // 2
    return as_outputs(y[:half], logits=z[:half]), as_outputs(y[half:], logits=z[half:])


def test_binary_temperature_keeps_the_ranking_binning_and_isotonic_tie_it() -> None:
    cal, test = _parts(2)
    comp = compare(
        cal, test, ["temperature", "histogram", "isotonic"], resampling=Resampling(n_boot=0)
    )
    none, ts = comp.row("none"), comp.row("temperature")
    assert none.ranking is not None
    assert none.ranking.same
    assert none.ranking.tau == 1.0
    assert ts.ranking is not None
    assert ts.ranking.same
    for name in SELECTIVE:  # one ranking: the same sums but for sigmoid rounding
        assert ts.evaluation.values[name] == pytest.approx(
            none.evaluation.values[name], abs=1e-12
        ), name
    for method in ("histogram", "isotonic"):  # piecewise-constant maps: ties, a new ranking
        rk = comp.row(method).ranking
        assert rk is not None
        assert not rk.same
        assert rk.tau < 1.0
        conf = comp.row(method).risk_coverage
        assert conf is not None
        assert conf.threshold.size < test.n_samples / 2
    tables = {t.title: t for t in comparison_tables(comp)}
    ranking = tables["Confidence ranking against the uncalibrated model (test part)"]
    rows = {r[0].text.split()[0]: [c.text for c in r[1:]] for r in ranking.rows}  # no marks
    assert rows["temperature"][:2] == ["same", "1.0000"]
    assert rows["temperature"][2:] == ["0.00 pp"] * len(SELECTIVE)
    assert rows["histogram"][0] == "changed"
    hist_delta = comp.row("histogram").evaluation.values["aurc"] - none.evaluation.values["aurc"]
    assert rows["histogram"][3] == f"{100 * hist_delta:+.2f} pp"


def test_multiclass_temperature_can_reorder_and_the_report_says_so(tmp_path: Path) -> None:
    cal, test = _parts(4)
    comp = compare(cal, test, ["temperature"], resampling=Resampling(n_boot=20))
    ts = comp.row("temperature")
    assert ts.ranking is not None
    assert not ts.ranking.same
    calibrated = ts.risk_coverage
    assert calibrated is not None
    assert calibrated.aurc == ts.evaluation.values["aurc"]
    write_compare_report(comp, tmp_path / "r", title="t")
    md = (tmp_path / "r" / "report.md").read_text()
    assert "## Selective prediction on the test part" in md
    assert "## Confidence ranking against the uncalibrated model (test part)" in md
    assert "| changed |" in md
    assert "figures/risk_coverage.png" in md
    data = json.loads((tmp_path / "r" / "results.json").read_text())
    got = {m["method"]: m["ranking"] for m in data["methods"]}
    assert got["none"] == {"same_as_none": True, "kendall_tau": 1.0}
    assert got["temperature"] == {"same_as_none": False, "kendall_tau": ts.ranking.tau}
    values = data["methods"][0]["values"]
    assert values["failure_auroc"] == failure_auroc(test)
    assert values["aurc"] == aurc(test)
