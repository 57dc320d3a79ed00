"""The conformance study: its cells, its resume, its report, and (slow) the reduced study's
verdict that the intervals of the true error hold where the percentile bootstrap does not."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from experiments.intervals import conformance, conformance_report
from experiments.test_layout import ENV, ROOT

DRIVER = ROOT / "experiments" / "intervals" / "conformance.py"


def test_a_cell_records_every_metric_and_interval() -> None:
    cell = conformance.Cell("constant", 600, 10, 0.03)
    record = conformance.run_cell(cell, reps=4, n_boot=20)
    assert record["name"] == "constant-K10-n600-gap0.03"
    assert record["reps"] == 4
    methods = {key.split("/")[1] for key in record["metrics"]}
    assert methods == {"percentile", "basic", "sidak-l2-bound", "sun2024"}
    ece = record["metrics"]["ece/percentile"]
    assert ece["truth"] == pytest.approx(0.03, abs=1e-9)  # the simulator's exact value
    assert ece["bias"] == pytest.approx(ece["mean_estimate"] - ece["truth"])
    assert 0.0 <= record["false_alarm"] <= 1.0


def test_seeds_differ_by_cell_and_draw_and_never_change() -> None:
    a, b = conformance.Cell("constant", 300, 10, 0.0), conformance.Cell("constant", 300, 10, 0.005)
    assert len({a.seed(0), a.seed(1), b.seed(0)}) == 3
    assert a.seed(0) == conformance.Cell("constant", 300, 10, 0.0).seed(0)


def test_the_full_grid_keeps_within_the_simulators_limit() -> None:
    from calibkit.metrics.simulated import MAX_ENTRIES

    cells = conformance.grid("full")
    assert len({c.name for c in cells}) == len(cells)
    assert all(c.n * c.n_classes <= MAX_ENTRIES for c in cells)
    assert {c.shape for c in cells} == {
        "constant",
        "sign_change",
        "classwise",
        "groups",
        "platt",
        "beta",
    }


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(DRIVER), *argv],
        cwd=cwd,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_run_resumes_and_reports(tmp_path: Path) -> None:
    argv = [
        "--out",
        "cells",
        "--grid",
        "reduced",
        "--reps",
        "3",
        "--n-boot",
        "20",
        "--workers",
        "1",
    ]
    assert _run(argv, tmp_path).returncode == 0
    cells = tmp_path / "cells"
    names = sorted(p.name for p in cells.glob("[!.]*.json"))
    assert names == sorted(f"{c.name}.json" for c in conformance.grid("reduced"))
    (cells / names[0]).unlink()  # a killed run's missing cell: redone, the others kept
    kept = (cells / names[1]).read_bytes()
    done = _run(argv, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "1 cells written" in done.stdout
    assert (cells / names[1]).read_bytes() == kept
    assert conformance_report.main([str(cells), str(tmp_path / "report")]) == 0
    page = (tmp_path / "report" / "index.md").read_text()
    assert "| 1,000 | 3.00% |" in page
    assert (tmp_path / "report" / "figures" / "coverage_ece.png").read_bytes()[:4] == b"\x89PNG"


def test_a_folder_of_the_users_is_refused_and_kept(tmp_path: Path) -> None:
    (tmp_path / "cells").mkdir()
    (tmp_path / "cells" / "notes.json").write_text('{"mine": 1}')
    done = _run(["--out", "cells", "--grid", "reduced", "--reps", "1"], tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("conformance.py: error: --out: ")
    assert "Traceback" not in done.stderr
    assert json.loads((tmp_path / "cells" / "notes.json").read_text()) == {"mine": 1}
    assert sorted(p.name for p in (tmp_path / "cells").iterdir()) == ["notes.json"]


@pytest.mark.parametrize("option", ["--reps", "--n-boot", "--workers"])
def test_a_count_below_one_is_one_line(tmp_path: Path, option: str) -> None:
    done = _run(["--out", "cells", option, "0"], tmp_path)
    assert done.returncode == 2
    assert done.stderr == f"conformance.py: error: {option}: expected a whole number >= 1, got 0\n"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_the_reduced_study_the_new_intervals_hold_the_bootstrap_does_not() -> None:
    """The reduced form of the study (60 data sets per cell): the intervals of the true
    error cover it in at least 93% of data sets in every cell; the percentile bootstrap of
    the ECE covers a calibrated model's 0 in none."""
    for cell in conformance.grid("reduced"):
        record = conformance.run_cell(cell, reps=60, n_boot=200)
        for key in ("ece_interval/sidak-l2-bound", "l2_ece_interval/sun2024"):
            assert record["metrics"][key]["coverage"] >= 0.93, (cell.name, key)
            assert record["metrics"][key]["excludes_estimate"] == 0.0
        if cell.gap == 0.0:
            assert record["metrics"]["ece/percentile"]["coverage"] == 0.0


