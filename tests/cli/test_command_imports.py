"""Each command imports only what it uses (issue #21, item 6).

Every check runs the command in a fresh interpreter (``calibkit.cli.main`` on small files)
and lists the heavy modules loaded when it returns: each command states the ones it may load.
matplotlib (and Pillow) only when a figure is written, scipy's parts only when the
computation needs them (the SCE's sparse maps, the optimisers of the decompositions and of
the linear calibrators), scikit-learn only when a calibrator built on it is fitted or the
digits data are loaded, torch not for ``--help``, never Ray on the serial executor.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

#: Heavy modules, as reported: scipy by its parts, the others by their top-level package.
HEAVY = ("torch", "matplotlib", "PIL", "sklearn", "pandas", "onnx", "onnxruntime", "ray")
SCIPY = ("scipy.sparse", "scipy.optimize", "scipy.stats", "scipy.linalg", "scipy.special")
EVERYTHING = frozenset(HEAVY + SCIPY)

_REPORT = """
tops = {m.split(".")[0] for m in sys.modules}
loaded = sorted({*(m for m in HEAVY if m in tops), *(m for m in SCIPY if m in sys.modules)})
print(json.dumps({"code": code, "loaded": loaded, "numpy": "numpy" in sys.modules}))
"""


def _script(call: str) -> str:
    """A program running ``code = CALL`` quietly, then printing the heavy modules loaded."""
    quiet = "contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO())"
    head = f"import contextlib, io, json, sys\nHEAVY, SCIPY = {HEAVY!r}, {SCIPY!r}\n"
    return f"{head}from calibkit.cli import main\nwith {quiet}:\n    code = {call}\n{_REPORT}"


def _loaded(cwd: Path, *argv: str) -> list[str]:
    """The heavy modules ``calibkit ARGV`` loaded, run in a fresh interpreter in ``cwd``."""
    cmd = [sys.executable, "-c", _script("main(sys.argv[1:])"), *argv]
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["code"] == 0, out.stderr
    return list(result["loaded"])


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding ``preds.npz`` (300 x 3 logits) and ``t.json`` (a fitted temperature)."""
    folder = tmp_path_factory.mktemp("imports")
    rng = np.random.default_rng(0)
    z = rng.normal(size=(300, 3)) * 3.0
    np.savez(folder / "preds.npz", logits=z, labels=rng.integers(0, 3, 300))
    _loaded(folder, "fit", "--method", "temperature", "preds.npz", "-o", "t.json")
    return folder


def test_help_of_every_command_loads_nothing_heavy(tmp_path: Path) -> None:
    from calibkit.cli.parser import COMMANDS

    code = _script(f"max(main([c, '--help']) for c in {COMMANDS!r})")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result == {"code": 0, "loaded": [], "numpy": False}


@pytest.mark.parametrize(
    ("argv", "allowed"),
    [
        # the default suite (its SCE too, issue #43's speed work) needs no scipy
        (["evaluate", "preds.npz", "--n-boot", "0"], set()),
        (["evaluate", "preds.npz", "--n-boot", "20", "--format", "json"], set()),
        (["evaluate", "preds.npz", "--n-boot", "0", "--extra", "smooth_ece"], {"scipy.sparse"}),
        (
            ["evaluate", "preds.npz", "--n-boot", "0", "--extra", "decomposition"],
            {"scipy.optimize", "scipy.linalg", "scipy.special", "scipy.sparse"},  # brentq
        ),
        (
            ["evaluate", "preds.npz", "--n-boot", "0", "--plot", "r.png", "--force"],
            {"matplotlib", "PIL"},
        ),
        (
            ["evaluate", "preds.npz", "--n-boot", "0", "--rc-plot", "rc.png", "--force"],
            {"matplotlib", "PIL"},
        ),
    ],
)
def test_evaluate_loads_no_torch_and_plots_only_when_asked(
    files: Path, argv: list[str], allowed: set[str]
) -> None:
    loaded = set(_loaded(files, *argv))
    assert loaded <= allowed, loaded - allowed
    assert bool(loaded) == bool(allowed)  # the check sees what a command loads


SCIPY_STATS = {"scipy.stats", "scipy.special", "scipy.linalg", "scipy.optimize"}


