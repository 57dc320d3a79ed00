"""The shift report: its files, the summary table and the box plots."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

from calibkit.reporting.shift_figures import shift_boxplots
from calibkit.reporting.shift_report import format_summary, write_shift_report
from calibkit.workflows.shift import COLUMNS, ShiftRow


def _rows() -> list[ShiftRow]:
    def vals(ece: float, cov: float) -> dict[str, float]:
        v = dict.fromkeys(COLUMNS, math.nan)
        if math.isnan(cov):
            v |= {"accuracy": 0.8, "nll": 0.5, "ece": ece, "ece_floor": 0.01, "brier": 0.3}
            v |= {"failure_auroc": 0.85, "aurc": 0.05}
        else:
            v |= {"coverage": cov, "mean_set_size": 1.5}
        return v

    sets = [("clean", 0), ("a", 1), ("b", 1), ("a", 2), ("b", 2)]
    rows = [ShiftRow("none", c, s, 10, vals(0.1 + 0.1 * s, math.nan)) for c, s in sets]
    rows += [ShiftRow("ts+raps", c, s, 10, vals(math.nan, 0.9 - 0.1 * s)) for c, s in sets]
    return rows


def test_the_report_folder(tmp_path: Path) -> None:
    files = write_shift_report(tmp_path, _rows(), title="t", config={"seed": 0}, alpha=0.1)
    assert set(files) == {p.name for p in tmp_path.iterdir()}
    assert {"shift_calibration.png", "shift_selective.png", "shift_conformal.png"} <= set(files)
    with (tmp_path / "results.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 10
    assert rows[0]["coverage"] == ""  # not applicable to a calibrator: empty, not 0
    data = json.loads((tmp_path / "results.json").read_text())
    assert data[5]["ece"] is None
    assert data[5]["coverage"] == 0.9
    md = (tmp_path / "report.md").read_text()
    assert "| none | 2 | 2 | 80.0 | 0.500 | 30.0 |" in md  # ECE 0.3 at severity 2, both corruptions


def test_the_summary_is_the_mean_over_corruptions() -> None:
    lines = format_summary(_rows()).splitlines()
    assert lines[0].split()[:4] == ["method", "severity", "corruptions", "accuracy"]
    raps = [line.split() for line in lines if line.startswith("ts+raps")]
    assert [r[1] for r in raps] == ["clean", "1", "2"]
    assert [r[-2] for r in raps] == ["90.0", "80.0", "70.0"]


def test_one_panel_per_metric_one_box_per_method_and_severity() -> None:
    fig = shift_boxplots(_rows(), ("accuracy", "ece", "coverage"), title="t", target=0.9)
    assert len(fig.axes) == 3
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["clean", "1", "2"]
    assert len(ax.patches) == 3  # none's boxes; ts+raps has no accuracy
    assert len(fig.axes[2].patches) == 3  # ts+raps' boxes only
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["none", "ts+raps"]
