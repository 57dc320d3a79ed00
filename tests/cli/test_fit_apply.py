"""``calibkit fit`` and ``calibkit apply`` on every kind: fit -> file -> apply round trips
equal to the library's objects, a refused file of before 0.1.0, unlabelled predictions, and
bad input (exit 2, one line, nothing written, torch not imported before the paths are
checked)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from calibkit.calibrators import CALIBRATORS, load
from calibkit.calibrators.persistence import KINDS
from calibkit.cli import main
from calibkit.cli.fit import FIT_KINDS
from tests.calibrators.problems import random_problem

pytestmark = pytest.mark.usefixtures("one_thread")

N_CAL, N_TEST, K = 800, 400, 3


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The current folder, holding ``cal.npz`` and ``test.npz`` (logits, labels and a group
    per row, ``site``) and ``target.npz`` (unlabelled logits, mostly of class 0)."""
    monkeypatch.chdir(tmp_path)
    z, y = random_problem(N_CAL + N_TEST, K, seed=1)
    site = np.where(np.arange(N_CAL + N_TEST) % 3 == 0, "north", "south")
    z[site == "north"] *= 2.0  # a group twice as overconfident
    cal, test = slice(0, N_CAL), slice(N_CAL, None)
    np.savez(tmp_path / "cal.npz", logits=z[cal], labels=y[cal], site=site[cal])
    np.savez(tmp_path / "test.npz", logits=z[test], labels=y[test], site=site[test])
    keep = np.flatnonzero((y[test] == 0) | (np.arange(N_TEST) % 4 == 0)) + N_CAL
    np.savez(tmp_path / "target.npz", logits=z[keep])
    return tmp_path


