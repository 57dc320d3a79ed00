"""``calibkit compare`` says the default methods it leaves out on this data, each with its
reason, before the work (stderr) and in the report (report.md, results.json)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from calibkit.cli import main
from calibkit.reporting.text import plain
from tests.workflows.test_compare_rows import toy_scope

__all__ = ["toy_scope"]  # the fixture, used by name


def test_the_cli_says_declined_methods_first_and_writes_them(
    toy_scope: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    z = rng.normal(size=(200, 3)) * 3
    np.savez(
        tmp_path / "preds.npz", logits=z, labels=np.argmax(z / 2 + rng.gumbel(size=z.shape), 1)
    )
    assert main(["compare", "preds.npz", "--n-boot", "0", "--out", "rep"]) == 0
    err = capsys.readouterr().err.splitlines()
    said = "calibkit: not run by default: toy_wide (declined from 3 classes on: toy limit)"
    assert said in err
    assert err.index(said) < next(i for i, line in enumerate(err) if "uncalibrated" in line)
    report = plain((tmp_path / "rep" / "report.md").read_text())
    assert (
        "Not run by default on this data: toy_wide (declined from 3 classes on: toy limit)."
        in report
    )
    results = json.loads((tmp_path / "rep" / "results.json").read_text())
    assert results["declined"] == {"toy_wide": "declined from 3 classes on: toy limit"}
