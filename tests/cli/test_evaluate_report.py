"""``calibkit evaluate``: the verdict first (overconfident, underconfident, or
indistinguishable from calibrated), and the report folder ``--out DIR``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from calibkit import Resampling
from calibkit.cli import main
from calibkit.core.outputs import as_outputs
from calibkit.reporting.evaluate_report import evaluation_verdict
from calibkit.workflows.evaluate import evaluate_outputs


def _calibrated(n: int = 3000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Logits and labels drawn from their own softmax: calibrated by construction."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, 5)) * 2.0
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    y = (p.cumsum(axis=1) > rng.random((n, 1))).argmax(axis=1)
    return z, y


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    z, y = _calibrated()
    for name, scale in (("calibrated", 1.0), ("over", 3.0), ("under", 0.3)):
        np.savez(tmp_path / f"{name}.npz", logits=z * scale, labels=y)
    return tmp_path


@pytest.mark.parametrize(("scale", "word"), [(3.0, "overconfident"), (0.3, "underconfident")])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_verdict_names_the_direction(scale: float, word: str, seed: int) -> None:
    z, y = _calibrated(seed=seed)
    run = evaluate_outputs(
        as_outputs(y, logits=z * scale), resampling=Resampling(n_boot=0, seed=seed)
    )
    verdict = evaluation_verdict(run, "p.npz")
    assert verdict.headline.startswith(f"The model is {word}: "), verdict.headline
    assert "% confident on average" in verdict.headline
    assert "times its noise floor" in verdict.headline
    assert "Run `calibkit compare p.npz` to choose a calibrator." in verdict.headline


def test_a_calibrated_model_is_indistinguishable_from_calibrated() -> None:
    """The ECE is judged against the ECE a calibrated model stays below 95% of the time,
    so about one calibrated model in 20 is called miscalibrated: 4 of 5 at least pass."""
    said = []
    for seed in range(5):
        z, y = _calibrated(seed=seed)
        run = evaluate_outputs(as_outputs(y, logits=z), resampling=Resampling(n_boot=0, seed=seed))
        said.append(evaluation_verdict(run, "p.npz").headline)
    calm = [h for h in said if h.startswith("The model is indistinguishable from calibrated")]
    assert len(calm) >= 4, said
    assert all("compare" not in h and "noise floor" in h for h in calm)


def _headline(text: str) -> str:
    return text.strip().splitlines()[0]


@pytest.mark.parametrize(
    ("file", "word"),
    [("over", "overconfident"), ("under", "underconfident"), ("calibrated", "calibrated")],
)
def test_the_terminal_shows_the_verdict_first_then_the_table(
    work: Path, capsys: pytest.CaptureFixture[str], file: str, word: str
) -> None:
    capsys.readouterr()
    assert main(["evaluate", f"{file}.npz", "--n-boot", "20"]) == 0
    out = capsys.readouterr().out
    first = _headline(out)
    assert first.startswith("The model is"), first
    assert word in first, first
    assert "`" not in out
    assert "**" not in out
    lines = out.splitlines()
    assert lines[1].startswith("  ECE ")  # the statistics right below
    table = next(i for i, line in enumerate(lines) if line.startswith("Metric "))
    assert table > 1
    assert "95% CI" in lines[table]


def test_out_writes_the_report_folder(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["evaluate", "over.npz", "--n-boot", "20", "--out", "rep", "--extra", "smooth_ece"]
    assert main([*argv, "--level", "0.9"]) == 0
    stdout = capsys.readouterr().out
    rep = work / "rep"
    for name in ("report.md", "report.html", "results.json"):
        assert (rep / name).is_file(), name
    figures = sorted(p.name for p in (rep / "figures").iterdir())
    assert figures == ["reliability.png", "risk_coverage.png", "smooth_reliability.png"]
    assert "report: rep/report.html" in stdout
    results = json.loads((rep / "results.json").read_text())
    assert results["command"] == "calibkit evaluate"
    assert results["verdict"]["headline"].startswith("The model is overconfident")
    assert results["ci_level"] == 0.9
    assert results["ece"] > results["ece_floor"]
    assert results["ece_noise_limit"] > results["ece_floor"]
    assert results["confidence"] > results["accuracy"]
    assert results["options"]["level"] == 0.9
    assert results["inputs"]["FILE"]["path"] == str(work / "over.npz")
    assert "smooth_ece" in results
    assert "smooth_ece" not in results["ci"]  # no interval (issue 43)
    # the verdict is the first thing after the title, in Markdown and in HTML
    md = (rep / "report.md").read_text().split("\n\n")
    assert md[0] == "# Evaluation of over.npz"
    assert md[1].startswith("**The model is overconfident")
    assert "`calibkit compare over.npz`" in md[1]
    html = (rep / "report.html").read_text()
    after_title = html.split("</h1>", 1)[1].lstrip()
    assert after_title.startswith('<div class="verdict"><p class="headline">The model is over')
    assert "<code>calibkit compare over.npz</code>" in html
    text = re.sub(r"<code>.*?</code>", "", html)
    assert "**" not in text
    assert "`" not in text
    assert "figures/reliability.png" in html
    assert "figures/risk_coverage.png" in html


def test_json_keeps_the_metrics_at_the_top_level(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["evaluate", "under.npz", "--n-boot", "0", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["verdict"]["headline"].startswith("The model is underconfident")
    assert 0 < out["ece"] < 1
    assert out["n_samples"] == 3000
    assert sorted(p.name for p in work.iterdir()) == ["calibrated.npz", "over.npz", "under.npz"]


def test_groups_put_the_gap_and_compare_groups_in_the_verdict(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    z, y = _calibrated()
    half = np.arange(y.size) % 2 == 0
    z = np.where(half[:, None], z * 3.0, z)  # one group overconfident
    np.savez("g.npz", logits=z, labels=y, site=np.where(half, "a", "b"))
    capsys.readouterr()
    assert main(["evaluate", "g.npz", "--groups", "site", "--n-boot", "0", "--out", "rep"]) == 0
    first = _headline(capsys.readouterr().out)
    assert "worst group ('a'" in first
    assert "calibkit compare g.npz --groups site" in first
    md = (work / "rep" / "report.md").read_text()
    assert "## Per group (site)" in md


def test_out_on_a_foreign_folder_exits_2_and_writes_nothing(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (work / "mine").mkdir()
    (work / "mine" / "notes.txt").write_text("not calibkit's")
    capsys.readouterr()
    argv = ["evaluate", "over.npz", "--n-boot", "0", "--out", "mine", "--plot", "r.png"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--out" in err
    assert "Traceback" not in err
    assert sorted(p.name for p in (work / "mine").iterdir()) == ["notes.txt"]
    assert not (work / "r.png").exists()


def test_an_unknown_extra_exits_2_before_any_work(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["evaluate", "over.npz", "--extra", "nope", "--out", "rep"]) == 2
    err = capsys.readouterr().err
    assert "--extra" in err
    assert "'nope'" in err
    assert not (work / "rep").exists()


def test_run_is_short() -> None:
    import inspect

    from calibkit.cli import evaluate

    assert len(inspect.getsource(evaluate.run).splitlines()) <= 40


def test_the_suggested_compare_runs_as_printed(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file read with ``--kind`` and array names (the demo's ``logits.npz``): the verdict's
    ``calibkit compare`` command repeats them, and runs as printed."""
    import shlex

    z, y = _calibrated()
    np.savez(work / "run.npz", test_logits=z * 3.0, test_labels=y)
    reading = ["--kind", "logits", "--scores-key", "test_logits", "--labels-key", "test_labels"]
    assert main(["evaluate", "run.npz", *reading, "--n-boot", "0"]) == 0
    out = capsys.readouterr().out
    found = re.search(r"Run `?(calibkit compare .*?)`? to choose a calibrator", out)
    assert found is not None, out
    argv = shlex.split(found.group(1))[1:]
    assert argv[:8] == ["compare", "run.npz", *reading]
    methods = ["--methods", "temperature", "--n-boot", "0"]
    assert main([*argv, *methods]) == 0
