"""``--groups KEY`` on ``calibkit evaluate`` and ``calibkit compare``: per-group results read
from an .npz (integer or string groups) or a .csv column; bad groups refused (exit 2, nothing
written); compare on data miscalibrated in one group only."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from calibkit import Resampling
from calibkit.cli import main
from calibkit.metrics.groups import evaluate_groups
from calibkit.reporting.compare_verdict import named

PNG = b"\x89PNG\r\n\x1a\n"


def _data(n: int = 600, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Logits calibrated in group 'a', the second half (group 'b') overconfident x3."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, 3)) * 2.0
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    y = (rng.random(n)[:, None] > p.cumsum(1)).sum(1)
    groups = np.repeat(["a", "b"], [n - n // 2, n // 2])
    z[groups == "b"] *= 3.0
    return z, y, groups


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    z, y, g = _data()
    np.savez(tmp_path / "str.npz", logits=z, labels=y, site=g)
    np.savez(tmp_path / "int.npz", logits=z, labels=y, site=np.where(g == "a", 10, 2))
    lines = ["label,logit_0,logit_1,logit_2,site"]
    lines += [
        f"{t},{r[0]!r},{r[1]!r},{r[2]!r},{s}" for t, r, s in zip(y, z.tolist(), g, strict=True)
    ]
    (tmp_path / "p.csv").write_text("\n".join(lines) + "\n")
    return tmp_path


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict[str, object]:
    capsys.readouterr()
    assert main(argv) == 0
    return dict(json.loads(capsys.readouterr().out))


@pytest.mark.parametrize("file", ["str.npz", "int.npz", "p.csv"])
def test_evaluate_groups_in_json_and_table(
    folder: Path, file: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["evaluate", file, "--groups", "site", "--n-boot", "40"]
    out = _json(capsys, [*argv, "--format", "json"])
    z, y, g = _data()
    names = {"str.npz": ("a", "b"), "int.npz": ("10", "2"), "p.csv": ("a", "b")}[file]
    ref = evaluate_groups(
        y, logits=z, groups=np.where(g == "a", *names), resampling=Resampling(n_boot=40)
    )
    groups = out["groups"]
    assert isinstance(groups, dict)
    assert set(groups["groups"]) == set(names)
    for name in names:
        got = groups["groups"][name]
        assert got["n_samples"] == 300
        for metric in ("ece", "nll", "accuracy", "confidence", "ece_floor"):
            # the .csv logits went through repr and back: the same doubles
            assert got[metric] == ref.values[name][metric], (name, metric)
        assert got["ci"]["ece"] == list(ref.ci[name]["ece"])
    assert groups["worst_group"] == names[1]  # the overconfident half
    assert groups["worst_group_gap"] == ref.gap
    assert out["ece"] > 0  # the global metrics are still there
    capsys.readouterr()
    assert main(argv) == 0
    table = capsys.readouterr().out
    assert "per group (site):" in table
    assert "worst-group ECE gap" in table
    order = [
        line.split()[0] for line in table.splitlines() if line[:3] in ("a  ", "b  ", "10 ", "2  ")
    ]
    assert order == ["2", "10"] if file == "int.npz" else order == ["a", "b"]  # 2 < 10


def test_without_groups_the_json_has_no_groups(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _json(capsys, ["evaluate", "str.npz", "--n-boot", "0", "--format", "json"])
    assert "groups" not in out


def _bad_files(folder: Path) -> None:
    z, y, g = _data()
    np.savez(folder / "short.npz", logits=z, labels=y, site=g[:-1])
    np.savez(folder / "nan.npz", logits=z, labels=y, site=np.r_[np.nan, np.ones(599)])
    np.savez(folder / "none.npz", logits=z, labels=y, site=np.r_[["None"], g[1:]])
    np.savez(folder / "one.npz", logits=z, labels=y, site=np.r_[["lonely"], g[1:]])
    lines = (folder / "p.csv").read_text().splitlines()
    lines[5] = lines[5].rsplit(",", 1)[0] + ","  # an empty group cell
    (folder / "empty.csv").write_text("\n".join(lines) + "\n")
    plain = [line.rsplit(",", 1)[0] for line in lines]  # no group column
    (folder / "plain.csv").write_text("\n".join(plain) + "\n")


@pytest.mark.parametrize(
    ("file", "key", "cause"),
    [
        ("str.npz", "nope", "an array of str.npz (its arrays: labels, logits, site), got 'nope'"),
        ("plain.csv", "site", "a column of plain.csv (its columns: label, logit_0 .. logit_2)"),
        ("short.npz", "site", "expected 600 entries"),
        ("nan.npz", "site", "a missing value (nan) at index 0"),
        ("none.npz", "site", "a missing value ('None') at index 0"),
        ("one.npz", "site", "group 'lonely' with 1 sample"),
        ("empty.csv", "site", "a missing value ('') at index 4"),
    ],
)
def test_bad_groups_exit_2_and_write_nothing(
    folder: Path, file: str, key: str, cause: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _bad_files(folder)
    capsys.readouterr()
    argv = ["evaluate", file, "--groups", key, "--n-boot", "0", "--plot", "r.png"]
    assert main([*argv, "--rc-plot", "rc.png"]) == 2
    err = capsys.readouterr().err
    assert "--groups" in err, err
    assert cause in err, err
    assert "Traceback" not in err
    assert not (folder / "r.png").exists()
    assert not (folder / "rc.png").exists()
    assert main(["compare", file, "--groups", key, "--n-boot", "0", "--out", "rep"]) == 2
    err = capsys.readouterr().err
    assert "--groups" in err, err
    assert cause in err, err
    assert not (folder / "rep").exists()


def test_compare_refuses_a_group_of_one_in_a_part(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # two 'pair' rows: after the split at least one part holds one of them or none; with
    # both in the same part the other part has no 'pair' group at all, which is allowed,
    # so pick a seed that splits them (the split is seeded: deterministic)
    z, y, g = _data()
    g = g.astype("<U4")
    g[[0, 1]] = "pair"
    y[[0, 1]] = 0
    np.savez(folder / "pair.npz", logits=z, labels=y, site=g)
    from calibkit.core.splits import split_indices

    seed = next(s for s in range(50) if np.isin([0, 1], split_indices(y, 0.5, s)[0]).sum() == 1)
    capsys.readouterr()
    argv = ["compare", "pair.npz", "--groups", "site", "--n-boot", "0", "--seed", str(seed)]
    assert main([*argv, "--out", "rep"]) == 2
    err = capsys.readouterr().err
    assert "--groups: expected at least 2 samples in every group of the" in err, err
    assert "group 'pair' with 1 sample" in err
    assert not (folder / "rep").exists()


def test_compare_finds_the_miscalibrated_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    z, y, g = _data(n=4000, seed=1)
    np.savez(tmp_path / "p.npz", logits=z, labels=y, cohort=g)
    methods = "temperature,temperature_groupwise,multicalibration"
    argv = ["compare", "p.npz", "--groups", "cohort", "--n-boot", "50", "--methods", methods]
    capsys.readouterr()
    assert main([*argv, "--out", "rep"]) == 0
    out = capsys.readouterr().out
    assert "worst-group ECE gap" in out
    res = json.loads((tmp_path / "rep" / "results.json").read_text())
    # the verdict (first on the terminal) weighs the groups: the overall choice, and the
    # calibrator with the smallest worst-group gap with both gaps
    headline = res["verdict"]["headline"]
    assert out.splitlines()[0] == headline.replace("`", "")
    gaps = {m["method"]: m["groups"]["worst_group_gap"] for m in res["methods"]}
    smallest = min((m for m in gaps if m != "none"), key=gaps.__getitem__)
    assert res["smallest_worst_group_gap"] == smallest
    assert smallest in ("temperature_groupwise", "multicalibration")
    rec = res["recommendation"]["method"]
    # issue #46, item 5: the two gaps' intervals overlap here (2,000 test samples, 50
    # resamples), so the headline recommends one method and says the gaps are not told
    # apart; it used to recommend the smallest-gap method beside that caveat
    cis = {m["method"]: m["groups"]["worst_group_gap_ci"] for m in res["methods"]}
    assert cis[smallest][0] <= cis[rec][1]
    assert cis[rec][0] <= cis[smallest][1]
    assert headline.startswith(f"Use {named(rec)}: on the test part it ")
    assert "for the groups" not in headline
    assert "overall" not in headline
    points = f"({100 * gaps[rec]:.2f} percentage points) cannot be told apart on the test part"
    assert f"its worst-group ECE gap {points} from the smallest, `{smallest}`'s (" in headline
    assert "The two gaps' 95% intervals overlap" in res["verdict"]["detail"]
    rows = {m["method"]: m for m in res["methods"]}
    assert list(rows) == ["none", "temperature", "temperature_groupwise", "multicalibration"]
    ece_b = {m: rows[m]["groups"]["groups"]["b"]["ece"] for m in rows}
    ece_a = {m: rows[m]["groups"]["groups"]["a"]["ece"] for m in rows}
    worst = {m: max(ece_a[m], ece_b[m]) for m in rows}
    # (test part: about 1,000 samples a group, ECE noise floors about 3%)
    assert rows["none"]["groups"]["worst_group"] == "b"
    assert ece_b["none"] > 0.1 > ece_a["none"]  # x3 logits: badly overconfident
    # one global temperature splits the difference: 'a' turns underconfident, 'b' stays off
    assert worst["temperature"] > 0.1
    assert ece_b["temperature"] > 0.05
    assert worst["temperature_groupwise"] < 0.06
    assert ece_b["temperature_groupwise"] < 0.05
    assert worst["multicalibration"] < worst["temperature"] / 2
    lo, hi = rows["none"]["groups"]["worst_group_gap_ci"]
    assert lo <= rows["none"]["groups"]["worst_group_gap"] <= hi
    report = (tmp_path / "rep" / "report.md").read_text()
    assert "## Calibration per group" in report
    assert "| temperature_groupwise | a |" in report
    png = (tmp_path / "rep" / "figures" / "reliability_groups.png").read_bytes()
    assert png.startswith(PNG)
    assert len(png) > 10_000
    assert "reliability_groups.png" in report
    # the method the verdict names is drawn in the per-group figure
    caption = next(line for line in report.splitlines() if "Reliability per group:" in line)
    assert smallest in caption
    assert rec in caption


def test_compare_without_groups_has_no_group_output(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["compare", "str.npz", "--n-boot", "0", "--methods", "temperature", "--out", "rep"]
    assert main(argv) == 0
    res = json.loads((folder / "rep" / "results.json").read_text())
    assert all("groups" not in m for m in res["methods"])
    assert "Calibration per group" not in (folder / "rep" / "report.md").read_text()
    assert not (folder / "rep" / "figures" / "reliability_groups.png").exists()
    assert [m["method"] for m in res["methods"]] == ["none", "temperature"]


def test_compare_default_methods_add_the_group_calibrators(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["compare", "p.csv", "--groups", "site", "--n-boot", "0", "--out", "rep"]
    assert main(argv) == 0
    res = json.loads((folder / "rep" / "results.json").read_text())
    names = [m["method"] for m in res["methods"]]
    assert names[-2:] == ["temperature_groupwise", "multicalibration"]
    assert res["recommendation"]["method"] not in names[-2:]  # chosen without groups
    assert all(set(m["groups"]["groups"]) == {"a", "b"} for m in res["methods"])


def test_compare_cal_and_test_files_with_groups(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    z, y, g = _data()
    np.savez(folder / "cal.npz", logits=z[::2], labels=y[::2], site=g[::2])
    np.savez(folder / "test.npz", logits=z[1::2], labels=y[1::2], site=g[1::2])
    argv = ["compare", "--cal", "cal.npz", "--test", "test.npz", "--groups", "site"]
    assert main([*argv, "--n-boot", "0", "--methods", "temperature_groupwise", "--out", "r"]) == 0
    res = json.loads((folder / "r" / "results.json").read_text())
    row = res["methods"][1]
    assert row["method"] == "temperature_groupwise"
    assert sum(v["n_samples"] for v in row["groups"]["groups"].values()) == 300


def test_fit_and_apply_read_a_quoted_group_column_whole(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # standard quoting (pandas, spreadsheets): "Paris, FR" is one cell, not two
    lines = (folder / "p.csv").read_text().splitlines()
    cities = {"a": '"Paris, FR"', "b": '"Paris, TX"'}
    rows = [line.rsplit(",", 1)[0] + "," + cities[line.rsplit(",", 1)[1]] for line in lines[1:]]
    (folder / "q.csv").write_text("\n".join([lines[0].replace("site", "city"), *rows]) + "\n")
    argv = ["fit", "q.csv", "--groups", "city", "--method", "temperature_groupwise"]
    assert main([*argv, "-o", "gts.json"]) == 0
    state = json.loads((folder / "gts.json").read_text())["state"]
    assert state["group_names_"] == ["Paris, FR", "Paris, TX"]
    assert main(["apply", "gts.json", "q.csv", "--groups", "city", "-o", "out.npz"]) == 0
    assert np.load(folder / "out.npz")["probs"].shape == (600, 3)


def test_the_per_group_figure_draws_the_method_with_the_smallest_gap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue #46, item 5: the verdict names the method with the smallest worst-group gap,
    group-aware or not; the per-group figure drew only a group-aware one, so a plain
    method the verdict named was missing from it."""
    monkeypatch.chdir(tmp_path)
    z, y, g = _data(n=4000, seed=1)
    np.savez(tmp_path / "p.npz", logits=z, labels=y, cohort=g)
    methods = "temperature,histogram,isotonic"
    argv = ["compare", "p.npz", "--groups", "cohort", "--n-boot", "20", "--methods", methods]
    assert main([*argv, "--out", "rep"]) == 0
    res = json.loads((tmp_path / "rep" / "results.json").read_text())
    smallest = res["smallest_worst_group_gap"]
    report = (tmp_path / "rep" / "report.md").read_text()
    caption = next(line for line in report.splitlines() if "Reliability per group:" in line)
    drawn = caption.split("Reliability per group: ", 1)[1].split("]", 1)[0].split(", ")
    assert smallest in drawn, (smallest, drawn)
