"""The study report: the temperature scaling it draws is the runner's saved artefact."""

from __future__ import annotations

from pathlib import Path

import pytest

from calibkit.calibrators import TemperatureScaling
from calibkit.core.errors import InputError
from calibkit.reporting.compare_verdict import named
from calibkit.study import load_study_config, run_study
from calibkit.study.report.writer import model_table, results_csv
from calibkit.study.store.run_folder import RunFolder


def test_each_run_saves_its_temperature_scaling(tiny_config: Path, tmp_path: Path) -> None:
    cfg = load_study_config(tiny_config).select(models=["mlp"], seeds=[0])
    out = tmp_path / "out"
    runs = run_study(cfg, out, progress=False)
    rdir = runs.records[0].directory
    z = RunFolder(rdir).logits()
    ts = RunFolder(rdir).temperature()
    fresh = TemperatureScaling().fit(z["cal_logits"], z["cal_labels"])
    assert ts.temperature_ == fresh.temperature_  # saved as JSON: the float round-trips
    row = next(r for r in runs.records[0].rows if r["calibrator"] == "temperature")
    assert row["temperature"] == pytest.approx(ts.temperature_, rel=1e-12)
    # a folder from before the artefact existed: the runner fits it again, report only
    saved = (rdir / RunFolder.TEMPERATURE).read_bytes()
    (rdir / RunFolder.TEMPERATURE).unlink()
    before = (out / "report.md").read_text()
    # the verdict first, right after the title, in Markdown, HTML and results.json
    import json

    verdict = json.loads((out / "results.json").read_text())["verdict"]
    chosen = runs.records[0].recommended
    assert verdict["headline"].startswith(f"Use {named(chosen)} for mlp")
    lines = [line for line in before.splitlines() if line.strip()]
    assert lines[0].startswith("# ")
    assert lines[1] == f"**{verdict['headline']}**"
    page = (out / "report.html").read_text()
    assert page.index('<div class="verdict">') < page.index("<h2")
    body = page[page.index("</h1>") + 5 :].lstrip()
    assert body.startswith('<div class="verdict">')
    assert "**" not in page
    assert "`" not in page
    run_study(cfg, out, progress=False, report_only=True)
    assert (rdir / RunFolder.TEMPERATURE).read_bytes() == saved
    assert (out / "report.md").read_text() == before


def test_a_missing_temperature_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=RunFolder.TEMPERATURE):
        RunFolder(tmp_path).temperature()


def test_results_csv_and_model_table_by_hand() -> None:
    from calibkit.study.store.record import RunRecord

    row = {
        "model": "m",
        "seed": 0,
        "calibrator": "none",
        "accuracy": 0.5,
        "nll": float("nan"),
        "ece": 0.25,
        "aece": 0.125,
        "mce": 1.0,
        "brier": 0.1,
        "temperature": 1.0,
    }
    rec = RunRecord("m", 0, [], [row], 1.0, 10, Path("."))
    assert results_csv([rec]).splitlines() == [
        "model,seed,calibrator,accuracy,nll,ece,aece,mce,brier,temperature",
        "m,0,none,0.5,,0.25,0.125,1.0,0.1,1.0",
    ]
    stats = {
        "none": {"ece": (0.25, 0.0), "temperature": (1.0, 0.0)},
        "ts": {"ece": (0.1, 0.01), "temperature": (1.5, 0.1)},
    }
    table = model_table("m", stats, 2, ("ece", "temperature"))
    assert table.header == ["Calibrator", "ECE", "T"]
    assert [[c.text for c in r] for r in table.rows] == [
        ["none", "25.00 ± 0.00", "1.0000 ± 0.0000"],
        ["ts", "10.00 ± 1.00", "1.5000 ± 0.1000"],
    ]
    assert [c.best for c in table.rows[1]] == [False, True, False]  # T is never ranked