def test_a_printed_cell_records_every_printed_interval() -> None:
    """The ``printed`` measure: evaluate's intervals as printed and the smooth ECE's
    bootstrap; ``paired``: the NLL change of a fixed map against its truth; ``study``: a
    five-seed study's mean true ECE."""
    cell = conformance.Cell("constant", 600, 10, 0.03, measure="printed")
    assert cell.name == "printed-constant-K10-n600-gap0.03"
    record = conformance.run_cell(cell, reps=3, n_boot=20)
    assert set(record["metrics"]) == {
        *(f"{m}/printed" for m in conformance.PRINTED),
        "smooth_ece/percentile",
    }
    for m in conformance.PRINTED:  # the printed interval holds the printed value
        assert record["metrics"][f"{m}/printed"]["excludes_estimate"] == 0.0
    assert record["metrics"]["smooth_ece/percentile"]["truth"] == pytest.approx(0.03)
    one = conformance.Cell("constant", 600, 10, 0.03, measure="paired")
    paired = conformance.run_cell(one, reps=3, n_boot=20)
    truth = paired["metrics"]["nll_change/paired"]["truth"]
    assert truth == pytest.approx(conformance.paired_truth(one), abs=1e-12)
    study = conformance.run_cell(
        conformance.Cell("constant", 600, 10, 0.03, measure="study"), reps=3, n_boot=20
    )
    assert set(study["metrics"]) == {
        "study_mean_ece/t_plugin",
        "study_mean_ece/t_debiased",
        "study_mean_ece/mean_of_bounds",
        "study_mean_ece/min_low_mean_high",
    }
    assert study["metrics"]["study_mean_ece/min_low_mean_high"]["truth"] == pytest.approx(0.03)
    groups = conformance.run_cell(
        conformance.Cell("groups", 900, 10, 0.03, measure="printed"), reps=2, n_boot=20
    )
    assert groups["metrics"]["worst_group_gap/printed"]["truth"] == pytest.approx(0.03)
    assert {f"group_ece_{g}/printed" for g in range(3)} <= set(groups["metrics"])


@pytest.mark.slow
def test_the_reduced_study_every_printed_interval_holds() -> None:
    """The reduced form of the ``printed`` measure (60 data sets per cell): every interval
    calibkit prints covers its truth in at least 93% of the data sets pooled over the
    cells, and never excludes its printed estimate; the smooth ECE's
    percentile bootstrap (no longer printed) covers a calibrated model's 0 in none."""
    covered: dict[str, list[float]] = {}
    for cell in conformance.grid("reduced", "printed"):
        record = conformance.run_cell(cell, reps=60, n_boot=100)
        for key, stats in record["metrics"].items():
            if key.endswith("/printed"):
                covered.setdefault(key, []).append(stats["coverage"])
                assert stats["excludes_estimate"] == 0.0, (cell.name, key)
        if cell.shape == "constant" and cell.gap == 0.0:
            assert record["metrics"]["smooth_ece/percentile"]["coverage"] == 0.0
    # pooled over the cells (a cell of 60 data sets has a standard error of 2.8 points)
    for key, values in covered.items():
        assert np.mean(values) >= 0.93, (key, values)
    # compare's paired NLL change (nominal 95%, measured 95% pooled over 144 cells) and a
    # study's mean true ECE, pooled over the reduced cells (240 data sets: a standard error
    # of 1.4 points)
    for measure, key in (
        ("paired", "nll_change/paired"),
        ("study", "study_mean_ece/min_low_mean_high"),
    ):
        cells = [c for c in conformance.grid("reduced", "printed") if c.shape == "constant"]
        records = [
            conformance.run_cell(dataclasses.replace(c, measure=measure), reps=60, n_boot=20)
            for c in cells
        ]
        pooled = np.mean([r["metrics"][key]["coverage"] for r in records])
        assert pooled >= 0.90, (measure, pooled)
