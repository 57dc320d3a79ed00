"""Every command that reports writes the same three files under ``--out`` through the one
writer, opens with its verdict, and shows no raw Markdown in its HTML.

evaluate, compare, conformal, labelshift and demo run on small synthetic predictions here;
shift needs the pretrained ResNet-20 and CIFAR-10 (skipped without ``../shared/data``) and
study runs its smoke size.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import numpy as np
import pytest

from calibkit.cli import main
from tests.conftest import shared_path

pytestmark = pytest.mark.usefixtures("one_thread")

#: What raw Markdown looks like in a page's text: bold or code marks, links, headings, rows.
RAW = re.compile(r"\*\*|`|\]\(|^\s*#{1,6} |^\s*\|", re.MULTILINE)


def page_text(page: str) -> str:
    """The visible text of an HTML page (style, tags and data URIs dropped)."""
    page = re.sub(r"<style>.*?</style>", "", page, flags=re.DOTALL)
    return html.unescape(re.sub(r"<[^>]+>", "\n", page))


def check_report(folder: Path, stdout: str) -> dict[str, object]:
    """The three files exist, the verdict comes first everywhere, no raw Markdown."""
    for name in ("report.md", "report.html", "results.json"):
        assert (folder / name).is_file(), f"{folder.name}: {name} missing"
    page = (folder / "report.html").read_text(encoding="utf-8")
    assert not RAW.search(page_text(page)), RAW.search(page_text(page))
    after_title = page.split("</h1>", 1)[1].lstrip()
    assert after_title.startswith('<div class="verdict">'), after_title[:200]
    md = (folder / "report.md").read_text(encoding="utf-8").splitlines()
    assert md[0].startswith("# "), md[:3]
    assert md[2].startswith("**"), md[:3]
    results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    headline = results["verdict"]["headline"].replace("**", "").replace("`", "")
    assert headline
    assert headline in stdout.replace("\n", " ")
    assert stdout.lstrip().startswith(headline[:30])
    assert {"inputs", "options", "versions", "command"} <= set(results)
    return dict(results)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Overconfident predictions (10 classes), and a label-shifted target of them."""
    rng = np.random.default_rng(0)
    n, k = 3000, 10
    y = rng.integers(0, k, n)
    z = rng.normal(size=(n, k)) + 2.0 * np.eye(k)[y]
    hot = 2.5 * z
    root = tmp_path_factory.mktemp("every-report")
    np.savez(root / "preds.npz", logits=hot, labels=y)
    np.savez(root / "source.npz", logits=hot[:1500], labels=y[:1500])
    keep = np.flatnonzero((y[1500:] < 3) | (rng.random(1500) < 0.2)) + 1500
    np.savez(root / "target.npz", logits=hot[keep], labels=y[keep])
    return {
        "preds": root / "preds.npz",
        "source": root / "source.npz",
        "target": root / "target.npz",
    }


COMMANDS = {
    "evaluate": lambda f: ["evaluate", str(f["preds"]), "--n-boot", "50"],
    "compare": lambda f: [
        "compare",
        str(f["preds"]),
        "--n-boot",
        "50",
        "--methods",
        "temperature,vector,histogram",
    ],
    "conformal": lambda f: ["conformal", str(f["preds"]), "--n-boot", "50"],
    "labelshift": lambda f: [
        "labelshift",
        "--cal",
        str(f["source"]),
        "--target",
        str(f["target"]),
        "--n-boot",
        "50",
    ],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_report(
    command: str, files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report"
    assert main([*COMMANDS[command](files), "--out", str(out)]) == 0
    results = check_report(out, capsys.readouterr().out)
    assert results["command"] == f"calibkit {command}"


def test_demo_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--epochs", "20", "--n-boot", "20"]) == 0
    check_report(out, capsys.readouterr().out)


def test_study_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "study"
    assert main(["study", "--smoke", "--quiet", "--out", str(out)]) == 0
    folder_text = capsys.readouterr().out
    page = (out / "report.html").read_text(encoding="utf-8")
    assert not RAW.search(page_text(page))
    assert page.split("</h1>", 1)[1].lstrip().startswith('<div class="verdict">')
    said = json.loads((out / "results.json").read_text(encoding="utf-8"))["verdict"]
    assert folder_text.startswith(said["headline"].replace("`", ""))
    assert "report:" in folder_text


def test_shift_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    weights = shared_path("pretrained/resnet20-12fca82f.th")
    shared_path("cifar10-jpeg.zip")
    out = tmp_path / "shift"
    args = [
        "shift",
        "--model",
        "resnet20",
        "--weights",
        str(weights),
        "--data-dir",
        str(weights.parents[1]),
    ]
    args += ["--cal-size", "300", "--test-size", "200", "--corruptions", "gaussian_noise"]
    args += ["--severities", "1,5", "--methods", "none,temperature", "--device", "cpu"]
    assert main([*args, "--out", str(out)]) == 0
    check_report(out, capsys.readouterr().out)
