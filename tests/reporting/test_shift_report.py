"""The shift report: the verdict first (from which severity calibration breaks, and
conformal coverage), the summary tables from the metric registry, the box plots as figures,
and the report folder through the one writer."""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path

from calibkit.reporting.document import Figure, Section
from calibkit.reporting.figure_style import FLOOR_GID
from calibkit.reporting.shift_figures import FLOOR_LABEL, shift_boxplots
from calibkit.reporting.shift_report import (
    breaking_point,
    coverage_drops,
    shift_report,
    shift_verdict,
    summary_tables,
)
from calibkit.reporting.tables import column_info
from calibkit.reporting.text import table_text
from calibkit.reporting.writer import write_report
from calibkit.workflows.shift import COLUMNS, ShiftRow
from calibkit.workflows.shift_study import ShiftResult, ShiftSettings

SETS = [("clean", 0), ("a", 1), ("b", 1), ("a", 2), ("b", 2), ("a", 3), ("b", 3)]


def _vals(ece: float = math.nan, cov: float = math.nan, floor: float = 0.01) -> dict[str, float]:
    v = dict.fromkeys(COLUMNS, math.nan)
    if math.isnan(cov):
        v |= {"accuracy": 0.8, "nll": 0.5, "ece": ece, "ece_floor": floor, "brier": 0.3}
        v |= {"failure_auroc": 0.85, "aurc": 0.05}
    else:
        v |= {"coverage": cov, "mean_set_size": 1.5}
    return v


def _rows(ts: tuple[float, ...] = (0.02, 0.03, 0.05, 0.09)) -> list[ShiftRow]:
    """none: ECE 10% clean, 20/30/40% at severities 1-3; temperature: ``ts`` (clean, 1..3);
    ts+raps: coverage 90% clean, then 89, 85, 70% (1000 test images each)."""
    rows = [ShiftRow("none", c, s, 1000, _vals(0.1 + 0.1 * s)) for c, s in SETS]
    rows += [ShiftRow("temperature", c, s, 1000, _vals(ts[s])) for c, s in SETS]
    cov = (0.9, 0.89, 0.85, 0.70)
    rows += [ShiftRow("ts+raps", c, s, 1000, _vals(cov=cov[s])) for c, s in SETS]
    return rows


def test_calibration_breaks_at_the_first_severity_no_calibrator_holds() -> None:
    b = breaking_point(_rows())
    assert b.methods == ["temperature"]  # none is the baseline, not a calibrator
    assert b.limits["temperature"] == 0.04  # twice the clean 2% (above the 1% floor)
    assert b.severity == 2  # 3% holds at severity 1; 5% > 4% at severity 2
    assert breaking_point(_rows((0.02, 0.021, 0.03, 0.039))).severity is None
    # a clean ECE under the noise floor: the floor sets the limit
    low = [ShiftRow("temperature", c, s, 100, _vals((0.001, 0.05, 0.07, 0.1)[s], floor=0.03))
           for c, s in SETS]  # fmt: skip
    b = breaking_point(low)
    assert b.limits["temperature"] == 0.06
    assert b.severity == 2


def test_coverage_falls_below_target_beyond_two_standard_errors() -> None:
    # target 90%, n = 1000: two standard errors = 1.9%; 89% is within, 85% is not
    assert coverage_drops(_rows(), alpha=0.1) == {"ts+raps": 2}


def test_the_verdict_says_where_calibration_breaks_in_plain_words() -> None:
    verdict = shift_verdict(_rows(), alpha=0.1)
    assert verdict.headline.startswith("Calibration holds up to severity 1")
    assert "`temperature` keeps its mean ECE at 3% or less" in verdict.headline
    assert "breaks from severity 2" in verdict.headline
    assert "every calibrator's mean ECE is 5% or more; uncalibrated, 30% at severity 2." in (
        verdict.headline
    )
    assert "Conformal coverage falls below its 90% target from severity 2" in verdict.headline
    assert "none 10.0 / 20.0 / 30.0 / 40.0%" in verdict.detail
    assert "ts+raps 90.0 / 89.0 / 85.0 / 70.0%" in verdict.detail
    held = shift_verdict(_rows((0.02, 0.021, 0.03, 0.039)), alpha=None).headline
    assert held.startswith("Calibration holds at every severity evaluated (up to 3)")
    assert "Conformal" not in held
    broken = shift_verdict(_rows((0.02, 0.3, 0.3, 0.3)), alpha=None).headline
    assert broken.startswith("Calibration breaks from the mildest severity evaluated (1)")


def test_the_summary_tables_read_the_metric_registry() -> None:
    tables = summary_tables(_rows(), alpha=0.1)
    titles = [t.title for t in tables]
    assert titles[0] == "Mean ECE over the corruptions"
    assert titles[1] == "Mean coverage of the conformal sets (target 90%)"
    ece = tables[0]
    assert ece.header == [
        "Method",
        "Clean",
        "Severity 1",
        "Severity 2",
        "Severity 3",
        "Holds while ECE ≤ (2 × clean)",
    ]
    assert [c.text for c in ece.rows[0]] == [
        "none",
        "10.00%",
        "20.00%",
        "30.00%",
        "40.00%",
        "20.00%",
    ]
    assert ece.rows[1][-1].text == "4.00%"  # twice temperature's clean 2%
    assert ece.rows[1][2].best  # the lower ECE in bold
    assert not ece.rows[0][2].best
    every = tables[2]
    assert every.header[3:] == [
        "Accuracy", "NLL", "ECE", "ECE floor", "Brier", "Failure AUROC", "AURC",
    ]  # fmt: skip
    assert tables[3].header[3:] == ["Coverage", "Mean set size"]
    text = table_text(every).splitlines()
    assert text[0] == "Every metric of the calibrators:"
    none2 = next(r for r in (line.split() for line in text) if r[:2] == ["none", "2"])
    assert none2[:5] == ["none", "2", "2", "80.00%", "0.5000"]  # mean over the 2 corruptions