def _arrays(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as npz:
        return {key: npz[key] for key in npz.files}


def _run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def _fails(capsys: pytest.CaptureFixture[str], folder: Path, argv: list[str], *parts: str) -> str:
    """``argv`` exits 2 with one stderr line holding ``parts``, no stdout, nothing written."""
    before = sorted(p.name for p in folder.iterdir())
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2, err
    assert len(err.splitlines()) == 1, err
    assert err.startswith("calibkit: error: ")
    assert "Traceback" not in err
    for part in parts:
        assert part in err, (part, err)
    assert out == ""
    assert sorted(p.name for p in folder.iterdir()) == before
    return err


#: Per kind: the ``calibkit fit`` options, the library object they stand for, and the
#: options ``calibkit apply`` needs.
CASES: dict[str, tuple[list[str], str, dict[str, Any], list[str]]] = {
    "logits": (["--method", "temperature"], "temperature", {}, []),
    "groups": (
        ["--method", "temperature_groupwise", "--groups", "site"],
        "temperature_groupwise",
        {},
        ["--groups", "site"],
    ),
    "sets": (
        [
            *("--method", "conformal", "--param", "alpha=0.1"),
            *("--param", 'conformity_score={"name": "raps", "penalty": 0.05}'),
            *("--param", "calibrator=temperature"),
        ],
        "conformal",
        {
            "alpha": 0.1,
            "conformity_score": {"name": "raps", "penalty": 0.05},
            "calibrator": "temperature",
        },
        [],
    ),
    "priors": (
        ["--method", "prior_shift", "--param", "estimator=em", "--target", "target.npz"],
        "prior_shift",
        {"estimator": "em"},
        [],
    ),
}


def test_the_cases_cover_every_kind_fit_takes() -> None:
    assert set(CASES) == set(FIT_KINDS) == set(KINDS) - {"model"}
    for kind in FIT_KINDS:
        assert CALIBRATORS.names(kind=kind), kind  # the registry has each kind


def _library(kind: str, cal: dict[str, np.ndarray], target: np.ndarray) -> Any:
    """The object ``CASES[kind]`` describes, fitted by the library on ``cal``."""
    _, name, params, _ = CASES[kind]
    fitted = CALIBRATORS.create(name, **params)
    if kind == "groups":
        return fitted.fit(cal["logits"], cal["labels"], groups=cal["site"])
    if kind == "priors":
        return fitted.fit(cal["logits"], cal["labels"], target_logits=target)
    return fitted.fit(cal["logits"], cal["labels"])


@pytest.mark.parametrize("kind", list(CASES))
def test_fit_file_apply_round_trip(
    work: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    fit_options, name, _, apply_options = CASES[kind]
    out = _run(capsys, ["fit", *fit_options, "cal.npz", "-o", "fitted.json"])
    groups = ", 2 groups in 'site'" if kind == "groups" else ""
    assert out.startswith(f"fitted {name} on {N_CAL} samples ({K} classes{groups})\n")
    cal, test = _arrays(work / "cal.npz"), _arrays(work / "test.npz")
    lib = _library(kind, cal, _arrays(work / "target.npz")["logits"])
    saved = json.loads((work / "fitted.json").read_text())
    assert saved["kind"] == kind
    assert saved["method"] == name
    assert saved == json.loads(json.dumps(lib.to_json()))  # the same fit, bit for bit
    assert type(load(work / "fitted.json")) is type(lib)

    out = _run(capsys, ["apply", "fitted.json", "test.npz", "-o", "out.npz", *apply_options])
    assert out.startswith(f"applied {name}")
    got = _arrays(work / "out.npz")
    assert np.array_equal(got["labels"], test["labels"])
    z = test["logits"]
    if kind == "sets":
        sets = lib.predict_set(z)
        assert sorted(got) == ["labels", "probs", "set_size", "sets"]
        assert got["sets"].dtype == np.bool_
        assert np.array_equal(got["sets"], sets)
        assert np.array_equal(got["set_size"], sets.sum(axis=1))
        assert np.array_equal(got["probs"], lib.predict_proba(z))
        coverage = 100 * sets[np.arange(N_TEST), test["labels"]].mean()
        mean = f"mean set size {sets.sum(axis=1).mean():.3g}"
        assert f"coverage {coverage:.2f}% (target 90.0%), {mean}\n" in out
        assert "prediction sets: out.npz" in out
    elif kind == "groups":
        assert np.array_equal(got["probs"], lib.predict_proba(z, groups=test["site"]))
        assert "ECE " in out
    else:
        assert np.array_equal(got["probs"], lib.predict_proba(z))
        assert "ECE " in out


def test_apply_says_what_rows_of_unseen_groups_get(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 42: a third of the rows in a group never seen at fit were mapped silently."""
    _run(capsys, ["fit", *CASES["groups"][0], "cal.npz", "-o", "g.json"])
    test = _arrays(work / "test.npz")
    site = np.where(np.arange(N_TEST) % 3 == 0, "west", test["site"])
    np.savez(work / "new.npz", logits=test["logits"], labels=test["labels"], site=site)
    n = int(np.count_nonzero(site == "west"))
    capsys.readouterr()
    assert main(["apply", "g.json", "new.npz", "--groups", "site", "-o", "out.npz"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith(
        f"applied temperature_groupwise to {N_TEST} samples ({n} of them in groups unseen at"
        " fit time: the global temperature)\n"
    ), out
    assert err == (
        f"calibkit: warning: temperature_groupwise: {n} of {N_TEST} rows (33.5%) belong to a"
        " group unseen at fit time, 'west': they get the global temperature\n"
    )
    out = _run(capsys, ["apply", "g.json", "test.npz", "--groups", "site", "-o", "o2.npz"])
    assert out.startswith(f"applied temperature_groupwise to {N_TEST} samples\n")


def test_fit_prints_what_each_kind_fitted(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _run(capsys, ["fit", *CASES["sets"][0], "cal.npz", "-o", "sets.json"])
    cp = load(work / "sets.json")
    assert "  score = raps (penalty=0.05, k_reg=1), alpha = 0.1 (target coverage 90.0%)\n" in out
    assert f"  threshold = {cp.thresholds_[0]:.6g} (from {cp.n_calibration_} rows)\n" in out
    assert "  calibrator underneath: temperature\n    temperature = " in out
    assert out.endswith("conformal predictor: sets.json\n")

    argv = ["fit", "--method", "conformal", "--param", "mondrian=true", "--param", "alpha=0.2"]
    out = _run(capsys, [*argv, "--param", "calibrator=none", "cal.npz", "-o", "m.json"])
    cp = load(work / "m.json")
    assert cp.calibrator is None
    shown = ", ".join(f"{t:.6g}" for t in cp.thresholds_)
    assert f"  thresholds = {shown} (one per class, from {N_CAL} rows)\n" in out

    out = _run(capsys, ["fit", *CASES["priors"][0], "cal.npz", "-o", "priors.json"])
    adapter = load(work / "priors.json")
    shown = ", ".join(f"{p:.6g}" for p in adapter.target_priors_)
    assert f"  target priors = {shown} (estimated by em from target.npz, " in out
    assert adapter.target_priors_[0] > 0.5  # the target is mostly class 0
    assert out.endswith("prior adapter: priors.json\n")


def test_an_unadapted_adapter_adapts_to_the_file_it_is_applied_to(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["fit", "--method", "prior_shift", "--param", "calibrator=none", "cal.npz"]
    out = _run(capsys, [*argv, "-o", "a.json"])
    assert "not estimated (no --target): saved unadapted" in out
    assert "target_priors_" not in json.loads((work / "a.json").read_text())["state"]
    out = _run(capsys, ["apply", "a.json", "target.npz", "-o", "adapted.npz"])
    assert "(estimated by em from target.npz: the adapter was saved unadapted)" in out
    assert "ECE" not in out  # no labels: nothing scored
    z = _arrays(work / "target.npz")["logits"]
    cal = _arrays(work / "cal.npz")
    lib = CALIBRATORS.create("prior_shift", calibrator=None)
    lib.fit(cal["logits"], cal["labels"], target_logits=z)
    got = _arrays(work / "adapted.npz")
    assert sorted(got) == ["probs"]
    assert np.array_equal(got["probs"], lib.predict_proba(z))


def test_apply_unlabelled_predictions(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _run(capsys, ["fit", "--method", "temperature", "cal.npz", "-o", "t.json"])
    _run(capsys, ["fit", *CASES["sets"][0], "cal.npz", "-o", "s.json"])
    out = _run(capsys, ["apply", "t.json", "target.npz", "-o", "t.npz"])
    assert out.splitlines()[1:] == ["calibrated predictions: t.npz"]
    assert sorted(_arrays(work / "t.npz")) == ["logits", "probs"]
    out = _run(capsys, ["apply", "s.json", "target.npz", "-o", "s.npz"])
    assert "(no labels: coverage not measured)" in out
    assert sorted(_arrays(work / "s.npz")) == ["probs", "set_size", "sets"]


def test_apply_refuses_a_file_of_before_0_1_0(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue #45, item 4: a document of the development versions before 0.1.0 (its version-1
    header) is refused in one line naming the file, not upgraded."""
    old = {
        "calibkit_calibrator": 1,
        "method": "temperature",
        "params": {"t_min": 0.1, "t_max": 10.0},
        "state": {"n_classes_": 3, "log_temperature_": math.log(1.5), "temperature_": 1.5},
    }
    (work / "old.json").write_text(json.dumps(old, indent=1))
    argv = ["apply", "old.json", "test.npz", "-o", "c.npz"]
    _fails(capsys, work, argv, "old.json", "(unsupported: written before calibkit 0.1.0)")


# ----- bad input --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("argv", "parts"),
    [
        (
            ["fit", "--method", "temprature", "cal.npz"],
            ("--method", "'temprature' (did you mean 'temperature'?)"),
        ),
        (["fit", "--method", "nc_fl", "cal.npz"], ("--method", "any kind but 'model'", "model")),
        (
            ["fit", "--method", "temperature_groupwise", "cal.npz"],
            ("--groups", "each row's group"),
        ),
        (["fit", "--method", "temperature", "--groups", "site", "cal.npz"], ("--groups",)),
        (["fit", "--method", "conformal", "--target", "target.npz", "cal.npz"], ("--target",)),
        (
            ["fit", "--method", "prior_shift", "--target", "absent.npz", "cal.npz"],
            ("--target: expected an existing file, got absent.npz (not found)",),
        ),
        (
            ["fit", "--method", "conformal", "--param", "conformity_score=topk", "cal.npz"],
            ("--param conformity_score", "one of aps, lac, raps, saps"),
        ),
        (  # issue 42: the last was kept silently
            [
                *("fit", "--method", "temperature", "cal.npz"),
                *("--param", "t_min=0.05", "--param", "t_min=0.2"),
            ],
            (
                "--param t_min: expected one value (each parameter given once), got two:"
                " 't_min=0.05', then 't_min=0.2'",
            ),
        ),
        (["fit", "--method", "temperature", "absent.npz"], ("FILE", "absent.npz")),
    ],
)
def test_fit_refuses_bad_input(
    work: Path, capsys: pytest.CaptureFixture[str], argv: list[str], parts: tuple[str, ...]
) -> None:
    _fails(capsys, work, argv, *parts)


def test_fit_refuses_a_target_of_other_classes(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    np.savez(work / "wide.npz", logits=np.zeros((5, K + 1)))
    argv = ["fit", "--method", "prior_shift", "--target", "wide.npz", "cal.npz"]
    _fails(capsys, work, argv, "--target", f"FILE's {K} classes", f"{K + 1} classes")


def test_apply_refuses_bad_input(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _run(capsys, ["fit", *CASES["sets"][0], "cal.npz", "-o", "sets.json"])
    _run(capsys, ["fit", *CASES["groups"][0], "cal.npz", "-o", "g.json"])
    np.savez(work / "four.npz", logits=np.zeros((8, 4)), labels=np.arange(8) % 4)
    _fails(capsys, work, ["apply", "sets.json", "four.npz"], "3 columns", "got 4 columns")
    _fails(capsys, work, ["apply", "g.json", "test.npz"], "--groups", "each row's group")
    argv = ["apply", "sets.json", "test.npz", "--groups", "site"]
    _fails(capsys, work, argv, "--groups", "'conformal', a sets kind")
    _fails(capsys, work, ["apply", "absent.json", "test.npz"], "calibkit file", "not found")


@pytest.mark.parametrize(
    "doc",
    [
        {"calibkit": 3, "kind": "model", "method": "nc_fast", "params": {}, "state": {}}
        | {"tensors_file": "nc.safetensors", "tensors_sha256": "0" * 64},
    ],
)
def test_apply_refuses_a_model_calibrator(
    work: Path, capsys: pytest.CaptureFixture[str], doc: dict[str, Any]
) -> None:
    (work / "nc.json").write_text(json.dumps(doc))
    _fails(capsys, work, ["apply", "nc.json", "test.npz"], "nc.json", "kind 'model'", "the model")


def _torch_loaded(cwd: Path, *argv: str) -> tuple[int, bool]:
    """``calibkit ARGV``'s exit status in a fresh interpreter, and whether torch was loaded."""
    code = (
        "import contextlib, io, sys\nfrom calibkit.cli import main\n"
        "with contextlib.redirect_stderr(io.StringIO()):\n    code = main(sys.argv[1:])\n"
        "print(code, 'torch' in sys.modules)"
    )
    res = subprocess.run(
        [sys.executable, "-c", code, *argv], cwd=cwd, capture_output=True, text=True, check=True
    )
    status, torch = res.stdout.split()
    return int(status), torch == "True"


def test_paths_are_checked_before_torch_is_imported(work: Path) -> None:
    """A missing input or an unwritable output is refused before the registry (and torch)
    is imported, so before any fit."""
    argv = ["fit", "--method", "prior_shift", "--target", "no.npz", "cal.npz"]
    assert _torch_loaded(work, *argv) == (2, False)
    assert _torch_loaded(work, "fit", "--method", "nope", "absent.npz") == (2, False)
    assert _torch_loaded(work, "fit", "--method", "x", "cal.npz", "-o", "no/x.json") == (2, False)
    assert _torch_loaded(work, "apply", "absent.json", "test.npz") == (2, False)
    (work / "t.json").write_text("{}")
    assert _torch_loaded(work, "apply", "t.json", "absent.npz") == (2, False)


def test_out_is_the_output(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--out`` (``-o``) names the file fit and apply write."""
    _run(capsys, ["fit", "--method", "temperature", "cal.npz", "--out", "t.json"])
    assert load(work / "t.json").name == "temperature"
    _run(capsys, ["fit", "--method", "temperature", "cal.npz", "-o", "u.json"])
    assert (work / "u.json").read_text() == (work / "t.json").read_text()
    _run(capsys, ["apply", "t.json", "test.npz", "--out", "a.npz"])
    _run(capsys, ["apply", "t.json", "test.npz", "-o", "b.npz"])
    assert np.array_equal(_arrays(work / "a.npz")["probs"], _arrays(work / "b.npz")["probs"])


@pytest.mark.parametrize("name", ["TEMPERATURE", "Temperature"])
def test_a_wrong_case_method_is_suggested(
    work: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """Issue 42: a method name in the wrong case got no "did you mean"."""
    _fails(
        capsys,
        work,
        ["fit", "--method", name, "cal.npz"],
        f"got {name!r} (did you mean 'temperature'?)",
    )
