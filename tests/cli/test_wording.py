"""What the command line says, through the real CLI (issue #46, item 9).

Each case was wrong before: a ``.npy`` without ``--kind`` never named ``--kind``; ``--kind
logits`` on probabilities did not suggest ``--kind probs`` (a ``.npy`` of probabilities was
even read as logits); a missing dataset folder read "got None"; the worst-group gap was in
points and its interval in %; ``--mode positive_class`` kept the top-label headline;
counts read "1 bootstrap resamples"; ``docs/cli.md`` spoke of a version 0.2.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import calibkit as ck
from calibkit.cli import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Probabilities of 3 classes as .npy (with labels) and as .npz, a binary file and a
    file with 3 groups, all simulated; the current folder."""
    sim = ck.simulate(1500, 3, shape="constant", gap=0.1, seed=0)
    np.save(tmp_path / "p.npy", sim.probs)
    np.save(tmp_path / "y.npy", sim.labels)
    np.savez(tmp_path / "probs.npz", probs=sim.probs, labels=sim.labels)
    np.savez(tmp_path / "unlabelled.npz", probs=sim.probs)
    b = ck.simulate(1500, 2, shape="constant", gap=0.15, seed=1)
    np.savez(tmp_path / "binary.npz", probs=b.probs, labels=b.labels)
    g = ck.simulate(3000, 4, shape="groups", seed=2)
    site = np.array(["a", "b", "c"])[g.groups]
    np.savez(tmp_path / "groups.npz", probs=g.probs, labels=g.labels, site=site)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """The one line ``calibkit ARGV`` exits 2 with."""
    assert main(list(argv)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


@pytest.mark.parametrize(
    "argv",
    [
        ["evaluate", "p.npy", "--labels", "y.npy"],
        ["fit", "--method", "temperature", "p.npy", "--labels", "y.npy", "-o", "t.json"],
        ["compare", "p.npy", "--labels", "y.npy"],
    ],
)
def test_a_npy_without_kind_names_kind(
    folder: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    line = _refused(capsys, *argv)
    assert line.startswith("calibkit: error: --kind: expected 'logits' or 'probs'"), line
    assert "p.npy" in line
    assert sorted(p.name for p in folder.iterdir() if p.suffix == ".json") == []


def test_a_npy_without_labels_names_labels(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _refused(capsys, "evaluate", "p.npy", "--kind", "probs")
    assert (
        line
        == "calibkit: error: --labels: expected a labels file beside the .npy file p.npy, got none"
    )


@pytest.mark.parametrize(
    ("argv", "file"),
    [
        (["evaluate", "probs.npz", "--kind", "logits"], "probs.npz holds a 'probs' array"),
        (["evaluate", "p.npy", "--labels", "y.npy", "--kind", "logits"], "p.npy's rows are"),
        (["compare", "probs.npz", "--kind", "logits"], "probs.npz holds a 'probs' array"),
        (["fit", "--method", "temperature", "probs.npz", "--kind", "logits", "-o", "t.json"],
         "probs.npz holds"),
    ],
)  # fmt: skip
def test_logits_asked_of_probabilities_suggest_kind_probs(
    folder: Path, capsys: pytest.CaptureFixture[str], argv: list[str], file: str
) -> None:
    line = _refused(capsys, *argv)
    assert line.startswith("calibkit: error: --kind: expected 'probs' ("), line
    assert file in line
    assert line.endswith("got 'logits'")


def test_apply_to_probabilities_as_logits_suggests_kind_probs(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["fit", "--method", "temperature", "probs.npz", "-o", "t.json"]) == 0
    capsys.readouterr()
    for argv in (["p.npy", "--kind", "logits"], ["unlabelled.npz", "--kind", "logits"]):
        line = _refused(capsys, "apply", "t.json", *argv, "-o", "c.npz")
        assert line.startswith("calibkit: error: --kind: expected 'probs' ("), line
    line = _refused(capsys, "apply", "t.json", "p.npy", "-o", "c.npz")
    assert line.startswith("calibkit: error: --kind: expected 'logits' or 'probs'"), line
    assert not (folder / "c.npz").exists()


def test_a_missing_dataset_folder_never_reads_got_none(
    folder: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    torch = pytest.importorskip("torch")
    from calibkit.models import create_model

    torch.save(create_model("resnet20", 10).state_dict(), folder / "r20.th")
    monkeypatch.setenv("CALIBKIT_DATA", str(folder / "empty"))
    (folder / "empty").mkdir()
    argv = ["shift", "--model", "resnet20", "--weights", "r20.th", "--data", "cifar10-jpeg"]
    line = _refused(capsys, *argv, "--smoke")
    assert line.startswith("calibkit: error: --data-dir: expected the folder holding"), line
    assert "None" not in line
    assert "got no folder, and $CALIBKIT_DATA" in line


def test_the_group_gap_and_its_interval_are_in_percentage_points(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["evaluate", "groups.npz", "--groups", "site", "--n-boot", "20"]) == 0
    out = capsys.readouterr().out
    headline = out.splitlines()[0]
    gap = re.search(
        r"is (\d+\.\d\d) percentage points \(CI \[(\d+\.\d\d), (\d+\.\d\d)\]\)", headline
    )
    assert gap is not None, headline
    assert "points ([" not in headline  # the interval of a difference is never in %
    assert re.search(r"worst-group ECE gap \d+\.\d\d percentage points \[", out)


def test_positive_class_mode_has_its_own_headline(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["evaluate", "binary.npz", "--mode", "positive_class", "--n-boot", "0"]) == 0
    head, detail = capsys.readouterr().out.splitlines()[:2]
    assert head.startswith("The model's probability of class 1 is "), head
    assert "gives class 1 a probability of " in head
    assert "confident on average" not in head
    assert "mean P(class 1)" in detail
    assert "mean confidence" not in detail
    assert main(["evaluate", "binary.npz", "--n-boot", "0"]) == 0  # top-label: as before
    assert "confident on average" in capsys.readouterr().out.splitlines()[0]


def test_counts_are_pluralised(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evaluate", "probs.npz", "--n-boot", "1"]) == 0
    assert "evaluating 1,500 samples (1 bootstrap resample)" in capsys.readouterr().err


#: Counts that are 2 or more where they are written (a line holding one of these texts).
TWO_OR_MORE = (
    "best of {len(first.names)} groups",  # a figure leaving some groups out: it has more
)


def test_no_fstring_writes_a_count_before_a_fixed_plural() -> None:
    """Every count before a plural noun goes through core.words.plural (or chooses the
    form itself): an f-string ``{n} runs`` says "1 runs" for one."""
    nouns = "runs|seeds|models|samples|resamples|epochs|files|groups|rows|tasks|questions"
    count = r"len\([^{}]*\)|n|n_[a-z_]+|[a-z_.]*n_boot[^{}]*"
    pattern = re.compile(r"\{(" + count + r")\} (" + nouns + r")\b")
    found = []
    for path in sorted((ROOT / "src" / "calibkit").rglob("*.py")):
        for i, line in enumerate(path.read_text("utf-8").splitlines(), 1):
            chooses = "== 1" in line or "!= 1" in line  # the line picks the form itself
            at_least_two = any(part in line for part in TWO_OR_MORE)
            if ('f"' in line or "f'" in line) and pattern.search(line) and not chooses:
                if at_least_two:
                    continue
                found.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()}")
    assert found == []


def test_docs_cli_md_names_the_package_version() -> None:
    text = (ROOT / "docs" / "cli.md").read_text("utf-8")
    versions = set(re.findall(r"\b(\d+\.\d+(?:\.\d+)?)\b(?![\d.]*%)", text))
    assert versions <= {ck.__version__}, versions


def test_a_smoke_study_counts_its_bound_warnings_instead_of_printing_them() -> None:
    """Issue #46, item 7: the README's smoke study printed four BoundWarnings (toy models
    near chance), which read like the user's mistake; at full size they are shown."""
    import warnings

    from calibkit.cli.study import _smoke_bounds
    from calibkit.core.errors import BoundWarning

    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        with _smoke_bounds(True) as bounds:
            warnings.warn("T reached its upper bound", BoundWarning, stacklevel=1)
            warnings.warn("T reached its upper bound", BoundWarning, stacklevel=1)
            warnings.warn("something else", UserWarning, stacklevel=1)
        assert bounds == ["T reached its upper bound"] * 2
        assert [str(w.message) for w in shown] == ["something else"]
        with _smoke_bounds(False) as bounds:
            warnings.warn("T reached its upper bound", BoundWarning, stacklevel=1)
        assert bounds == []
        assert [str(w.message) for w in shown][-1] == "T reached its upper bound"
