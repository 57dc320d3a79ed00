"""``calibkit evaluate`` under careless input (issue #32): a quoted CSV group column, float
group ids beyond int64, a missing ``--groups`` column, a test left undefined by constant
confidences, ``none`` as a figure path, a binary ``--mode`` on more classes. A wrong
answer never comes back with exit 0; a refusal is one line, exit 2, before any work, and
leaves the folder as it was."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from calibkit import Resampling
from calibkit.cli import main
from calibkit.metrics.groups import evaluate_groups

CITIES = ("Paris, FR", 'O"Hare, IL', "Paris, TX")


def tree(root: Path) -> dict[str, bytes | None]:
    return {
        p.relative_to(root).as_posix(): None if p.is_dir() else p.read_bytes()
        for p in sorted(root.rglob("*"))
    }


def _problem(n: int = 600) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Binary probabilities calibrated in the first city, overconfident (0.97) in the last."""
    rng = np.random.default_rng(0)
    city = np.array(CITIES)[np.arange(n) % 3]
    p1 = rng.uniform(0.55, 0.95, n)
    p1[city == CITIES[2]] = 0.97
    truth = np.where(city == CITIES[2], 0.6, p1)
    y = (rng.random(n) < truth).astype(int)
    return np.c_[1 - p1, p1], y, city


def _write_csv(path: Path, probs: np.ndarray, y: np.ndarray, city: np.ndarray, first: bool) -> None:
    """As pandas writes it: standard quoting (a cell holding a comma or a quote is quoted)."""
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        head = ["label", "prob_0", "prob_1"]
        w.writerow(["city", *head] if first else [*head, "city"])
        for p, t, c in zip(probs.tolist(), y.tolist(), city.tolist(), strict=True):
            row = [t, repr(p[0]), repr(p[1])]
            w.writerow([c, *row] if first else [*row, c])


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict[str, object]:
    capsys.readouterr()
    assert main(argv) == 0
    return dict(json.loads(capsys.readouterr().out))


def _refused(capsys: pytest.CaptureFixture[str], argv: list[str], root: Path) -> str:
    """The one error line of a refused command, which left ``root`` as it was."""
    before = tree(root)
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("calibkit: error: "), err
    assert "Traceback" not in err
    assert tree(root) == before
    return lines[0]