@pytest.mark.parametrize(
    ("argv", "allowed"),
    [
        (  # its shrinkage's cross-validation: scikit-learn's StratifiedKFold; numpy's exp
            ["fit", "--method", "vector", "preds.npz", "-o", "v.json", "--force"],
            EVERYTHING - {"torch", "matplotlib", "PIL", "onnx", "onnxruntime", "ray"},
        ),
        (  # the torch module only on export (issue #44, item 4)
            ["fit", "--method", "isotonic", "preds.npz", "-o", "i.json", "--force"],
            EVERYTHING - {"torch", "matplotlib", "PIL", "onnx", "onnxruntime", "ray"},
        ),
        (  # every default method and the recommendation: no torch (issue #44, item 4)
            ["compare", "preds.npz", "--n-boot", "0", "--out", "all"],
            EVERYTHING - {"torch", "onnx", "onnxruntime", "ray"},
        ),
        (
            ["compare", "preds.npz", "--methods", "temperature", "--n-boot", "0", "--out", "r"],
            # the report's figures; its calibration tests' chi-square and normal tails, and
            # Kendall's tau of the ranking table (scipy.stats); no torch (issue #46, item 11)
            {"matplotlib", "PIL", "scipy.sparse", *SCIPY_STATS},
        ),
    ],
)
def test_calibrator_commands_load_what_their_methods_use(
    files: Path, argv: list[str], allowed: frozenset[str]
) -> None:
    loaded = set(_loaded(files, *argv))
    assert loaded <= allowed, loaded - allowed


@pytest.mark.parametrize(
    "argv",
    [
        ["methods"],
        ["methods", "--format", "json"],
        ["fit", "--method", "temperature", "preds.npz", "-o", "t2.json", "--force"],
        ["apply", "t.json", "preds.npz", "-o", "c.npz", "--force"],
        ["fit", "--method", "temperature_ece", "preds.npz", "-o", "e.json", "--force"],
        ["apply", "e.json", "preds.npz", "-o", "c.npz", "--force"],
        ["fit", "--method", "bcts", "preds.npz", "-o", "b.json", "--force"],
        ["apply", "b.json", "preds.npz", "-o", "c.npz", "--force"],
    ],
)
def test_listing_methods_and_numpy_only_calibrators_load_no_torch(
    files: Path, argv: list[str]
) -> None:
    """Issue #46, item 11: the registry's metadata is read without importing a calibrator's
    module (``calibkit/core/catalog.py``), and temperature scaling (by NLL or ECE) and BCTS
    are fitted and applied by numpy alone: ``import torch`` was 5 s of each command."""
    loaded = set(_loaded(files, *argv))
    assert "torch" not in loaded
    assert loaded <= {"scipy.optimize", "scipy.linalg", "scipy.special", "scipy.sparse"}


def test_the_check_sees_torch_where_a_command_loads_it(files: Path) -> None:
    """The same check reports torch where a method uses it (scaling-binning: its module
    is defined beside it)."""
    assert "torch" in _loaded(files, "fit", "--method", "scaling_binning", "preds.npz",
                              "-o", "s.json", "--force")  # fmt: skip


def test_demo_and_study_never_load_ray_or_onnx(tmp_path: Path) -> None:
    """The demo and a smoke study (serial executor) train, fit every default calibrator
    (scikit-learn's isotonic among them) and draw figures: all but Ray and ONNX."""
    allowed = EVERYTHING - {"ray", "onnx", "onnxruntime"}
    demo = ["demo", "--epochs", "1", "--n-boot", "0", "--methods", "temperature", "--out", "d"]
    assert set(_loaded(tmp_path, *demo)) <= allowed
    study = set(_loaded(tmp_path, "study", "--smoke", "--quiet", "--out", "s"))
    assert study <= allowed
    assert {"torch", "matplotlib"} <= study


# ----- bad input, refused before any heavy import (issue #30) ------------------------------
_REFUSAL = """
tops = {m.split(".")[0] for m in sys.modules}
loaded = sorted({*(m for m in HEAVY if m in tops), *(m for m in SCIPY if m in sys.modules)})
print(json.dumps({"code": code, "loaded": loaded, "err": err.getvalue()}))
"""