def test_study_verdict_names_each_models_choice_and_what_it_buys() -> None:
    from calibkit.study.report.verdict import study_verdict
    from calibkit.study.store.record import RunRecord

    def rec(model: str, seed: int, chose: str | None) -> RunRecord:
        return RunRecord(model, seed, [], [], 1.0, 10, Path("."), chose)

    stats = {
        "a": {
            "none": {"nll": (0.40, 0.0), "ece": (0.05, 0.0)},
            "temperature": {"nll": (0.30, 0.0), "ece": (0.02, 0.0)},
            "ms_odir": {"nll": (0.28, 0.0), "ece": (0.015, 0.0)},
        }
    }
    one = study_verdict([rec("a", 0, "ms_odir"), rec("a", 1, "ms_odir")], stats)
    assert one.headline == (
        "Use `ms_odir` (matrix scaling with off-diagonal and intercept regularisation) for a: "
        "over the seeds it lowers NLL from 0.3000 to 0.2800 and ECE "
        "from 2.00% to 1.50% against temperature scaling."
    )
    assert one.detail.startswith("2/2 seeds chose it.")
    ts = study_verdict([rec("a", 0, "temperature"), rec("a", 1, "ms_odir")], stats)
    assert ts.headline.startswith(
        "Use `temperature` (temperature scaling) for a: over the seeds it lowers NLL"
    )
    assert ts.headline.endswith("against the uncalibrated model.")
    stats["b"] = stats["a"]
    two = study_verdict([rec("a", 0, "ms_odir"), rec("b", 0, "temperature")], stats)
    assert two.headline == (
        "Use `ms_odir` (matrix scaling with off-diagonal and intercept regularisation) for a, "
        "`temperature` (temperature scaling) for b."
    )
    assert "a (1/1 seed): it lowers NLL" in two.detail  # not "1/1 seeds" (issue #46)
    none = study_verdict([rec("a", 0, None)], {"a": stats["a"]})
    assert none.headline.startswith("The runs hold no recommendation")
    # issue #46, item 3: a smoke run's verdict says beside the method that it is no advice
    smoke = study_verdict(
        [rec("a", 0, "temperature")], {"a": stats["a"]}, smoke="Smoke run (--smoke)."
    )
    assert smoke.headline.startswith(
        "Smoke run, not advice: at toy size the rule picked `temperature` (temperature "
        "scaling) for a"
    )
    assert smoke.detail.startswith("Smoke run (--smoke). 1/1 seed chose it.")


def test_one_run_shows_no_spread_not_a_spread_of_zero() -> None:
    """A standard deviation over one run is undefined: '–', never '± 0.00' (#30)."""
    from calibkit.study.report.writer import _fmt, _stats

    assert _fmt(*_stats([0.25]), True) == "25.00 ± –"
    assert _fmt(*_stats([0.25, 0.35]), True) == "30.00 ± 7.07"


def test_the_true_ece_column_is_the_lowest_lower_end_and_the_mean_upper_end() -> None:
    """An interval of the seeds' mean true ECE (issue 43): the lowest of the runs' lower
    ends (the mean of them missed a calibrated model's 0 in 11% of simulated 5-seed studies
    at n = 100,000) and the mean of their upper ends; rows without bounds show a dash."""
    from types import SimpleNamespace

    from calibkit.study.report.writer import _true_ece

    def run(low: float, high: float) -> SimpleNamespace:
        return SimpleNamespace(
            rows=[{"calibrator": "temperature", "ece_low": low, "ece_high": high}]
        )

    runs = [run(0.01, 0.03), run(0.0, 0.05), run(0.02, 0.04)]
    assert _true_ece(runs, "temperature") == "[0.00, 4.00]"  # type: ignore[arg-type]
    old = [SimpleNamespace(rows=[{"calibrator": "temperature", "ece": 0.02}])]
    assert _true_ece(old, "temperature") == "–"  # type: ignore[arg-type]
