"""The measurement of ``auto``'s rule against temperature scaling on fresh data: a draw's
record, the rules evaluated on records, a resumed run and its table."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from experiments.intervals import auto_rule
from experiments.test_layout import ENV, ROOT

DRIVER = ROOT / "experiments" / "intervals" / "auto_rule.py"


def _record(**candidates: tuple[float, float, float | None]) -> dict[str, Any]:
    """A record with ``name=(d, se, test_nll)`` per candidate (temperature: 0.3 and 0.3)."""
    rows = {"temperature": {"cv": 0.3, "folds": [], "d": 0.0, "se": 0.0, "test_nll": 0.3}}
    for name, (d, se, test) in candidates.items():
        rows[name] = {"cv": 0.3 + d, "folds": [], "d": d, "se": se, "test_nll": test}
    unit = {"source": "sim-calibrated-K10", "n": 300, "rep": 0}
    return {"unit": unit, "name": "x", "baseline": "temperature", "candidates": rows}


def test_a_draw_records_what_any_rule_needs() -> None:
    unit = auto_rule.Unit("sim-overconfident-K10", 300, 0)
    record = auto_rule.run_unit(unit, None)
    assert record["name"] == "sim-overconfident-K10-n300-r0"
    assert record["n_test"] == auto_rule.N_TEST_SIM
    cands = record["candidates"]
    assert cands["temperature"]["test_nll"] > 0
    for row in cands.values():  # every candidate a rule could choose is scored
        if row["d"] < 0 or row["cv"] < cands["temperature"]["cv"]:
            assert row["test_nll"] is not None
    # the code's own rule, evaluated on the record, is the choice auto made
    assert auto_rule.rules()["auto rule='margin'"](record) == record["chosen_by_code"]
    assert unit.seed == auto_rule.Unit("sim-overconfident-K10", 300, 0).seed
    assert unit.seed != auto_rule.Unit("sim-overconfident-K10", 300, 1).seed


def test_the_rules_and_the_ratio_on_a_constructed_record() -> None:
    record = _record(vector=(-0.01, 0.004, 0.33), svs=(-0.02, 0.004, 0.297))
    rules = auto_rule.rules()
    assert rules["auto rule='one_se'"](record) == "svs"  # both pass: the lower mean
    assert rules["auto rule='margin'"](record) == "svs"  # 5 standard errors
    assert rules["d + 3 se < 0"](_record(vector=(-0.01, 0.004, 0.33))) == "temperature"
    assert auto_rule.ratio(record, "vector") == pytest.approx(1.1)
    s = auto_rule.summary([record, _record(vector=(-0.01, 0.004, 0.33))], rules["d + 2 se < 0"])
    assert s[("sim", 300)]["over_tol"] == 0.5  # vector's 1.1x in the second draw
    assert s[("sim", 300)]["max"] == pytest.approx(1.1)


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(DRIVER), *argv],
        cwd=cwd,
        env={**ENV, "OMP_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_run_resumes_and_tabulates(tmp_path: Path) -> None:
    argv = ["--out", "draws", "--sizes", "200", "--reps", "0", "--sim-reps", "1"]
    done = _run(argv, tmp_path)
    assert done.returncode == 0, done.stderr
    draws = tmp_path / "draws"
    names = sorted(p.name for p in draws.glob("[!.]*.json"))
    assert names == sorted(f"{name}-n200-r0.json" for name in auto_rule.SIMULATED)
    (draws / names[0]).unlink()  # a killed run's missing draw: redone, the others kept
    kept = (draws / names[1]).read_bytes()
    done = _run(argv, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "1 draws written" in done.stdout
    assert (draws / names[1]).read_bytes() == kept
    assert "| auto rule='margin' | sim | 200 | 7 |" in (draws / "table.md").read_text()
    table = _run(["--out", "draws", "--table"], tmp_path)
    assert table.stdout == (draws / "table.md").read_text()


def test_bad_input_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "draws").mkdir()
    (tmp_path / "draws" / "notes.json").write_text('{"mine": 1}')
    done = _run(["--out", "draws", "--reps", "0", "--sim-reps", "1"], tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("auto_rule.py: error: --out: ")
    assert "Traceback" not in done.stderr
    assert sorted(p.name for p in (tmp_path / "draws").iterdir()) == ["notes.json"]
    done = _run(["--out", "new", "--reps", "-1"], tmp_path)
    assert done.stderr == "auto_rule.py: error: --reps: expected a whole number >= 0, got -1\n"
    assert not (tmp_path / "new").exists()
