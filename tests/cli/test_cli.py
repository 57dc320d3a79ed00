"""The command line (calibkit.cli), run in-process; one run of the installed console script."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from calibkit.calibrators import CALIBRATORS, Calibrator
from calibkit.cli import main
from calibkit.core.version import __version__
from calibkit.io.predictions import load_predictions
from calibkit.metrics import METRIC_NAMES, ece

N, K = 300, 3
REAL = "predictions/cifar10_resnet18.npz"


def _overconfident(n: int = N, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Logits three times too large for the labels they come with."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, K)) * 1.5
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    y = np.array([rng.choice(K, p=row) for row in p])
    return 3.0 * z, y


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary current folder holding ``preds.npz`` (logits) and ``probs.npz``."""
    monkeypatch.chdir(tmp_path)
    z, y = _overconfident()
    np.savez(tmp_path / "preds.npz", logits=z, labels=y)
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    np.savez(tmp_path / "probs.npz", probs=p, labels=y)
    (tmp_path / "file.txt").write_text("a regular file, not a folder\n")
    return tmp_path


def _snapshot(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def _fails(capsys: pytest.CaptureFixture[str], folder: Path, argv: list[str], *names: str) -> str:
    """Run ``argv``: exit 2, one stderr line naming ``names``, nothing written, no stdout."""
    capsys.readouterr()
    before = _snapshot(folder)
    code = main(argv)
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert code == 2, err
    assert len(lines) == 1, err
    assert lines[0].startswith("calibkit: error: ")
    assert "Traceback" not in err
    for name in names:
        assert name in lines[0], (name, lines[0])
    assert out == ""
    assert _snapshot(folder) == before
    return lines[0]


def _bad_npz(folder: Path, name: str, **arrays: object) -> str:
    np.savez(folder / name, **arrays)  # type: ignore[arg-type]
    return name


# ----- the happy paths --------------------------------------------------------------------
def test_version_and_methods(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"calibkit {__version__}"
    assert main(["methods"]) == 0
    out = capsys.readouterr().out
    for name in CALIBRATORS.names():  # every kind, those that take the model too
        assert any(line.startswith(f"  {name} ") for line in out.splitlines()), name
    assert "Temperature scaling" in out


def test_evaluate_table_writes_no_file(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = _snapshot(work)
    assert main(["evaluate", "preds.npz", "--n-boot", "20"]) == 0
    out = capsys.readouterr().out
    assert "300 samples, 3 classes, logits" in out
    assert "ECE" in out
    assert "95% CI" in out
    assert _snapshot(work) == before


def test_evaluate_json(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["evaluate", "probs.npz", "--format", "json", "--plot", "none", "--n-boot", "0"]) == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert set(METRIC_NAMES) <= set(data)
    assert "ece_floor" in data
    assert 0.0 < data["ece"] < 1.0
    assert not (work / "probs.reliability.png").exists()


def test_evaluate_npy_pair_and_custom_plot(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    z, y = _overconfident()
    np.save(work / "z.npy", z)
    np.save(work / "y.npy", y)
    argv = ["evaluate", "z.npy", "--labels", "y.npy", "--kind", "logits", "--n-boot", "0"]
    assert main([*argv, "--plot", "diagram.png"]) == 0
    assert (work / "diagram.png").exists()
    assert "reliability diagram: diagram.png" in capsys.readouterr().out


def test_fit_apply_round_trip(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fit", "--method", "temperature", "preds.npz", "-o", "t.json"]) == 0
    out = capsys.readouterr().out
    temperature = Calibrator.load(work / "t.json").temperature_  # type: ignore[attr-defined]
    assert f"temperature = {temperature:.6g}" in out
    assert temperature > 2.0  # the logits were made three times too large
    assert main(["apply", "t.json", "preds.npz", "-o", "cal.npz"]) == 0
    assert "ECE" in capsys.readouterr().out
    with np.load(work / "cal.npz") as npz:
        assert sorted(npz.files) == ["labels", "logits", "probs"]
        assert npz["probs"].dtype == np.float64
    before = load_predictions(work / "preds.npz")
    after = load_predictions(work / "cal.npz", kind="probs")
    assert ece(after) < ece(before)


def test_fit_param_and_probability_method(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["fit", "--method", "temperature", "probs.npz", "--param", "t_max=1.5", "-o", "t.json"]
    assert main(argv) == 0
    assert Calibrator.load(work / "t.json").temperature_ == pytest.approx(1.5)  # type: ignore[attr-defined]
    assert main(["fit", "--method", "histogram", "preds.npz", "-o", "h.json"]) == 0
    assert main(["apply", "h.json", "preds.npz", "-o", "calibrated.npz"]) == 0
    with np.load(work / "calibrated.npz") as npz:
        assert sorted(npz.files) == ["labels", "probs"]
    capsys.readouterr()


def test_compare_split(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["compare", "preds.npz", "--cal-size", "0.5", "--methods", "temperature,histogram"]
    assert main([*argv, "--n-boot", "10", "--out", "rep"]) == 0
    out, err = capsys.readouterr()
    assert "150 calibration / 150 test samples" in out
    assert "temperature=" in out
    assert "report: rep/report.html" in out
    assert "fitting temperature" in err
    results = json.loads((work / "rep" / "results.json").read_text())
    assert [m["method"] for m in results["methods"]] == ["none", "temperature", "histogram"]
    # the verdict first, on the terminal and in results.json, with the run's provenance
    headline = results["verdict"]["headline"]
    assert headline.startswith(f"Use `{results['recommendation']['method']}`")
    assert out.splitlines()[0] == headline.replace("`", "")
    assert results["command"] == "calibkit compare"
    assert results["inputs"]["FILE"]["sha256"]
    assert results["options"]["cal_size"] == 0.5
    assert results["options"]["methods"] == "temperature,histogram"
    assert results["versions"]["calibkit"] == __version__


def test_compare_calibration_and_test_files(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    z, y = _overconfident(seed=1)
    np.savez(work / "test.npz", logits=z, labels=y)
    argv = ["compare", "--cal", "preds.npz", "--test", "test.npz", "--methods", "temperature"]
    assert main([*argv, "--n-boot", "0", "--out", "rep"]) == 0
    out = capsys.readouterr().out
    assert "300 calibration / 300 test samples" in out
    assert (work / "rep" / "report.md").exists()


# ----- bad input: exit 2, one line naming the argument, nothing written ------------------
@pytest.mark.parametrize(
    ("arrays", "names"),
    [
        ({"probs": np.full((4, 2), np.nan), "labels": [0, 1, 0, 1]}, ("probs in", "finite")),
        ({"logits": np.full((4, 2), np.inf), "labels": [0, 1, 0, 1]}, ("logits in", "finite")),
        ({"logits": np.zeros((4, 2, 2)), "labels": [0, 1, 0, 1]}, ("logits in", "2-D")),
        ({"logits": np.zeros((4, 2)), "labels": [0, 1, 0]}, ("labels in", "one label per row")),
        ({"logits": np.zeros((4, 2)), "labels": [0, 1, 2, 1]}, ("labels in", "[0, 2)")),
        ({"logits": np.zeros((4, 2)), "labels": [0, 1, 0.5, 1]}, ("labels in", "non-integer")),
        ({"logits": np.zeros((4, 1)), "labels": [0, 0, 0, 0]}, ("logits in", "2 classes")),
        ({"logits": np.zeros((0, 3)), "labels": np.zeros(0, int)}, ("logits in", "one sample")),
        ({"probs": [[1.2, -0.2], [0.5, 0.5]], "labels": [0, 1]}, ("probs in", "non-negative")),
        ({"probs": [[0.7, 0.7], [0.5, 0.5]], "labels": [0, 1]}, ("probs in", "summing to 1")),
        ({"scores": np.zeros((2, 2)), "labels": [0, 1]}, ("bad.npz", "keys labels, scores")),
    ],
)
def test_bad_arrays(
    work: Path, capsys: pytest.CaptureFixture[str], arrays: dict[str, object], names: tuple[str]
) -> None:
    bad = _bad_npz(work, "bad.npz", **arrays)
    _fails(capsys, work, ["evaluate", bad, "--n-boot", "0"], *names)
    _fails(capsys, work, ["fit", "--method", "temperature", bad], *names)


def test_single_label_calibration_set(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    z, _ = _overconfident(20)
    one = _bad_npz(work, "one.npz", logits=z, labels=np.ones(20, int))
    _fails(capsys, work, ["fit", "--method", "temperature", one], "labels", "2 distinct labels")
    argv = ["compare", "--cal", one, "--test", "preds.npz", "--n-boot", "0"]
    _fails(capsys, work, argv, "calibration part", "2 distinct labels")


def test_truncated_corrupt_and_pickled_files(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = (work / "preds.npz").read_bytes()
    (work / "trunc.npz").write_bytes(data[: len(data) // 2])
    _fails(capsys, work, ["evaluate", "trunc.npz"], "trunc.npz", "truncated or corrupt")
    (work / "junk.csv").write_bytes(b"\x00\xff\xfe garbage")
    _fails(capsys, work, ["evaluate", "junk.csv"], "junk.csv")
    with (work / "pickled.npz").open("wb") as f:
        pickle.dump({"logits": [[1.0, 2.0]], "labels": [0]}, f)
    _fails(capsys, work, ["evaluate", "pickled.npz"], "pickled.npz", "a pickle where arrays")
    (work / "x.h5").write_bytes(b"")
    _fails(capsys, work, ["evaluate", "x.h5"], "predictions file", ".npz, .npy, .csv, .pt")
    _fails(capsys, work, ["evaluate", "absent.npz"], "FILE", "absent.npz")
    (work / "bad.json").write_text("{not json")
    _fails(capsys, work, ["apply", "bad.json", "preds.npz"], "calibkit file", "valid JSON")


def test_unknown_method_lists_valid_names(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The names listed are those of the kinds the command takes, with their aliases (asked of
    the registry)."""

    def listed(kinds: tuple[str, ...]) -> str:
        found = CALIBRATORS.names(kind=kinds)
        aliases = [a for n in found for a in CALIBRATORS.info(n).get("aliases", ())]
        return ", ".join(sorted([*found, *aliases]))

    fitted = listed(("logits", "groups", "sets", "priors"))
    _fails(capsys, work, ["fit", "--method", "nope", "preds.npz"], "--method", fitted, "'nope'")
    argv = ["compare", "preds.npz", "--methods", "temperature,nope"]
    _fails(capsys, work, argv, "--methods", listed(("logits",)))
    _fails(capsys, work, ["compare", "preds.npz", "--methods", "platt"], "--methods", "2 classes")


@pytest.mark.parametrize(
    ("argv", "name"),
    [
        (["evaluate", "preds.npz", "--plot", "file.txt/plot.png"], "--plot"),
        (["fit", "--method", "temperature", "preds.npz", "-o", "file.txt/t.json"], "--out"),
        (["compare", "preds.npz", "--n-boot", "0", "--out", "file.txt/rep"], "--out"),
        (["compare", "preds.npz", "--n-boot", "0", "--out", "file.txt"], "--out"),
        (["demo", "--out", "file.txt/rep"], "--out"),
        (["evaluate", "preds.npz", "--plot", "missing/plot.png"], "--plot"),
    ],
)
def test_unwritable_output(
    work: Path, capsys: pytest.CaptureFixture[str], argv: list[str], name: str
) -> None:
    _fails(capsys, work, argv, name)


def test_unwritable_apply_output(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fit", "--method", "temperature", "preds.npz", "-o", "t.json"]) == 0
    _fails(capsys, work, ["apply", "t.json", "preds.npz", "-o", "file.txt/c.npz"], "--out")
    _fails(capsys, work, ["apply", "t.json", "preds.npz", "-o", "c.csv"], "--out", ".npz")


@pytest.mark.parametrize(
    ("argv", "names"),
    [
        ([], ("COMMAND",)),
        (["frobnicate"], ("COMMAND", "expected one of", "evaluate", "'frobnicate'")),
        (["evaluate"], ("FILE",)),
        (["evaluate", "preds.npz", "--n-bins", "0"], ("--n-bins", "[1, 100000]")),
        (["evaluate", "preds.npz", "--n-boot", "-1"], ("--n-boot",)),
        (["evaluate", "preds.npz", "--kind", "scores"], ("--kind",)),
        (["evaluate", "preds.npz", "--scores-key", "z"], ("--scores-key", "--kind")),
        (["compare", "preds.npz", "--cal-size", "1.5"], ("--cal-size",)),
        (["compare", "preds.npz", "--cal-size", "300"], ("--cal-size", "[1, 299]")),
        (["compare", "preds.npz", "--cal", "preds.npz"], ("--cal",)),
        (["compare"], ("FILE",)),
        (
            ["compare", "--cal", "preds.npz", "--test", "probs.npz", "--cal-size", "0.3"],
            ("--cal-size",),
        ),
        (["compare", "preds.npz", "--methods", ","], ("--methods",)),
        (["fit", "--method", "temperature", "preds.npz", "--param", "t_min"], ("--param",)),
        (["fit", "--method", "temperature", "preds.npz", "--param", "zz=1"], ("--param", "t_max")),
        (["fit", "--method", "temperature", "preds.npz", "--param", "t_max=0"], ("--param",)),
        (
            ["fit", "--method", "histogram", "preds.npz", "--param", "n_bins=abc"],
            ("--param n_bins: expected an integer in [1, 100000], got 'abc'",),
        ),
        (
            ["fit", "--method", "histogram", "preds.npz", "--param", "n_bins=0"],
            ("--param n_bins: expected an integer in [1, 100000], got 0",),
        ),
        (
            ["fit", "--method", "temperature", "preds.npz", "--param", "t_min=20"],
            ("--param t_max: expected a value above t_min",),
        ),
        (
            ["fit", "--method", "auto", "preds.npz", "--param", "criterion=log"],
            ("--param criterion: expected one of nll, brier, ece",),
        ),
        (["apply", "absent.json", "preds.npz"], ("calibkit file", "absent.json", "not found")),
    ],
)
def test_bad_command_lines(
    work: Path, capsys: pytest.CaptureFixture[str], argv: list[str], names: tuple[str]
) -> None:
    _fails(capsys, work, argv, *names)


def test_apply_with_wrong_class_count(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fit", "--method", "temperature", "preds.npz", "-o", "t.json"]) == 0
    _bad_npz(work, "two.npz", logits=np.zeros((4, 2)), labels=[0, 1, 0, 1])
    _fails(capsys, work, ["apply", "t.json", "two.npz"], "3 columns")


# ----- the installed console script -------------------------------------------------------
def test_console_script_error_is_one_line(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("calibkit")
    if not script.exists():
        pytest.skip(f"console script not installed beside {sys.executable}")
    np.savez(tmp_path / "nan.npz", probs=np.full((3, 2), np.nan), labels=[0, 1, 0])
    res = subprocess.run(
        [str(script), "evaluate", "nan.npz"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert res.returncode == 2
    assert res.stdout == ""
    assert res.stderr.splitlines() == [
        "calibkit: error: probs in nan.npz: expected finite values, got 6 NaN or infinite entries"
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nan.npz"]


# ----- real predictions -------------------------------------------------------------------
@pytest.fixture
def real(shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The real predictions file ``REAL``, with ``tmp_path`` as the current folder."""
    monkeypatch.chdir(tmp_path)
    return shared_data / REAL


@pytest.mark.shared_data
def test_real_evaluate_json(real: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evaluate", str(real), "--format", "json", "--n-boot", "20"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(METRIC_NAMES) <= set(data)
    assert data["n_samples"] == 10_000
    assert data["n_classes"] == 10
    for name in METRIC_NAMES:
        if name != "nll":
            assert 0.0 <= data[name] <= 1.0, name
    assert 0.85 < data["accuracy"] < 0.95
    assert 0.03 < data["ece"] < 0.08
    assert data["ece_floor"] < data["ece"]
    lo, hi = data["ci"]["ece"]
    assert lo <= data["ece"] <= hi
    assert list(tmp_path.iterdir()) == []  # evaluate writes a file only when asked (--plot)


@pytest.mark.shared_data
def test_real_fit_apply_lowers_ece(
    real: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with np.load(real) as npz:
        probs, labels = npz["probs"], npz["labels"]
    np.savez("cal.npz", probs=probs[::2], labels=labels[::2])
    np.savez("test.npz", probs=probs[1::2], labels=labels[1::2])
    assert main(["fit", "--method", "temperature", "cal.npz", "-o", "t.json"]) == 0
    temperature = Calibrator.load(tmp_path / "t.json").temperature_  # type: ignore[attr-defined]
    assert temperature > 1.0  # the network is overconfident
    assert main(["apply", "t.json", "test.npz", "-o", "calibrated.npz"]) == 0
    capsys.readouterr()
    before = ece(labels[1::2], probs=probs[1::2])
    after = ece(load_predictions("calibrated.npz", kind="probs"))
    assert after < before - 0.01


def test_binary_mode_positive_class_changes_the_ece(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--mode positive_class measures P(y = 1) against y: 0.1 here, where top-label gives 0."""
    # p(y=1) = 0.2 with true rate 0.3, and 0.8 with true rate 0.9 (the notes' example)
    p1 = np.array([0.2] * 10 + [0.8] * 10)
    y = np.array([1] * 3 + [0] * 7 + [1] * 9 + [0])
    f = tmp_path / "binary.npz"
    np.savez(f, probs=np.stack([1 - p1, p1], axis=1), labels=y)
    results = {}
    for mode in ("top_label", "positive_class"):
        args = ["evaluate", str(f), "--format", "json", "--n-boot", "0", "--plot", "none"]
        assert main([*args, "--mode", mode]) == 0
        results[mode] = json.loads(capsys.readouterr().out)["ece"]
    assert results["top_label"] == pytest.approx(0.0, abs=1e-12)
    assert results["positive_class"] == pytest.approx(0.1, abs=1e-12)


def test_fit_auto_says_which_method_it_picked(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    methods = ["--param", 'methods=["temperature", "histogram"]']
    assert main(["fit", "--method", "auto", "preds.npz", "-o", "auto.json", *methods]) == 0
    out = capsys.readouterr().out
    assert "auto chose 'temperature'" in out  # the logits are 3x too large: TS wins on NLL
    assert "temperature = " in out
    saved = json.loads((work / "auto.json").read_text())
    assert saved["state"]["chosen_"] == "temperature"
