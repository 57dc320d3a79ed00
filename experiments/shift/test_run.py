"""The shift study's driver and analysis: its commands are valid ``calibkit shift`` command
lines, and the analysis reads a results.csv as ``calibkit shift`` writes it."""

from __future__ import annotations

from pathlib import Path

from calibkit.cli.parser import build_parser
from calibkit.reporting.shift_report import results_csv
from calibkit.workflows.shift import ShiftRow
from experiments.shift.analysis import by_severity, wins
from experiments.shift.analysis import read as read_results
from experiments.shift.run import commands


def test_every_command_parses_with_the_study_settings() -> None:
    cmds = commands("DATA", Path("OUT"), 2500, "1-5")
    assert [c[c.index("--model") + 1] for c in cmds] == ["resnet20", "resnet32"]
    for cmd in cmds:
        args = build_parser().parse_args(cmd)
        assert (args.command, args.cal_size, args.test_size) == ("shift", 5000, 2500)
        assert args.severities == [1, 2, 3, 4, 5]
        assert args.weights.startswith("DATA/pretrained/resnet")


def test_the_analysis_reads_the_written_table(tmp_path: Path) -> None:
    rows = [
        ShiftRow("none", "a", 1, 5, {"ece": 0.3, "coverage": float("nan")}),
        ShiftRow("temperature", "a", 1, 5, {"ece": 0.1, "coverage": float("nan")}),
        ShiftRow("ts+lac", "a", 1, 5, {"ece": float("nan"), "coverage": 0.8}),
    ]
    (tmp_path / "results.csv").write_text(results_csv(rows))
    table = read_results(tmp_path)
    assert by_severity(table, "temperature", "ece") == {1: 0.1}
    assert by_severity(table, "ts+lac", "coverage") == {1: 0.8}
    assert wins(table, "temperature", "none", "ece", 1) == (1, 1)
    assert wins(table, "ts+lac", "none", "ece", 1) == (0, 0)  # no ECE for a conformal row
