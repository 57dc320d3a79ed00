from __future__ import annotations

import csv
import dataclasses
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from calibkit.core.errors import InputError
from calibkit.io.atomic import MANIFEST
from calibkit.io.lock import LOCK
from calibkit.study import COLUMNS, load_study_config
from calibkit.study import run_study as run
from calibkit.study.store.run_folder import RunFolder


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def test_tiny_study_writes_every_output(tiny_config: Path, tmp_path: Path) -> None:
    cfg = load_study_config(tiny_config)
    out = tmp_path / "out"
    runs = run(cfg, out, progress=False)
    assert len(runs.records) == 4
    assert runs.classes == ("0", "1", "2")
    rows = _csv(out / "results.csv")
    assert tuple(rows[0]) == COLUMNS
    assert len(rows) == 2 * 2 * 3
    assert {(r["model"], r["seed"], r["calibrator"]) for r in rows} == {
        (m, s, c)
        for m in ("mlp", "mlp_dropout")
        for s in ("0", "1")
        for c in ("none", "temperature", "histogram")
    }
    for r in rows:
        assert 0.0 <= float(r["ece"]) <= 1.0
        assert 0.0 <= float(r["accuracy"]) <= 1.0
        assert (r["temperature"] == "") == (r["calibrator"] == "histogram")
        if r["calibrator"] == "none":
            assert float(r["temperature"]) == 1.0
    assert load_study_config(out / "config.toml") == cfg
    figures = sorted(p.name for p in (out / "figures").iterdir() if p.name != MANIFEST)
    assert figures == sorted(
        f"{kind}_{m}.png"
        for kind in ("training", "confusion", "reliability", "ece_temperature")
        for m in ("mlp", "mlp_dropout")
    )
    md = (out / "report.md").read_text()
    assert "## mlp_dropout: mean ± std over 2 seeds" in md
    assert "ECE floor" in md
    html = (out / "report.html").read_text()
    assert html.count("data:image/png;base64,") == 8
    run_dir = out / "runs" / "mlp" / "seed-0"
    assert {p.name for p in run_dir.iterdir()} == {
        "identity.json",
        "logits.npz",
        "model.safetensors",
        "train.json",
        "calibration.json",
        "temperature.json",
    }
    z = RunFolder(run_dir).logits()
    assert z["cal_logits"].shape == (120, 3)
    assert z["test_logits"].shape[1] == 3


