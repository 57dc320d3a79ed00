"""Report folders: contents, JSON/CSV schema, escaping, self-contained HTML, atomicity."""

from __future__ import annotations

import base64
import csv
import dataclasses
import io
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

import calibkit.reporting.compare_report as report
from calibkit import Resampling
from calibkit.calibrators.logit.temperature import TemperatureScaling
from calibkit.core.errors import InputError
from calibkit.core.outputs import as_outputs
from calibkit.core.splits import split_outputs
from calibkit.io.atomic import MANIFEST
from calibkit.metrics import METRIC_NAMES, Evaluation
from calibkit.reporting.compare_figures import BEFORE_AFTER
from calibkit.reporting.compare_report import write_compare_report
from calibkit.reporting.compare_verdict import named
from calibkit.reporting.document import Figure
from calibkit.reporting.tables import format_evaluation_table
from calibkit.workflows.compare import compare
from calibkit.workflows.comparison import Comparison

TITLE = 'Model <b>"A" & B</b>'


@pytest.fixture(scope="module")
def folder(comp: Comparison, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("reports") / "rep"
    write_compare_report(comp, out, title=TITLE)
    return out


def test_folder_contents(folder: Path) -> None:
    assert sorted(p.name for p in folder.iterdir()) == [
        MANIFEST,
        "figures",
        "report.html",
        "report.md",
        "results.csv",
        "results.json",
    ]
    assert sorted(p.name for p in (folder / "figures").iterdir()) == [
        "ece_temperature.png",
        "reliability_before_after.png",
        "reliability_grid.png",
        "risk_coverage.png",
    ]
    for png in (folder / "figures").iterdir():
        assert png.read_bytes().startswith(b"\x89PNG")
    assert [p.name for p in folder.parent.iterdir()] == ["rep"]  # no temporary leftovers


def test_json_holds_every_number_as_fractions(folder: Path, comp: Comparison) -> None:
    data = json.loads((folder / "results.json").read_text())
    assert data["calibkit_report"] == 2
    assert data["command"] == "calibkit compare"
    assert data["title"] == TITLE
    assert data["source"] == "synthetic <data>.npz"
    meta = ("n_cal", "n_test", "n_classes", "n_bins", "n_boot", "seed")
    assert [data[k] for k in meta] == [300, 300, 3, 15, 25, 0]
    assert data["ci_level"] == 0.95
    assert data["metrics"] == list(METRIC_NAMES)
    assert [m["method"] for m in data["methods"]] == ["none", "temperature"]
    for m, row in zip(data["methods"], comp.rows, strict=True):
        assert m["values"] == row.evaluation.values  # exact round trip
        assert set(m["values"]) == {*METRIC_NAMES, "ece_floor", "aece_floor"}
        assert m["ci"] == {k: list(v) for k, v in row.evaluation.ci.items()}
        assert m["params"] == row.params
        assert m["fit_seconds"] == row.fit_seconds
        assert m["reliability"]["counts"] == row.reliability.counts.tolist()
        acc = [None if math.isnan(v) else v for v in row.reliability.accuracy.tolist()]
        assert m["reliability"]["accuracy"] == acc
        assert 0 <= m["values"]["ece"] < 1
        assert 0 < m["values"]["accuracy"] <= 1
    assert "temperature" in data["methods"][1]["params"]
    curve = data["ece_vs_temperature"]
    assert curve["temperatures"] == comp.temperatures.tolist()
    assert curve["ece"] == comp.ece_curve.tolist()


def test_csv_has_one_row_per_method_with_intervals(folder: Path, comp: Comparison) -> None:
    rows = list(csv.DictReader(io.StringIO((folder / "results.csv").read_text())))
    assert [r["method"] for r in rows] == ["none", "temperature"]
    for r, res in zip(rows, comp.rows, strict=True):
        for name in METRIC_NAMES:
            assert float(r[name]) == res.evaluation.values[name]
            if name in res.evaluation.ci:
                assert (float(r[f"{name}_lo"]), float(r[f"{name}_hi"])) == res.evaluation.ci[name]
            else:  # a metric with no honest interval (MCE, SCE, KS) has none
                assert (r[f"{name}_lo"], r[f"{name}_hi"]) == ("", "")
        assert float(r["ece_floor"]) == res.evaluation.values["ece_floor"]
    assert rows[1]["params"].startswith("temperature=")


def test_markdown_tables_mark_the_best_values(folder: Path, comp: Comparison) -> None:
    md = (folder / "report.md").read_text()
    assert "## How to read this" in md
    for label in ("ECE", "ECE floor", "Adaptive ECE", "MCE", "KS", "MMCE", "NLL", "Brier"):
        assert f"| {label} |" in md
    lines = [ln for ln in md.splitlines() if ln.startswith("| temperature |")]
    none_lines = [ln for ln in md.splitlines() if ln.startswith("| none |")]
    ts_ece = 100 * comp.rows[1].evaluation.values["ece"]
    assert f"**{ts_ece:.2f}% [" in lines[0]  # temperature scaling has the lower ECE
    assert f"{100 * comp.rows[0].evaluation.values['ece']:.2f}% [" in none_lines[0]
    assert "**" not in none_lines[0].split("|")[2]
    assert "![Reliability diagrams, every method](figures/reliability_grid.png)" in md
    assert "Fit time (s)" in md


def test_html_is_self_contained_and_escaped(folder: Path) -> None:
    page = (folder / "report.html").read_text()
    text = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", page)
    assert not re.search(r"(https?:|ftp:)?//", text)
    assert "url(" not in text
    assert "@import" not in text
    assert "<link" not in page
    assert "<script" not in page
    srcs = re.findall(r'src="([^"]*)"', page)
    assert len(srcs) == 4  # before and after, the grid, ECE(T), risk-coverage
    assert all(s.startswith("data:image/png;base64,") for s in srcs)
    embedded = {base64.b64decode(s.split(",", 1)[1]) for s in srcs}
    on_disk = {p.read_bytes() for p in (folder / "figures").iterdir()}
    assert embedded == on_disk
    assert "<b>" not in page
    assert "Model &lt;b&gt;&quot;A&quot; &amp; B&lt;/b&gt;" in page
    assert "synthetic &lt;data&gt;.npz" in page
    assert page.count('class="best"') >= 10


def test_nan_values_become_null_and_empty(comp: Comparison) -> None:
    row = comp.rows[1]
    values = dict(row.evaluation.values, mce=math.nan)
    bad = dataclasses.replace(row, evaluation=dataclasses.replace(row.evaluation, values=values))
    broken = dataclasses.replace(comp, rows=[comp.rows[0], bad])
    data = report.results_dict(broken, "t")
    assert data["methods"][1]["values"]["mce"] is None
    json.dumps(data, allow_nan=False)
    csv_rows = list(csv.DictReader(io.StringIO(report.results_csv(broken))))
    assert csv_rows[1]["mce"] == ""


def test_failure_while_writing_leaves_no_folder(
    comp: Comparison, folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(*args: object) -> str:
        raise RuntimeError("disk full")

    figures = [Figure(p.name, "", p.read_bytes()) for p in (folder / "figures").iterdir()]
    monkeypatch.setattr(report, "comparison_figures", lambda *args: figures)
    monkeypatch.setattr(report, "results_csv", boom)
    with pytest.raises(RuntimeError, match="disk full"):
        write_compare_report(comp, tmp_path / "rep", title="t")
    assert list(tmp_path.iterdir()) == []
    monkeypatch.undo()
    write_compare_report(comp, tmp_path / "old", title="previous")
    before = {p: p.read_bytes() for p in (tmp_path / "old").rglob("*") if p.is_file()}
    monkeypatch.setattr(report, "comparison_figures", lambda *args: figures)
    monkeypatch.setattr(report, "results_csv", boom)
    with pytest.raises(RuntimeError):
        write_compare_report(comp, tmp_path / "old", title="t")
    assert [p.name for p in tmp_path.iterdir()] == ["old"]
    assert {p: p.read_bytes() for p in (tmp_path / "old").rglob("*") if p.is_file()} == before


def test_a_folder_holding_other_files_is_refused_before_any_work(
    comp: Comparison, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "keep.txt").write_text("the user's")
    monkeypatch.setattr(report, "comparison_figures", lambda *args: pytest.fail("drew figures"))
    with pytest.raises(InputError, match=r"^output: .*calibkit did not write \(keep\.txt\)"):
        write_compare_report(comp, tmp_path / "old", title="t")
    assert [p.name for p in (tmp_path / "old").iterdir()] == ["keep.txt"]


def test_a_folder_of_report_names_without_a_manifest_is_the_users(
    comp: Comparison, tmp_path: Path
) -> None:
    """Without calibkit's manifest a folder is the user's, whatever its files are called
    (issue #42: such a folder was taken for an older calibkit's report and replaced)."""
    old = tmp_path / "old"
    (old / "figures").mkdir(parents=True)
    names = ("report.md", "report.html", "results.json", "results.csv", "figures/x.png")
    for name in names:
        (old / name).write_text("the user's")
    with pytest.raises(InputError, match=r"^output: .*calibkit did not write"):
        write_compare_report(comp, old, title="t")
    assert all((old / name).read_text() == "the user's" for name in names)
    assert not (old / MANIFEST).exists()


def test_failing_method_leaves_no_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(self: object, out: object) -> None:
        raise RuntimeError("fit failed")

    monkeypatch.setattr(TemperatureScaling, "_fit", boom)
    rng = np.random.default_rng(1)
    out = as_outputs(rng.integers(0, 3, 200), logits=rng.normal(size=(200, 3)))
    cal, test = split_outputs(out, 0.5, seed=0)
    with pytest.raises(RuntimeError, match="fit failed"):
        write_compare_report(
            compare(cal, test, ["temperature"], resampling=Resampling(n_boot=0)),
            tmp_path / "r",
            title="t",
        )
    assert list(tmp_path.iterdir()) == []


def test_evaluation_table_lists_every_metric_with_interval_and_floor(comp: Comparison) -> None:
    ev = comp.rows[0].evaluation
    lines = format_evaluation_table(ev).splitlines()
    assert lines[0].split() == ["Metric", "Value", "95%", "CI", "Noise", "floor"]
    assert len(lines) == 1 + len(METRIC_NAMES)
    ece_line = next(ln for ln in lines if ln.startswith("ECE "))
    lo, hi = ev.ci["ece"]
    assert ece_line.split() == [
        "ECE",
        f"{100 * ev.values['ece']:.2f}%",
        f"[{100 * lo:.2f}%,",
        f"{100 * hi:.2f}%]",
        f"{100 * ev.values['ece_floor']:.2f}%",
    ]
    nll_line = next(ln for ln in lines if ln.startswith("NLL "))
    assert nll_line.split()[1] == f"{ev.values['nll']:.4f}"
    bare = format_evaluation_table(Evaluation({"ece": 0.031}))
    assert bare.splitlines()[1].split() == ["ECE", "3.10%"]


def test_html_shows_no_raw_markdown(folder: Path) -> None:
    page = (folder / "report.html").read_text()
    text = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", page)
    assert "**" not in text
    assert "`" not in text


def test_the_verdict_comes_first_in_markdown_html_and_terminal(
    chosen: Comparison, tmp_path: Path
) -> None:
    from calibkit.reporting.compare_report import compare_report
    from calibkit.reporting.text import plain
    from calibkit.reporting.writer import report_text, write_report

    report = compare_report(chosen, title="T", name="s.npz")
    verdict = report.document.verdict
    assert verdict is not None
    assert chosen.recommendation is not None
    method = chosen.recommendation.method
    against = "temperature scaling" if method != "temperature" else "the uncalibrated model"
    assert verdict.headline.startswith(f"Use {named(method)}: on the test part it ")
    assert verdict.headline.endswith(f" against {against}.")
    assert "NLL from " in verdict.headline
    assert "ECE" in verdict.headline
    assert "5 stratified folds, seed 0" in verdict.detail
    write_report(report, tmp_path / "r")
    md = [line for line in (tmp_path / "r" / "report.md").read_text().splitlines() if line]
    assert md[:3] == ["# T", f"**{verdict.headline}**", verdict.detail]
    page = (tmp_path / "r" / "report.html").read_text()
    assert page[page.index("</h1>") + 5 :].lstrip().startswith('<div class="verdict">')
    text = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", page)
    assert "**" not in text
    assert "`" not in text
    assert f"<code>{method}</code>" in page
    terminal = report_text(report).splitlines()
    assert terminal[:2] == [plain(verdict.headline), "  " + plain(verdict.detail)]
    assert "calibration / " in report_text(report)  # format_comparison_summary below it
    data = json.loads((tmp_path / "r" / "results.json").read_text())
    assert data["verdict"] == {"headline": verdict.headline, "detail": verdict.detail}
    assert data["recommendation"]["method"] == method
    assert {"inputs", "options", "versions", "command"} <= set(data)
    assert (tmp_path / "r" / "results.csv").read_text() == report.files["results.csv"]


def test_the_rules_table_says_which_methods_it_cross_fitted_unshrunk(tmp_path: Path) -> None:
    """Issue #46, item 5: the demo's rule table gave matrix a cross-fitted NLL of 12.97
    against 0.36 for ms_odir, beside text saying that they fit the same map: the rule
    cross-fits matrix unshrunk (auto.candidate), the rows are fitted shrunk. The table
    marks those methods and says why their numbers differ from their rows'."""
    from calibkit.cli import main

    rng = np.random.default_rng(3)
    z = rng.normal(size=(600, 4)) * 3
    y = np.array([rng.choice(4, p=np.exp(r / 3) / np.exp(r / 3).sum()) for r in z])
    np.savez(tmp_path / "p.npz", logits=z, labels=y)
    argv = ["compare", str(tmp_path / "p.npz"), "--n-boot", "0", "--seed", "0"]
    methods = ["--methods", "temperature,matrix,ms_odir,sms", "--out", str(tmp_path / "rep")]
    assert main([*argv, *methods]) == 0
    report = (tmp_path / "rep" / "report.md").read_text()
    assert "| matrix (unshrunk) |" in report
    assert "| ms_odir (unshrunk) |" in report
    assert "| sms |" in report  # no shrinkage of its own: cross-fitted as its row
    assert "Its NLL minus temperature's (± one standard error)" in report
    assert "Marked (unshrunk): matrix, ms_odir. The rule cross-fits these methods" in report


def test_a_newcomer_reads_the_verdict_the_deciding_table_and_one_figure_first(
    chosen: Comparison, tmp_path: Path
) -> None:
    """Issue #46, item 6: the report was about 8,700 px of tables, figures and a 530-word
    guide. Unfolded now: the verdict, the rule's table, one figure (none and the chosen
    method), "How to read this" in at most 120 words; every other table and figure is in a
    folded section, in HTML and in Markdown, each metric's meaning under its table."""
    write_compare_report(chosen, tmp_path / "r", title="T", name="s.npz")
    page = (tmp_path / "r" / "report.html").read_text()
    shown = re.sub(r"<details>.*?</details>", "", page, flags=re.DOTALL)
    assert shown.count("<table>") == 1
    assert "Cross-fitted NLL" in shown
    (image,) = re.findall(r'<a href="figures/([^"]+)"', shown)
    assert image == BEFORE_AFTER
    assert chosen.recommendation is not None
    assert f"Reliability diagrams: none, {chosen.recommendation.method}" in shown
    how = shown.split("<h2>How to read this</h2>", 1)[1].split("</p>", 1)[0]
    assert len(re.sub(r"<[^>]+>", "", how).split()) <= 120
    assert "docs/reports.md" in how
    assert page.count("<details>") >= 6  # the tables and the other figures
    assert "<strong>ECE</strong>: gap between confidence and accuracy" in page
    md = (tmp_path / "r" / "report.md").read_text()
    after = md.split("## How to read this", 1)[1].split("\n## ")[1:]
    assert after
    for section in after:  # every section below the guide is folded
        assert section.split("\n\n")[1] == "<details><summary>Show</summary>", section[:80]
    assert "**NLL**: mean of -log p(label)" in md


def test_without_a_recommendation_the_first_table_of_test_errors_is_shown(
    folder: Path,
) -> None:
    """No rule ran (compare without recommend): no "Recommendation" heading over nothing;
    the binned errors on the test part are the one table shown unfolded."""
    page = (folder / "report.html").read_text()
    shown = re.sub(r"<details>.*?</details>", "", page, flags=re.DOTALL)
    assert "<h2>Recommendation</h2>" not in shown
    assert shown.count("<table>") == 1
    assert "<h2>Binned calibration errors on the test part</h2>" in shown
