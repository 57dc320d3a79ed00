"""``calibkit demo --out``: the report folder rule of ``compare``, checked before training
(a refusal exits 2 with one line and changes no file; no temporary folder is left)."""

from __future__ import annotations

from pathlib import Path

import pytest

from calibkit.cli import main
from calibkit.io.atomic import MANIFEST
from tests.study.conftest import tree

FAST = ["demo", "--epochs", "1", "--n-boot", "0", "--methods", "temperature"]


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("the user's file")
    (tmp_path / "afile").write_text("x")
    return tmp_path


@pytest.mark.parametrize("out", ["mine", ".", "..", "afile"])
def test_demo_refuses_a_folder_it_did_not_write(
    work: Path, capsys: pytest.CaptureFixture[str], out: str
) -> None:
    root = work.parent if out == ".." else work
    before = tree(root)
    assert main([*FAST, "--out", out]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith("calibkit: error: --out: expected"), err
    assert tree(root) == before


def test_demo_replaces_its_own_report_only(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*FAST, "--out", "rep"]) == 0
    assert MANIFEST in tree(work / "rep")
    assert main([*FAST, "--seed", "1", "--out", "rep"]) == 0
    assert sorted(p.name for p in work.iterdir()) == ["afile", "mine", "rep"]  # no temporaries
    (work / "rep" / "notes.txt").write_text("mine")
    capsys.readouterr()
    before = tree(work)
    assert main([*FAST, "--out", "rep"]) == 2
    assert "files calibkit did not write (notes.txt)" in capsys.readouterr().err
    assert tree(work) == before
