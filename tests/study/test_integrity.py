"""A study's integrity, as families: a refused study changes no file (everything is checked
before anything is written), its ``--out`` holds only files a study writes, and one study
at a time writes a folder (a lock, refused not waited for; a killed holder's lock is
taken over)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from calibkit.cli import main
from calibkit.core.errors import InputError
from calibkit.io.lock import LOCK
from calibkit.study import load_study_config, run_study
from calibkit.study.store.folder import is_study_file
from tests.study.conftest import TINY, tree

#: The tiny study cut to one seed and one epoch (two runs, a few seconds).
SMALL = TINY.replace("seeds = [0, 1]", "seeds = [0]").replace("epochs = 3", "epochs = 1")


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished study folder (``out``) beside its config (``small.toml``)."""
    root = tmp_path_factory.mktemp("finished")
    (root / "small.toml").write_text(SMALL, encoding="utf-8")
    assert main(["study", str(root / "small.toml"), "--out", str(root / "out"), "--quiet"]) == 0
    return root


@pytest.fixture
def work(finished: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of :func:`finished` as the current folder."""
    shutil.copytree(finished, tmp_path / "w")
    monkeypatch.chdir(tmp_path / "w")
    return tmp_path / "w"


def refused(capsys: pytest.CaptureFixture[str], root: Path, argv: list[str], option: str) -> str:
    """``calibkit argv`` exits 2 with one line naming ``option`` (after the config file's name
    for a key of the file); ``root`` is unchanged."""
    capsys.readouterr()
    before = tree(root)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith("calibkit: error: "), err
    assert f"{option}: expected" in err, err
    assert "Traceback" not in err
    assert tree(root) == before
    return err


def _config(work: Path, old: str, new: str) -> str:
    path = work / "bad.toml"
    path.write_text(SMALL.replace(old, new, 1), encoding="utf-8")
    return str(path)


BAD_CONFIGS = {
    "unknown model": ('name = "mlp"\nparams', 'name = "mlq"\nparams', "models[0].name"),
    "unknown dataset": ('"digits:0,1,2"', '"nosuch"', "data.dataset"),
    "unknown calibrator": ('"histogram"]', '"nope"]', "calibrators"),
    "binary-only calibrator": ('"histogram"]', '"platt"]', "calibrators"),
    "model not buildable": (
        "dropout = 0.3",
        "dropout = 0.3, depth = 4",
        "models.mlp_dropout.params",
    ),
    "seed above the range": ("seeds = [0]", "seeds = [0, 18446744073709551616]", "seeds"),
    "negative split seed": (
        "calibration_size = 120",
        "calibration_size = 120\nsplit_seed = -1",
        "split_seed",
    ),
    "changed settings": ("epochs = 1", "epochs = 2", "out"),
    "missing data file": (
        '"digits:0,1,2"\ncalibration_size = 120',
        '"cifar10-jpeg:bird,cat"\ncalibration_size = 120\ndata_dir = "nowhere"',
        "",
    ),
}


@pytest.mark.parametrize("kind", list(BAD_CONFIGS))
def test_a_refused_study_changes_no_file(
    work: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    old, new, option = BAD_CONFIGS[kind]
    config = _config(work, old, new)
    outs = ["out"] if kind == "changed settings" else ["out", "new"]
    for out in outs:  # a finished study folder, and a folder that is not there yet
        argv = ["study", config, "--out", out, "--quiet"]
        if option:
            refused(capsys, work, argv, option)
        else:  # the message names the missing file, not an option
            before = tree(work)
            assert main(argv) == 2
            err = capsys.readouterr().err
            assert err.count("\n") == 1, err
            assert "nowhere" in err
            assert "Traceback" not in err
            assert tree(work) == before


@pytest.mark.parametrize(
    ("extra", "option"),
    [
        (["--seeds", "4294967296"], "seeds"),
        (["--seeds", "-1"], "seeds"),
        (["--models", "x"], "--models"),
    ],
)
def test_bad_selections_change_no_file(
    work: Path, capsys: pytest.CaptureFixture[str], extra: list[str], option: str
) -> None:
    refused(capsys, work, ["study", "small.toml", "--out", "out", "--quiet", *extra], option)


def test_report_only_with_nothing_finished_creates_nothing(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["study", "small.toml", "--out", "new", "--quiet", "--report-only"]
    assert "at least one trained run" in refused(capsys, work, argv, "--out")


def test_a_corrected_config_runs_where_the_bad_one_was_refused(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The bad config writes neither config.toml nor a run's identity, so the fixed one is
    accepted on the same --out, and the finished runs are reused."""
    weights = work / "out" / "runs" / "mlp" / "seed-0" / "model.safetensors"
    stamp = weights.stat().st_mtime_ns
    more = _config(
        work,
        "dropout = 0.3 }",
        'dropout = 0.3 }\n\n[[models]]\nname = "mlp"\n'
        'label = "wide"\nparams = { hidden = [32], bogus = 1 }',
    )
    for out in ("out", "new"):
        refused(capsys, work, ["study", more, "--out", out, "--quiet"], "models.wide.params")
        fixed = Path(more).read_text().replace(", bogus = 1", "")
        Path(more).write_text(fixed, encoding="utf-8")
        assert main(["study", more, "--out", out, "--quiet"]) == 0
        assert load_study_config(work / out / "config.toml") == load_study_config(more)
        Path(more).write_text(fixed.replace("[32]", "[32], bogus = 1"), encoding="utf-8")
    assert weights.stat().st_mtime_ns == stamp  # not retrained
    assert (work / "out" / "runs" / "wide" / "seed-0" / "train.json").exists()


def test_the_library_refuses_before_writing(work: Path) -> None:
    cfg = load_study_config(_config(work, '"histogram"]', '"beta"]'))
    before = tree(work)
    for out in ("out", "new"):
        with pytest.raises(InputError, match=r"^calibrators: expected methods for 3 classes"):
            run_study(cfg, work / out, progress=False)
    assert tree(work) == before


# Family: the --out folder holds only what a study writes.


def _user_file(work: Path, name: str) -> Callable[[], str]:
    def make() -> str:
        (work / "out" / name).parent.mkdir(parents=True, exist_ok=True)
        (work / "out" / name).write_text("mine")
        return "out"

    return make


@pytest.mark.parametrize(
    "where",
    [
        "notes.txt",
        "figures/notes.txt",
        "runs/mlp/seed-0/notes.txt",
        "runs/mlp/notes.txt",
        "runs/mlp/seed-1",
        "user/data.npz",
        ".",
        "..",
        "small.toml",
    ],
)
def test_study_out_refuses_a_folder_holding_other_files(
    work: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    out = where if where in (".", "..", "small.toml") else _user_file(work, where)()
    if where == "..":
        os.chdir(work / "out")
    root = work.parent if where == ".." else work
    refused(capsys, root, ["study", str(work / "small.toml"), "--out", out, "--quiet"], "--out")


def test_study_out_may_be_new_empty_or_a_study_folder_with_leftovers(work: Path) -> None:
    (work / "empty").mkdir()
    run = work / "out" / "runs" / "mlp" / "seed-0"
    (run / ".logits.npz.abc123.tmp").write_bytes(b"half")  # a write a SIGKILL cut short
    (work / "out" / ".figures.x1.old" / "figures").mkdir(parents=True)
    for out in ("empty", "out"):
        assert main(["study", "small.toml", "--out", out, "--quiet"]) == 0
    assert not (work / "empty" / LOCK).exists()  # released at the end


@pytest.mark.parametrize(
    ("name", "written"),
    [
        ("config.toml", True),
        (LOCK, True),
        ("figures/ece_temperature_mlp.png", True),
        ("figures/.calibkit-written.json", True),
        ("runs/mlp_dropout/seed-12/clamping-nc_ce@holdout.json", True),
        ("runs/a.b-c/seed-0/.checkpoint.pt.k2j_3x.tmp", True),
        (".results.csv.k2j_3x.tmp", True),
        (".figures.abc.tmp/x.png", True),
        ("runs/mlp/seed-x/train.json", False),
        ("runs/mlp/seed-0/sub/train.json", False),
        ("runs/train.json", False),
        ("figures/notes.txt", False),
        ("figures/sub/a.png", False),
        (".notes.txt.abc.tmp", False),
        ("config.toml.bak", False),
    ],
)
def test_study_file_names(name: str, written: bool) -> None:
    assert is_study_file(name) is written


# Family: one study at a time on a folder.


def _holder(out: Path) -> subprocess.Popen[str]:
    """A process holding ``out``'s lock until it is stopped."""
    code = (
        "import sys, time; from pathlib import Path; from calibkit.io.lock import FolderLock; "
        "FolderLock(Path(sys.argv[1]), '--out').acquire(); print('held', flush=True); "
        "time.sleep(120)"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(out)], stdout=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == "held\n"
    return proc


@pytest.mark.parametrize("report_only", [False, True])
def test_a_second_study_on_a_folder_is_refused_naming_the_holder(
    work: Path, capsys: pytest.CaptureFixture[str], report_only: bool
) -> None:
    proc = _holder(work / "out")
    try:
        argv = ["study", "small.toml", "--out", "out", "--quiet"]
        err = refused(capsys, work, argv + ["--report-only"] * report_only, "--out")
        assert f"in use by process {proc.pid} on {socket.gethostname()}" in err
    finally:
        proc.kill()
        proc.wait()


def test_the_lock_of_a_killed_study_is_taken_over(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    proc = _holder(work / "out")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert (work / "out" / LOCK).exists()
    assert main(["study", "small.toml", "--out", "out", "--quiet"]) == 0
    assert not (work / "out" / LOCK).exists()


def test_a_refused_lock_leaves_no_new_folder(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder created for the lock is removed again when the lock is refused."""
    from calibkit.io import lock

    def busy(self: lock.FolderLock) -> None:
        raise InputError("--out", "a folder no other calibkit process is writing", "busy")

    monkeypatch.setattr(lock.FolderLock, "acquire", busy)
    before = tree(work)
    assert main(["study", "small.toml", "--out", "new", "--quiet"]) == 2
    assert tree(work) == before


def _link_in(work: Path, name: str, target: str) -> None:
    """``out/name`` made a link to ``target`` (relative to ``out/name``'s folder)."""
    path = work / "out" / name
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
    path.symlink_to(target)


@pytest.mark.parametrize(
    ("name", "target"),
    [
        (LOCK, "../user.txt"),  # the lock, to the user's (empty) file outside --out
        (LOCK, "../missing.txt"),  # a dangling link: the file would be created outside
        ("results.csv", "../user.txt"),
        ("config.toml", "../user.txt"),
        ("runs/mlp", "../../userdir"),
        ("figures", "../userdir"),
    ],
)
def test_a_study_never_writes_through_a_link_in_its_folder(
    work: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    target: str,
) -> None:
    (work / "user.txt").write_text("")
    (work / "userdir").mkdir()
    _link_in(work, name, target)
    monkeypatch.setattr("calibkit.study.run_study", _no_work)
    err = refused(capsys, work, ["study", "small.toml", "--out", "out", "--quiet"], "--out")
    assert f"{name}, a symbolic link" in err
    assert not (work / "missing.txt").exists()


def _no_work(*args: object, **kwargs: object) -> None:
    raise AssertionError("the study ran before its --out was checked")


@pytest.mark.parametrize("target", ["out", "loop"])
def test_a_link_as_out_is_refused_before_any_work(
    work: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    (work / "loop").symlink_to(target)  # to the finished study folder, or to itself
    monkeypatch.setattr("calibkit.study.run_study", _no_work)
    argv = ["study", "small.toml", "--out", "loop", "--quiet"]
    err = refused(capsys, work, argv, "--out")
    assert f"loop (a symbolic link to {target})" in err


@pytest.mark.parametrize("name", ["report.md", "results.csv", "config.toml", "figures/*.png"])
def test_a_study_never_replaces_a_file_of_its_folder_the_user_changed(
    work: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    path = next((work / "out").glob(name))  # a figure: the first one
    with path.open("a", encoding="utf-8") as f:
        f.write("\n# my notes\n")
    monkeypatch.setattr("calibkit.study.run_study", _no_work)
    err = refused(capsys, work, ["study", "small.toml", "--out", "out", "--quiet"], "--out")
    assert f", whose {path.name} changed since calibkit wrote it" in err


def test_a_study_rewrites_its_unchanged_report(work: Path) -> None:
    report = (work / "out" / "report.md").read_bytes()
    (work / "out" / "report.md").unlink()  # a file the study wrote, removed: written again
    assert main(["study", "small.toml", "--out", "out", "--quiet", "--report-only"]) == 0
    assert main(["study", "small.toml", "--out", "out", "--quiet", "--report-only"]) == 0
    assert (work / "out" / "report.md").read_bytes().count(b"\n") == report.count(b"\n")


def test_a_study_folder_copied_without_its_record_is_the_users(
    work: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``cp -r out/* mine/`` leaves the hidden record behind: the copy, annotated, is the
    user's (issue #42: it was taken for an older study's folder and its report rewritten)."""
    (work / "mine").mkdir()
    for path in (work / "out").iterdir():
        if not path.name.startswith("."):
            copy = shutil.copytree if path.is_dir() else shutil.copy2
            copy(path, work / "mine" / path.name)
    with (work / "mine" / "report.md").open("a", encoding="utf-8") as f:
        f.write("\n# my notes\n")
    monkeypatch.setattr("calibkit.study.run_study", _no_work)
    err = refused(capsys, work, ["study", "small.toml", "--out", "mine", "--quiet"], "--out")
    assert "which holds files calibkit did not write" in err


def test_a_record_listing_a_file_without_its_sha256_vouches_for_nothing(
    work: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record edited to drop a file's sha256 (or one that never had it) does not make that
    file replaceable."""
    record = work / "out" / ".calibkit-study.json"
    doc = json.loads(record.read_text())
    del doc["sha256"]["report.md"]
    record.write_text(json.dumps(doc))
    (work / "out" / "report.md").write_text("# the user's own report\n")
    monkeypatch.setattr("calibkit.study.run_study", _no_work)
    err = refused(capsys, work, ["study", "small.toml", "--out", "out", "--quiet"], "--out")
    assert ", whose report.md changed since calibkit wrote it" in err


def test_a_fifo_in_a_study_folder_is_refused_never_opened(
    work: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (work / "out" / "report.md").unlink()
    os.mkfifo(work / "out" / "report.md")
    monkeypatch.setattr("calibkit.study.run_study", _no_work)
    err = refused(capsys, work, ["study", "small.toml", "--out", "out", "--quiet"], "--out")
    assert "did not write (report.md)" in err