@pytest.fixture
def no_work(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Calls of the evaluation itself (a refusal must come before it)."""
    calls: list[str] = []

    def evaluate_outputs(*args: object, **kwargs: object) -> None:
        calls.append("evaluate_outputs")
        raise AssertionError("evaluated before the refusal")

    monkeypatch.setattr("calibkit.workflows.evaluate.evaluate_outputs", evaluate_outputs)
    return calls


# ----- case 1: a quoted group column --------------------------------------------------------
@pytest.mark.parametrize("first", [False, True], ids=["city-last", "city-first"])
def test_quoted_csv_groups_keep_their_commas(
    work: Path, first: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    probs, y, city = _problem()
    _write_csv(work / "p.csv", probs, y, city, first)
    assert '"Paris, FR"' in (work / "p.csv").read_text()  # the quoting under test
    out = _json(
        capsys, ["evaluate", "p.csv", "--groups", "city", "--n-boot", "0", "--format", "json"]
    )
    groups = out["groups"]
    assert isinstance(groups, dict)
    assert sorted(groups["groups"]) == sorted(CITIES)
    ref = evaluate_groups(y, probs, groups=city, resampling=Resampling(n_boot=0))
    assert groups["worst_group"] == "Paris, TX" == ref.worst_group
    assert groups["worst_group_gap"] == pytest.approx(ref.gap, rel=1e-9)
    assert ref.gap > 0.1  # 0.97 confident, right about 60% of the time: not 0.00%
    for name in CITIES:
        assert groups["groups"][name]["n_samples"] == 200


# ----- case 2: float group ids beyond int64 -------------------------------------------------
def test_float_group_ids_beyond_int64_stay_distinct(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    probs, y, city = _problem()
    ids = np.select([city == c for c in CITIES], [1e20, 2e20, 1e300])
    np.savez(work / "p.npz", probs=probs, labels=y, g=ids)
    capsys.readouterr()
    assert main(["evaluate", "p.npz", "--groups", "g", "--n-boot", "0", "--format", "json"]) == 0
    captured = capsys.readouterr()
    groups = json.loads(captured.out)["groups"]
    names = [str(int(v)) for v in (1e20, 2e20, 1e300)]
    assert sorted(groups["groups"], key=int) == names
    assert groups["worst_group"] == names[2]
    assert "calibkit: warning: groups: float group ids beyond 9007199254740992" in captured.err


# ----- case 3: the --groups column missing --------------------------------------------------
def test_missing_groups_column_is_named_with_the_columns_present(
    work: Path, capsys: pytest.CaptureFixture[str], no_work: list[str]
) -> None:
    probs, y, city = _problem()
    _write_csv(work / "p.csv", probs, y, city, first=False)
    argv = ["evaluate", "p.csv", "--groups", "region", "--out", "rep", "--plot", "r.png"]
    line = _refused(capsys, argv, work)
    assert line == (
        "calibkit: error: --groups: expected a column of p.csv (its columns: label, "
        "prob_0 .. prob_1, city), got 'region'"
    )
    line = _refused(capsys, ["evaluate", "p.csv", "--groups", "ctiy"], work)
    assert line.endswith("got 'ctiy' (did you mean 'city'?)")
    assert no_work == []


def test_one_group_only_is_refused_not_a_zero_gap(
    work: Path, capsys: pytest.CaptureFixture[str], no_work: list[str]
) -> None:
    probs, y, _ = _problem()
    np.savez(work / "p.npz", probs=probs, labels=y, city=np.full(600, "Paris"))
    line = _refused(capsys, ["evaluate", "p.npz", "--groups", "city", "--out", "rep"], work)
    assert line == (
        "calibkit: error: --groups: expected at least 2 distinct groups (the worst-group gap "
        "compares them), got one group, 'Paris', for all 600 samples"
    )
    assert no_work == []


# ----- case 4: a test undefined on constant confidences -------------------------------------
def test_undefined_test_is_marked_and_the_evaluation_goes_on(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = np.random.default_rng(0)
    y = (rng.random(300) < 0.3).astype(int)
    np.savez(work / "c.npz", probs=np.tile([0.7, 0.3], (300, 1)), labels=y)
    argv = ["evaluate", "c.npz", "--extra", "tests", "--n-boot", "0"]
    out = _json(capsys, [*argv, "--format", "json"])
    why = "too few distinct confidences: 1 group of them, at least 2 needed"
    assert out["hosmer_lemeshow_statistic"] is None
    assert out["hosmer_lemeshow_p"] is None
    assert out["undefined"] == {"hosmer_lemeshow_statistic": why, "hosmer_lemeshow_p": why}
    # the other tests and the suite are there: Spiegelhalter's Z by hand, every confidence
    # 0.7, so Z = sum (o - 0.7)(1 - 1.4) / sqrt(n (0.4)^2 0.21) with o the correct flags
    correct = (y == 0).astype(float)
    z = np.sum((correct - 0.7) * -0.4) / np.sqrt(300 * 0.16 * 0.21)
    assert out["spiegelhalter_statistic"] == pytest.approx(z, rel=1e-9)
    assert out["ece"] == pytest.approx(abs(0.7 - correct.mean()), rel=1e-9)
    assert main([*argv, "--out", "rep"]) == 0
    table = capsys.readouterr().out
    assert "Hosmer-Lemeshow p-value               undefined" in table
    assert f"Hosmer-Lemeshow statistic and Hosmer-Lemeshow p-value: undefined ({why})." in table
    assert f"undefined ({why})" in (work / "rep" / "report.md").read_text()
    assert f"undefined ({why})" in (work / "rep" / "report.html").read_text()
    saved = json.loads((work / "rep" / "results.json").read_text())
    assert json.dumps(saved).count(why) >= 2


# ----- case 5: none as a figure path --------------------------------------------------------
@pytest.mark.parametrize("option", ["--plot", "--smooth-plot", "--rc-plot"])
@pytest.mark.parametrize("word", ["none", "None"])
def test_none_writes_no_figure(
    work: Path, option: str, word: str, capsys: pytest.CaptureFixture[str]
) -> None:
    probs, y, _ = _problem(200)
    np.savez(work / "p.npz", probs=probs, labels=y)
    before = tree(work)
    assert main(["evaluate", "p.npz", "--n-boot", "0", option, word]) == 0
    assert tree(work) == before
    assert "smooth_ece" not in _json(
        capsys, ["evaluate", "p.npz", "--n-boot", "0", "--format", "json", option, word]
    )


def test_none_for_every_figure_at_once(work: Path) -> None:
    probs, y, _ = _problem(200)
    np.savez(work / "p.npz", probs=probs, labels=y)
    before = tree(work)
    figures = ["--plot", "none", "--smooth-plot", "NONE", "--rc-plot", "none"]
    assert main(["evaluate", "p.npz", "--n-boot", "0", *figures]) == 0  # not one path twice
    assert tree(work) == before


# ----- refused before any work --------------------------------------------------------------
def test_binary_mode_on_three_classes_refused_before_work(
    work: Path, capsys: pytest.CaptureFixture[str], no_work: list[str]
) -> None:
    rng = np.random.default_rng(0)
    np.savez(work / "m.npz", logits=rng.normal(size=(90, 3)), labels=rng.integers(0, 3, 90))
    line = _refused(capsys, ["evaluate", "m.npz", "--mode", "positive_class", "--out", "r"], work)
    assert line == (
        "calibkit: error: --mode: expected top_label for more than 2 classes, "
        "got positive_class for m.npz, which has 3 classes"
    )
    assert no_work == []


# ----- issue 42: another CSV dialect, a row of empty cells ------------------------------------
@pytest.mark.parametrize(
    ("text", "cause"),
    [
        (  # a spreadsheet of a decimal-comma locale
            "label;prob_0;prob_1\n0;0,9;0,1\n1;0,2;0,8\n",
            "got a header separated by semicolons ('label;prob_0;prob_1') and numbers with"
            " decimal commas ('0,9'): save it comma-separated with decimal points",
        ),
        (
            'label,prob_0,prob_1\n0,"0,9","0,1"\n',
            "got '0,9' in data row 1, column 'prob_0' (a decimal comma: write decimal points, 0.9)",
        ),
        (
            "label,prob_0,prob_1\n0,0.9,0.1\n,,\n1,0.2,0.8\n",
            "expected a value in some cell of every row, got 3 empty cells at line 3 (data row 2)",
        ),
    ],
    ids=["semicolons", "decimal-commas", "empty-row"],
)
def test_another_dialect_or_an_empty_row_is_named(
    work: Path, capsys: pytest.CaptureFixture[str], no_work: list[str], text: str, cause: str
) -> None:
    (work / "p.csv").write_text(text)
    line = _refused(capsys, ["evaluate", "p.csv", "--out", "rep"], work)
    assert line.startswith("calibkit: error: p.csv: "), line
    assert cause in line, line
    assert no_work == []
