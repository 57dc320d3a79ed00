"""guo2017_report.py writes each study's folder whole, refusing a folder of the user's (and
any bad input) in one line before anything is written, and rewrites a folder it wrote."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from calibkit.io.atomic import MANIFEST
from calibkit.reporting.document import Document, Paragraph
from experiments.guo2017 import guo2017_report
from experiments.test_layout import ENV, ROOT

CONFIG = ROOT / "experiments" / "guo2017" / "configs" / "guo2017_birdcat.toml"


def _study(folder: Path) -> Path:
    """A study folder as ``calibkit study`` leaves it (what this script reads of it)."""
    (folder / "figures").mkdir(parents=True)
    (folder / "report.md").write_text("# the study's report\n", encoding="utf-8")
    (folder / "results.json").write_text(json.dumps({"rows": [], "runs": []}), encoding="utf-8")
    (folder / "figures" / "reliability.png").write_bytes(b"png")
    return folder


def _tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() if p.is_file() else b""
        for p in sorted(folder.rglob("*"))
    }


@pytest.fixture
def small_document(monkeypatch: pytest.MonkeyPatch) -> None:
    """The factor document of a study without runs: one paragraph (its tables and figures
    are test_factor_figures.py's)."""

    def document(config: Path, study: Path) -> Document:
        return Document("Factors", [Paragraph(f"{config.name} {study.name}")])

    monkeypatch.setattr(guo2017_report, "document", document)


def test_the_users_folder_holding_report_and_config_is_refused_and_kept(tmp_path: Path) -> None:
    """The red team's case: ``--out DIR`` where ``DIR/NAME`` holds the user's report.md and
    config.toml. Refused in one line, exit status 2, no traceback, nothing changed."""
    study = _study(tmp_path / "study")
    out = tmp_path / "mine"
    (out / "birdcat").mkdir(parents=True)
    (out / "birdcat" / "report.md").write_text("my report\n", encoding="utf-8")
    (out / "birdcat" / "config.toml").write_text("# my config\n", encoding="utf-8")
    before = _tree(tmp_path)
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "experiments" / "guo2017" / "guo2017_report.py"),
            f"{CONFIG}:{study}:birdcat",
            "--out",
            str(out),
        ],
        cwd=tmp_path,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith("guo2017_report.py: error: --out: ")
    assert "calibkit did not write (config.toml, report.md)" in done.stderr
    assert _tree(tmp_path) == before


@pytest.mark.usefixtures("small_document")
def test_a_folder_it_wrote_is_rewritten_and_an_edit_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    study = _study(tmp_path / "study")
    argv = [f"{CONFIG}:{study}:birdcat", "--out", str(tmp_path)]
    assert guo2017_report.main(argv) == 0
    dest = tmp_path / "birdcat"
    assert sorted(_tree(dest)) == [
        MANIFEST,
        "config.toml",
        "factors.md",
        "figures",
        "figures/reliability.png",
        "report.md",
    ]
    assert (dest / "config.toml").read_bytes() == CONFIG.read_bytes()
    assert guo2017_report.main(argv) == 0  # its own folder, unchanged since: rewritten
    assert capsys.readouterr().out.count(f"wrote {dest}") == 2
    with (dest / "factors.md").open("a", encoding="utf-8") as f:
        f.write("my notes\n")
    before = _tree(tmp_path)
    assert guo2017_report.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("guo2017_report.py: error: --out: ")
    assert "factors.md changed since calibkit wrote it" in err
    assert _tree(tmp_path) == before


@pytest.mark.usefixtures("small_document")
@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("{config}:{study}:", "CONFIG:STUDY_DIR:NAME: expected a NAME that is one folder name"),
        ("{config}:{study}:.", "CONFIG:STUDY_DIR:NAME: expected a NAME that is one folder name"),
        ("{config}:{study}", "CONFIG:STUDY_DIR:NAME: expected three parts separated by ':'"),
        ("{config}:{study}:a/b", "CONFIG:STUDY_DIR:NAME: expected a NAME that is one folder"),
        ("{config}:{study}:mine", "--out: expected a new or empty folder"),
        ("{config}:{tmp}/nowhere:a", "STUDY_DIR: expected a folder holding report.md"),
        ("{config}:{tmp}/mine:a", "STUDY_DIR: expected a folder holding report.md"),
        ("{tmp}/none.toml:{study}:a", "CONFIG: expected an existing file"),
    ],
)
def test_bad_input_is_refused_before_any_folder_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: str, message: str
) -> None:
    """Every study is checked before the first is written: a good one first is not written
    either when a later one is bad; ``NAME`` empty or ``.`` would be ``--out`` itself."""
    study = _study(tmp_path / "study")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "report.md").write_text("mine\n", encoding="utf-8")
    bad = spec.format(config=CONFIG, study=study, tmp=tmp_path)
    before = _tree(tmp_path)
    assert guo2017_report.main([f"{CONFIG}:{study}:good", bad, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"guo2017_report.py: error: {message}"), err
    assert err.count("\n") == 1
    assert _tree(tmp_path) == before


@pytest.mark.usefixtures("small_document")
def test_two_studies_of_one_name_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    study = _study(tmp_path / "study")
    spec = f"{CONFIG}:{study}:a"
    assert guo2017_report.main([spec, spec, "--out", str(tmp_path)]) == 2
    assert "expected a different NAME for each study" in capsys.readouterr().err
    assert not (tmp_path / "a").exists()
