"""Neural Clamping inside a study: rows from the run's model and inputs, cached."""

from __future__ import annotations

from pathlib import Path

import pytest

from calibkit.core.errors import InputError
from calibkit.study import load_study_config
from calibkit.study import run_study as run
from tests.study.conftest import TINY

CLAMPED = TINY.replace(
    'calibrators = ["temperature", "histogram"]',
    'calibrators = ["temperature"]\n'
    'input_calibrators = ["nc_fast", "nc_fl"]\n'
    "input_calibrator_params = { nc_fl = { epochs = 2, batch_size = 64, ablation = true } }\n"
    'report_metrics = ["accuracy", "entropy", "ece", "sce", "fit_seconds"]',
).replace("seeds = [0, 1]", "seeds = [0]")


def test_input_calibrators_add_rows_and_are_cached(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(CLAMPED, encoding="utf-8")
    cfg = load_study_config(path).select(models=["mlp"])
    out = tmp_path / "out"
    runs = run(cfg, out, progress=False)
    rows = runs.records[0].rows
    names = [r["calibrator"] for r in rows]
    assert names == [
        "none",
        "temperature",
        "nc_fast",
        "nc_fl",
        "nc_fl:delta_only",
        "nc_fl:temperature_only",
        "nc_fl:sgd",
    ]
    by = {r["calibrator"]: r for r in rows}
    assert by["nc_fl:delta_only"]["temperature"] == 1.0
    assert by["nc_fl"]["fit_seconds"] > 0
    assert {"entropy", "sce"} <= set(by["nc_fast"])
    md = (out / "report.md").read_text()
    assert "| Calibrator | Accuracy | Entropy | ECE | SCE | Fit time (s) |" in md
    none_row = next(line for line in md.splitlines() if line.startswith("| none |"))
    assert none_row.endswith("| – |")  # no fit of its own
    rdir = out / "runs" / "mlp" / "seed-0"

    def stamps() -> dict[str, int]:
        return {n: (rdir / f"clamping-{n}.json").stat().st_mtime_ns for n in ("nc_fast", "nc_fl")}

    before = stamps()
    run(cfg, out, progress=False)
    assert stamps() == before  # everything cached
    path.write_text(CLAMPED.replace("epochs = 2,", "epochs = 3,"), encoding="utf-8")
    changed = load_study_config(path).select(models=["mlp"])
    rows = run(changed, out, progress=False).records[0].rows
    after = stamps()
    assert after["nc_fast"] == before["nc_fast"]  # its settings did not change: kept
    assert after["nc_fl"] != before["nc_fl"]  # refitted alone
    assert [r["calibrator"] for r in rows] == names


@pytest.mark.parametrize(
    ("old", "new", "error", "match"),
    [
        ('"nc_fast", "nc_fl"', '"nc_slow"', InputError, "nc_ce, nc_fast, nc_fl, ts_focal"),
        ("epochs = 2,", "epochz = 2,", InputError, r"input_calibrator_params\.nc_fl"),
        ('"entropy", "ece"', '"entropie", "ece"', InputError, "report_metrics"),
        ('"nc_fast", "nc_fl"', '"nc_fast", "nc_fast"', InputError, "input_calibrators"),
        ('"nc_fast", "nc_fl"', '"nc_fast@"', InputError, "input_calibrators"),
        ('"nc_fast", "nc_fl"', '"nc_slow@held"', InputError, "nc_ce, nc_fast"),
        ("nc_fl = {", '"nc_fl@held" = { holdout = 0.2 }, nc_fl = {', InputError, "listed in"),
        ("nc_fl = {", '"nc_fl@x" = { holdout = 2.0 }, nc_fl = {', InputError, "c.toml: holdout"),
    ],
)
def test_bad_input_calibrator_settings(
    tmp_path: Path, old: str, new: str, error: type[Exception], match: str
) -> None:
    path = tmp_path / "c.toml"
    text = CLAMPED.replace(old, new)
    if "nc_fl@x" in new:
        text = text.replace('"nc_fl"]', '"nc_fl", "nc_fl@x"]')
    path.write_text(text, encoding="utf-8")
    with pytest.raises(error, match=match):
        load_study_config(path)


def test_a_labelled_copy_of_a_method_fits_with_its_own_parameters(tmp_path: Path) -> None:
    text = CLAMPED.replace('"nc_fast", "nc_fl"', '"nc_ce", "nc_ce@held"').replace(
        "nc_fl = { epochs = 2, batch_size = 64, ablation = true }",
        'nc_ce = { epochs = 2 }, "nc_ce@held" = { epochs = 2, holdout = 0.25 }',
    )
    path = tmp_path / "c.toml"
    path.write_text(text, encoding="utf-8")
    cfg = load_study_config(path).select(models=["mlp"])
    out = tmp_path / "out"
    rows = run(cfg, out, progress=False).records[0].rows
    assert [r["calibrator"] for r in rows] == ["none", "temperature", "nc_ce", "nc_ce@held"]
    rdir = out / "runs" / "mlp" / "seed-0"
    assert (rdir / "clamping-nc_ce@held.json").exists()
    by = {r["calibrator"]: r for r in rows}
    assert by["nc_ce"]["ece"] != by["nc_ce@held"]["ece"]


def test_report_only_marks_methods_fitted_on_fewer_runs(tmp_path: Path) -> None:
    text = CLAMPED.replace("seeds = [0]", "seeds = [0, 1]").replace(
        '"nc_fast", "nc_fl"', '"nc_fast"'
    )
    text = text.replace("nc_fl = { epochs = 2, batch_size = 64, ablation = true }", "")
    path = tmp_path / "c.toml"
    path.write_text(text.replace('input_calibrators = ["nc_fast"]', ""), encoding="utf-8")
    out = tmp_path / "out"
    run(load_study_config(path).select(models=["mlp"]), out, progress=False)  # 2 runs, no NC
    path.write_text(text, encoding="utf-8")
    cfg = load_study_config(path).select(models=["mlp"])
    run(cfg.select(seeds=[0]), out, progress=False)  # nc_fast on seed 0 only
    runs = run(cfg, out, progress=False, report_only=True)
    assert [len(r.rows) for r in runs.records] == [3, 2]
    md = (out / "report.md").read_text()
    assert "| nc_fast (n = 1) |" in md
    assert "| temperature |" in md