def test_progress_is_logged_not_printed(
    tiny_config: Path,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cfg = load_study_config(tiny_config).select(models=["mlp"], seeds=[0], epochs=1)
    with caplog.at_level(logging.INFO, logger="calibkit"):
        run(cfg, tmp_path / "out", progress=False)
    assert capsys.readouterr() == ("", "")
    by_module = {(r.name, r.getMessage().split(" loss ")[0]) for r in caplog.records}
    assert by_module >= {
        ("calibkit.study.run.runner", "[1/1] mlp seed 0"),
        ("calibkit.study.run.runner", "loading digits:0,1,2"),
        ("calibkit.training.trainer", "mlp seed 0 epoch 1/1"),
        ("calibkit.study", "writing the report"),
    }


def test_rows_match_the_saved_logits(tiny_config: Path, tmp_path: Path) -> None:
    from calibkit.calibrators import TemperatureScaling
    from calibkit.metrics import ece, nll

    runs = run(load_study_config(tiny_config), tmp_path / "o", progress=False)
    rec = runs.records[0]
    z = rec.folder.logits()
    y = z["test_labels"]
    none = next(r for r in rec.rows if r["calibrator"] == "none")
    assert none["ece"] == pytest.approx(ece(y, logits=z["test_logits"]), abs=1e-12)
    ts = TemperatureScaling().fit(z["cal_logits"], z["cal_labels"])
    row = next(r for r in rec.rows if r["calibrator"] == "temperature")
    assert row["temperature"] == pytest.approx(ts.temperature_, rel=1e-9)
    assert row["nll"] == pytest.approx(nll(y, ts.predict_proba(z["test_logits"])), abs=1e-12)
    assert rec.history[-1]["test_accuracy"] == pytest.approx(none["accuracy"])


def test_second_run_reuses_training_and_recalibrates(tiny_config: Path, tmp_path: Path) -> None:
    cfg = load_study_config(tiny_config)
    out = tmp_path / "out"
    run(cfg, out, progress=False)
    weights = out / "runs" / "mlp" / "seed-1" / "model.safetensors"
    stamp = weights.stat().st_mtime_ns
    before = (out / "results.csv").read_text()
    run(cfg, out, progress=False)
    assert (out / "results.csv").read_text() == before
    wider = cfg.select()
    import dataclasses

    wider = dataclasses.replace(cfg, calibrators=("temperature", "isotonic"))
    run(wider, out, progress=False)
    assert weights.stat().st_mtime_ns == stamp  # not retrained
    assert {r["calibrator"] for r in _csv(out / "results.csv")} == {
        "none",
        "temperature",
        "isotonic",
    }


def test_changed_settings_are_refused_not_mixed(tiny_config: Path, tmp_path: Path) -> None:
    cfg = load_study_config(tiny_config)
    out = tmp_path / "out"
    run(cfg.select(seeds=[0]), out, progress=False)
    with pytest.raises(InputError, match=r"out: .*another --out.*got different training$"):
        run(cfg.select(seeds=[0], epochs=1), out, progress=False)
    assert (out / "runs" / "mlp" / "seed-0" / "train.json").exists()


def _calibkit(*args: str, **kw: object) -> subprocess.Popen[bytes]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    code = "import sys; from calibkit.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.Popen([sys.executable, "-c", code, *args], env=env, **kw)  # type: ignore[call-overload]


def test_a_study_killed_midway_resumes_to_the_same_table(tmp_path: Path) -> None:
    from tests.study.conftest import TINY

    cfg = tmp_path / "c.toml"
    cfg.write_text(TINY.replace("epochs = 3", "epochs = 12"), encoding="utf-8")
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    assert _calibkit("study", str(cfg), "--out", str(whole), "--quiet", **quiet).wait() == 0
    proc = _calibkit("study", str(cfg), "--out", str(killed), "--quiet", **quiet)
    deadline = time.monotonic() + 60
    target = killed / "runs" / "mlp_dropout" / "seed-0" / "checkpoint.pt"
    while not target.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (killed / "results.csv").exists()
    assert (killed / LOCK).exists()  # the killed study's lock, taken over below
    assert _calibkit("study", str(cfg), "--out", str(killed), "--quiet", **quiet).wait() == 0
    # exact: the same machine, one thread per run, the same seeded path from a checkpoint
    assert (killed / "results.csv").read_text() == (whole / "results.csv").read_text()
    assert not (killed / LOCK).exists()
    for run_dir in (killed / "runs").glob("*/seed-*"):
        twin = whole / run_dir.relative_to(killed)
        a, b = RunFolder(run_dir).logits(), RunFolder(twin).logits()
        assert all(np.array_equal(a[k], b[k]) for k in a)


def test_runs_made_before_a_setting_existed_still_resume(tiny_config: Path, tmp_path: Path) -> None:
    """A setting added to calibkit later, at its default, does not make old runs foreign."""
    import json

    cfg = load_study_config(tiny_config).select(seeds=[0])
    out = tmp_path / "out"
    run(cfg, out, progress=False)
    for path in (out / "runs").glob("*/seed-0/identity.json"):
        identity = json.loads(path.read_text())
        del identity["training"]["track_learning"]
        del identity["data"]["train_size"]
        path.write_text(json.dumps(identity))
    before = (out / "results.csv").read_text()
    run(cfg, out, progress=False)
    assert (out / "results.csv").read_text() == before
    with pytest.raises(InputError, match="different training"):
        run(cfg.select(epochs=1), out, progress=False)


def test_a_default_calibrator_registered_since_reaches_a_resumed_study(
    tiny_config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``calibrators = []`` means every calibrator that applies: the rows cached for the
    registry of the first run must not hide a calibrator registered since."""
    from calibkit.calibrators import CALIBRATORS

    items = dict(CALIBRATORS._items)
    small = {k: items[k] for k in ("temperature", "histogram")}
    monkeypatch.setattr(CALIBRATORS, "_items", small)
    monkeypatch.setattr(CALIBRATORS, "_declared", {})  # not imported yet: none either
    cfg = load_study_config(tiny_config).select(seeds=[0], models=["mlp"])
    cfg = dataclasses.replace(cfg, calibrators=())
    out = tmp_path / "out"
    run(cfg, out, progress=False)
    assert {r["calibrator"] for r in _csv(out / "results.csv")} == {
        "none",
        "temperature",
        "histogram",
    }
    small["temperature_ece"] = items["temperature_ece"]  # a new default calibrator
    run(cfg, out, progress=False)
    assert {r["calibrator"] for r in _csv(out / "results.csv")} == {
        "none",
        "temperature",
        "histogram",
        "temperature_ece",
    }
