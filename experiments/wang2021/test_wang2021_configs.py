"""The shipped Wang et al. configs are what ``wang2021_configs.py`` writes, where it writes;
it writes them only when asked (``--write``), and never over an edit."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from calibkit.core.errors import InputError
from experiments.test_layout import ENV, ROOT
from experiments.wang2021 import wang2021_configs as generator


@pytest.mark.parametrize("key", list(generator.DATASETS))
def test_the_shipped_config_is_the_generated_one(key: str) -> None:
    shipped = generator.CONFIGS / f"wang2021_{key}.toml"
    assert shipped.read_text(encoding="utf-8") == generator.config(key)


@pytest.mark.parametrize("key", list(generator.FULLSCALE))
def test_the_shipped_full_scale_config_is_the_generated_one(key: str) -> None:
    shipped = generator.FULLSCALE_CONFIGS / f"wang2021_resnet32_{key}.toml"
    assert shipped.read_text(encoding="utf-8") == generator.fullscale_config(key)


def _tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() if p.is_file() else b""
        for p in sorted(folder.rglob("*"))
    }


@pytest.fixture
def configs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[Path, str]:
    """The generator writing into ``tmp_path`` (its two folders there, empty): its files."""
    for folder in ("wang2021", "fullscale"):
        (tmp_path / folder).mkdir()
    monkeypatch.setattr(generator, "CONFIGS", tmp_path / "wang2021")
    monkeypatch.setattr(generator, "FULLSCALE_CONFIGS", tmp_path / "fullscale")
    monkeypatch.setattr(generator, "RECORD", tmp_path / "wang2021" / ".wang2021_configs.json")
    return generator.generated()


def test_help_and_no_argument_leave_the_configs_as_they_are(tmp_path: Path) -> None:
    """``--help`` prints the usage, no argument the usage and exit status 2; neither writes
    (the generator used to rewrite every config, a user's uncommitted edit too). Run on a
    copy of the generator and its configs, one of them edited."""
    root = tmp_path / "repo"
    for name in (
        "experiments/__init__.py",
        "experiments/_driver.py",
        "experiments/wang2021/__init__.py",
        "experiments/wang2021/wang2021_configs.py",
        *(p.relative_to(ROOT).as_posix() for p in generator.CONFIGS.glob("wang2021_*.toml")),
        *(
            p.relative_to(ROOT).as_posix()
            for p in generator.FULLSCALE_CONFIGS.glob("wang2021_resnet32_*.toml")
        ),
    ):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / name, root / name)
    edited = root / "experiments" / "wang2021" / "configs" / "wang2021_birdcat.toml"
    edited.write_text(edited.read_text(encoding="utf-8") + "# my edit\n", encoding="utf-8")
    before = _tree(root)
    script = root / "experiments" / "wang2021" / "wang2021_configs.py"
    for argv, status, stream in (["--help"], 0, "stdout"), ([], 2, "stderr"):
        done = subprocess.run(
            [sys.executable, str(script), *argv],
            cwd=tmp_path,
            env=ENV,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert _tree(root) == before  # the edit kept: nothing written
        assert done.returncode == status, done.stderr
        assert getattr(done, stream).startswith("usage: ")
        assert "Traceback" not in done.stderr
        assert sorted(p.name for p in tmp_path.iterdir()) == ["repo"]


def test_write_writes_what_is_missing_and_then_nothing(
    configs: dict[Path, str], tmp_path: Path
) -> None:
    assert generator.write(configs, generator.RECORD) == list(configs)
    assert {p: p.read_text(encoding="utf-8") for p in configs} == configs
    record = json.loads(generator.RECORD.read_text(encoding="utf-8"))["files"]
    assert sorted(record) == sorted(os.path.relpath(p, generator.CONFIGS) for p in configs)
    before = {p.as_posix(): p.stat().st_mtime_ns for p in tmp_path.rglob("*")}
    assert generator.write(configs, generator.RECORD) == []  # all as generated: untouched
    assert {p.as_posix(): p.stat().st_mtime_ns for p in tmp_path.rglob("*")} == before


def test_an_edited_config_is_refused_and_nothing_is_written(
    configs: dict[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    generator.write(configs, generator.RECORD)
    paths = list(configs)
    edited, missing = paths[0], paths[-1]
    edited.write_text(configs[edited].replace("epochs = 20", "epochs = 30"), encoding="utf-8")
    missing.unlink()
    before = _tree(tmp_path)
    assert generator.main(["--write"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"wang2021_configs.py: error: {edited}: expected the config as ")
    assert err.count("\n") == 1
    assert _tree(tmp_path) == before  # the edit kept, the missing config not written either


def test_a_config_it_wrote_before_is_replaced_by_the_new_one(
    configs: dict[Path, str], tmp_path: Path
) -> None:
    """After a change to the generator, the configs it wrote before are rewritten; one it
    did not write (no record of it) is refused."""
    old = {p: text.replace("epochs = 20", "epochs = 10") for p, text in configs.items()}
    generator.write(old, generator.RECORD)
    assert generator.write(configs, generator.RECORD) == list(configs)
    assert {p: p.read_text(encoding="utf-8") for p in configs} == configs
    generator.RECORD.unlink()
    for path, text in old.items():
        path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match="changed since"):
        generator.write(configs, generator.RECORD)
    assert {p: p.read_text(encoding="utf-8") for p in configs} == old


def test_no_argument_is_the_usage_not_a_write(configs: dict[Path, str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        generator.main([])
    assert exit_.value.code == 2
    assert not any(p.exists() for p in configs)
