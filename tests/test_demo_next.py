"""``scripts/demo.sh`` ends by printing the next commands to try (``scripts/demo_next.sh``):
each printed ``calibkit`` command runs as printed on what the study wrote."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

from calibkit.cli import main

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "demo_next.sh"


def printed(*args: str) -> list[str]:
    done = subprocess.run(
        ["bash", str(SCRIPT), *args], capture_output=True, text=True, check=True, timeout=60
    )
    return done.stdout.splitlines()


def test_demo_runs_the_study_then_prints_what_to_try() -> None:
    demo = (ROOT / "scripts" / "demo.sh").read_text(encoding="utf-8").splitlines()
    study = next(i for i, line in enumerate(demo) if "calibkit study" in line)
    assert not demo[study].startswith("exec ")  # the next step still runs after it
    assert any('scripts/demo_next.sh "$@"' in line for line in demo[study + 1 :])


def test_the_printed_commands_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["study", "--smoke", "--models", "mlp", "--out", "study-digits"]) == 0
    lines = printed()  # the demo's own arguments: none
    assert "  source .venv/bin/activate" in lines
    commands = [shlex.split(line)[1:] for line in lines if line.startswith("  calibkit ")]
    assert [c[0] for c in commands] == ["evaluate", "compare"]
    assert commands[0][1] == "study-digits/runs/mlp/seed-0/logits.npz"
    capsys.readouterr()
    for argv in commands:
        assert main(argv) == 0, shlex.join(argv)
    assert (tmp_path / "compare-demo" / "report.html").exists()


def test_the_folder_follows_the_study_arguments(tmp_path: Path) -> None:
    run = tmp_path / "elsewhere" / "runs" / "mlp" / "seed-0"
    run.mkdir(parents=True)
    (run / "logits.npz").write_bytes(b"")
    lines = printed("--epochs", "3", "--out", f"{tmp_path}/elsewhere/", "--smoke")
    assert f"  calibkit evaluate {run / 'logits.npz'}" in " ".join(lines)
    lines = printed("experiments/seed_study/configs/seed_bird_cat.toml", "--seeds", "0")
    assert any("study-seed_bird_cat/report.html" in line for line in lines)