def _result(tmp_path: Path, rows: list[ShiftRow] | None = None) -> ShiftResult:
    weights = tmp_path / "w.th"
    weights.write_bytes(b"not read")
    settings = ShiftSettings("resnet20", weights, corruptions="gaussian_noise,fog")
    config = settings.as_dict() | {"n_calibration": 5000, "n_test": 1000, "device": "cpu"}
    rows = _rows() if rows is None else rows
    return ShiftResult(rows, settings, config, 5000, 1000, "cpu", ("a", "b"), 12.0)


def test_the_report_opens_with_the_verdict_and_writes_its_files(tmp_path: Path) -> None:
    report = shift_report(_result(tmp_path))
    doc = report.document
    assert doc.verdict is not None
    assert doc.verdict.headline.startswith("Calibration holds")
    assert [f.name for f in doc.figures()] == [
        "shift_calibration.png", "shift_selective.png", "shift_conformal.png",
    ]  # fmt: skip
    sections = [b.title for b in doc.body if isinstance(b, Section)]
    assert sections[0] == "How to read this report"
    assert "twice its clean level" in str(doc.body[1])
    folder = tmp_path / "out"
    files = write_report(report, folder)
    assert {"report.md", "report.html", "results.json", "results.csv", "config.json"} <= set(files)
    assert {p.name for p in (folder / "figures").iterdir()} == {f.name for f in doc.figures()}
    with (folder / "results.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 21
    assert rows[0]["coverage"] == ""  # not applicable to a calibrator: empty, not 0
    data = json.loads((folder / "results.json").read_text())
    assert data["command"] == "calibkit shift"
    assert data["verdict"]["headline"] == doc.verdict.headline
    assert data["breaks_at_severity"] == 2
    assert data["coverage_below_target_from"] == {"ts+raps": 2}
    assert data["rows"][14]["ece"] is None
    assert data["rows"][14]["coverage"] == 0.9
    config = json.loads((folder / "config.json").read_text())
    assert config["corruptions"] == ["gaussian_noise", "fog"]
    md = (folder / "report.md").read_text()
    assert md.index("Calibration holds") < md.index("## How to read this report")
    assert md.index("## How to read") < md.index("## Mean ECE over the corruptions")


def test_no_raw_markdown_in_the_html(tmp_path: Path) -> None:
    write_report(shift_report(_result(tmp_path)), tmp_path / "out")
    html = (tmp_path / "out" / "report.html").read_text()
    body = re.sub(r"<style>.*?</style>|data:image/png;base64,[^\"]+", "", html, flags=re.S)
    assert "**" not in body
    assert "`" not in body
    assert "<code>temperature</code>" in body
    assert "| ---" not in body
    assert "|:---" not in body
    assert body.index("verdict") < body.index("How to read this report")


def test_one_panel_per_metric_one_box_per_method_and_severity() -> None:
    rows = [r for r in _rows() if r.method != "temperature"]
    labels = {"accuracy": ("Accuracy (%)", True)}
    fig = shift_boxplots(
        rows, ("accuracy", "ece", "coverage"), title="t", target=0.9, labels=labels
    )
    assert len(fig.axes) == 3
    ax = fig.axes[0]
    assert ax.get_ylabel() == "Accuracy (%)"
    assert fig.axes[1].get_ylabel() == "ECE (%)"  # no label given: the registry's, never the key
    assert [t.get_text() for t in ax.get_xticklabels()] == ["clean", "1", "2", "3"]
    assert len(ax.patches) == 4  # none's boxes; ts+raps has no accuracy
    assert len(fig.axes[2].patches) == 4  # ts+raps' boxes only
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == ["none", "ts+raps", FLOOR_LABEL, "Target coverage (90%)"]


def test_panels_are_titled_with_the_registry_labels_and_the_ece_panel_shows_its_floor() -> None:
    rows = _rows()
    for r in rows:  # the floor differs by corruption: the median is drawn
        if r.method == "temperature" and r.severity == 2:
            r.values["ece_floor"] = {"a": 0.03, "b": 0.05}[r.corruption]
    metrics = ("accuracy", "ece", "coverage", "mean_set_size")
    fig = shift_boxplots(rows, metrics, title="t", target=0.9)
    assert [ax.get_title() for ax in fig.axes] == [column_info(m).label for m in metrics]
    assert "mean_set_size" not in {ax.get_title() for ax in fig.axes}
    floors = [c for ax in fig.axes for c in ax.collections if c.get_gid() == FLOOR_GID]
    assert floors  # only on the ECE panel
    assert all(c.axes is fig.axes[1] for c in floors)
    segments = [seg for c in floors for seg in c.get_segments()]
    assert len(segments) == 8  # none and temperature at clean, 1, 2, 3
    heights = sorted({round(float(seg[0, 1]), 6) for seg in segments})
    assert heights == [1.0, 4.0]  # 1% everywhere, and temperature's median of 3% and 5%


def test_the_figures_are_figure_blocks_with_captions(tmp_path: Path) -> None:
    doc = shift_report(_result(tmp_path)).document
    figs = list(doc.figures())
    assert all(isinstance(f, Figure) and f.png.startswith(b"\x89PNG") for f in figs)
    assert "one box per method over the corruptions" in figs[0].caption