def _refused(cwd: Path, *argv: str) -> tuple[str, list[str]]:
    """``calibkit ARGV`` run in a fresh interpreter in ``cwd``, asserted to exit 2 with one
    line on stderr and to write nothing: that line and the heavy modules it loaded."""
    head = f"import contextlib, io, json, sys\nHEAVY, SCIPY = {HEAVY!r}, {SCIPY!r}\n"
    body = (
        "from calibkit.cli import main\nerr = io.StringIO()\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):\n"
        "    code = main(sys.argv[1:])\n"
    )
    before = sorted(p.name for p in cwd.iterdir())
    cmd = [sys.executable, "-c", head + body + _REFUSAL, *argv]
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    lines = result["err"].strip().splitlines()
    assert result["code"] == 2, result["err"]
    assert len(lines) == 1, result["err"]
    assert lines[0].startswith("calibkit: error: ")
    assert sorted(p.name for p in cwd.iterdir()) == before  # nothing written
    return lines[0], list(result["loaded"])


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding ``preds.npz`` (60 x 3 logits and labels), made without calibkit."""
    folder = tmp_path_factory.mktemp("refusals")
    rng = np.random.default_rng(0)
    np.savez(folder / "preds.npz", logits=rng.normal(size=(60, 3)), labels=np.arange(60) % 3)
    return folder


#: A missing input file for every command that reads one (``methods`` reads none; ``demo``
#: none either: its refusal is an existing file given as ``--out``).
MISSING = [
    (["evaluate", "absent.npz"], "FILE"),
    (["evaluate", "preds.npz", "--kind", "logits", "--labels", "absent.npy"], "--labels"),
    (["compare", "absent.npz"], "FILE"),
    (["compare", "--cal", "preds.npz", "--test", "absent.npz"], "--test"),
    (["conformal", "absent.npz"], "FILE"),
    (["labelshift", "--cal", "absent.npz", "--target", "preds.npz"], "--cal"),
    (["labelshift", "--cal", "preds.npz", "--target", "absent.npz"], "--target"),
    (["shift", "--model", "resnet20", "--weights", "absent.pt"], "--weights"),
    (["fit", "--method", "temperature", "absent.npz", "-o", "t.json"], "FILE"),
    (["apply", "absent.json", "preds.npz", "-o", "c.npz"], "calibkit file"),
    (["apply", "preds.npz", "absent.npz", "-o", "c.npz"], "FILE"),
    (["study", "absent.toml"], "CONFIG"),
]


@pytest.mark.parametrize(("argv", "option"), MISSING, ids=[" ".join(a) for a, _ in MISSING])
def test_a_missing_input_is_refused_before_any_heavy_import(
    inputs: Path, argv: list[str], option: str
) -> None:
    line, loaded = _refused(inputs, *argv)
    assert f"error: {option}: expected an existing file, got absent." in line
    assert loaded == []  # torch, matplotlib, scikit-learn, scipy: none


def test_every_command_that_reads_a_file_is_checked() -> None:
    from calibkit.cli.parser import COMMANDS

    checked = {argv[0] for argv, _ in MISSING}
    assert checked == set(COMMANDS) - {"demo", "methods"}  # they read no file


@pytest.mark.parametrize(
    ("argv", "option", "meant"),
    [
        (["evalute", "preds.npz"], "COMMAND", "evaluate"),
        (["fit", "--method", "temprature", "preds.npz", "-o", "t.json"], "--method", "temperature"),
        (["compare", "preds.npz", "--methods", "temprature,ms_odir"], "--methods", "temperature"),
        (["compare", "preds.npz", "--methods", "temperature,ms_odri"], "--methods", "ms_odir"),
        (["demo", "--methods", "vectr"], "--methods", "vector"),
        (["conformal", "preds.npz", "--method", "temprature"], "--method", "temperature"),
        (["conformal", "preds.npz", "--scores", "rapss"], "--scores", "raps"),
        (["labelshift", "--cal", "preds.npz", "--target", "preds.npz", "--method", "bctss"],
         "--method", "bcts"),
        (["labelshift", "--cal", "preds.npz", "--target", "preds.npz", "--estimator", "emm"],
         "--estimator", "em"),
        (["evaluate", "preds.npz", "--extra", "smooth_eci"], "--extra", "smooth_ece"),
        (["evaluate", "preds.npz", "--format", "jsn"], "--format", "json"),
        (["shift", "--model", "resnt20", "--weights", "preds.npz"], "--model", "resnet20"),
        (["shift", "--model", "resnet20", "--weights", "preds.npz", "--data", "cifar10-jpg"],
         "--data", "cifar10-jpeg"),
        (["shift", "--model", "resnet20", "--weights", "preds.npz", "--data", "cifar10@fogg:3"],
         "--data", "fog"),
        (["shift", "--model", "resnet20", "--weights", "preds.npz", "--corruptions", "snoww"],
         "--corruptions", "snow"),
        (["shift", "--model", "resnet20", "--weights", "preds.npz", "--methods", "vectr"],
         "--methods", "vector"),
        (["shift", "--model", "resnet20", "--weights", "preds.npz", "--scores", "lacc"],
         "--scores", "lac"),
        (["study", "--models", "mlpp"], "--models", "mlp"),
    ],
)  # fmt: skip
def test_a_mistyped_name_is_refused_with_a_suggestion_before_any_heavy_import(
    inputs: Path, argv: list[str], option: str, meant: str
) -> None:
    line, loaded = _refused(inputs, *argv)
    assert line.startswith(f"calibkit: error: {option}: ")
    assert line.endswith(f"(did you mean {meant!r}?)")
    assert loaded == []


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (  # the file's class count read before the fit
            ["labelshift", "--cal", "preds.npz", "--target", "preds.npz", "--priors", "0.5,0.5"],
            "--priors: expected 3 priors >= 0 summing to 1 (one per class of --cal), got 2 values",
        ),
        (["demo", "--out", "preds.npz"], "--out: expected a folder path"),
        (["compare", "preds.npz", "--out", "preds.npz"], "--out: expected a folder path"),
        (["shift", "--model", "resnet20", "--weights", "preds.npz", "--out", "preds.npz"],
         "--out: expected a folder path"),
        (["study", "--out", "preds.npz"], "--out: expected a folder path"),
        (["study", "--out", "absent/study"], "--out: expected a path in an existing folder"),
        (["conformal", "preds.npz", "--alpha", "1.5"], "--alpha"),
        (["evaluate", "preds.npz", "--level", "2"], "--level"),
    ],
)  # fmt: skip
def test_a_bad_option_value_is_refused_before_any_heavy_import(
    inputs: Path, argv: list[str], expected: str
) -> None:
    line, loaded = _refused(inputs, *argv)
    assert expected in line
    assert not {"torch", "matplotlib", "sklearn"} & set(loaded)


def test_the_cli_spells_the_default_study_config_where_the_library_has_it() -> None:
    from calibkit.cli.study import DEFAULT_CONFIG
    from calibkit.study.definition.config import DEFAULT_CONFIG as LIBRARY

    assert LIBRARY.resolve() == DEFAULT_CONFIG


@pytest.mark.parametrize(
    ("table", "where", "meant"),
    [
        ('[data]\ndataset = "digitz"\n[[models]]\nname = "mlp"', "data.dataset", "digits"),
        ('[data]\ndataset = "cifar10-jpg:bird,cat"', "data.dataset", "cifar10-jpeg"),
        ('[data]\ndataset = "digits"\n[[models]]\nname = "mlpp"', "models[0].name", "mlp"),
    ],
)
def test_a_mistyped_name_in_a_study_config_is_refused_before_any_heavy_import(
    tmp_path: Path, table: str, where: str, meant: str
) -> None:
    (tmp_path / "s.toml").write_text(f"seeds = [0]\n{table}\n")
    line, loaded = _refused(tmp_path, "study", "s.toml")
    assert line.startswith(f"calibkit: error: s.toml: {where}: expected one of ")
    assert line.endswith(f"(did you mean {meant!r}?)")
    assert loaded == []


def test_every_shipped_study_config_passes_the_early_checks() -> None:
    """The early checks refuse no config the project ships (they read names only)."""
    import argparse

    from calibkit.cli.study import check_first

    root = Path(__file__).resolve().parents[2]
    configs = sorted(root.glob("experiments/**/*.toml"))
    assert configs
    for path in configs:
        assert check_first(argparse.Namespace(config=str(path), models=None)) == path
