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
        # the SCE of the default suite is computed on sparse maps, with or without resamples
        (["evaluate", "preds.npz", "--n-boot", "0"], {"scipy.sparse"}),
        (["evaluate", "preds.npz", "--n-boot", "20", "--format", "json"], {"scipy.sparse"}),
        (["evaluate", "preds.npz", "--n-boot", "0", "--extra", "smooth_ece"], {"scipy.sparse"}),
        (
            ["evaluate", "preds.npz", "--n-boot", "0", "--extra", "decomposition"],
            {"scipy.sparse", "scipy.optimize", "scipy.linalg", "scipy.special"},  # brentq
        ),
        (
            ["evaluate", "preds.npz", "--n-boot", "0", "--plot", "r.png", "--force"],
            {"scipy.sparse", "matplotlib", "PIL"},
        ),
        (
            ["evaluate", "preds.npz", "--n-boot", "0", "--rc-plot", "rc.png", "--force"],
            {"scipy.sparse", "matplotlib", "PIL"},
        ),
    ],
)
def test_evaluate_loads_no_torch_and_plots_only_when_asked(
    files: Path, argv: list[str], allowed: set[str]
) -> None:
    loaded = set(_loaded(files, *argv))
    assert loaded <= allowed, loaded - allowed
    assert "scipy.sparse" in loaded  # the check sees what a command loads


SCIPY_STATS = {"scipy.stats", "scipy.special", "scipy.linalg", "scipy.optimize"}


@pytest.mark.parametrize(
    ("argv", "allowed"),
    [
        (["methods"], {"torch"}),  # the calibrators are torch modules (to_module)
        (["fit", "--method", "temperature", "preds.npz", "-o", "t2.json", "--force"], {"torch"}),
        (["apply", "t.json", "preds.npz", "-o", "c.npz", "--force"], {"torch"}),
        (  # its shrinkage's cross-validation: scikit-learn's StratifiedKFold
            ["fit", "--method", "vector", "preds.npz", "-o", "v.json", "--force"],
            EVERYTHING - {"matplotlib", "PIL", "onnx", "onnxruntime", "ray"},
        ),
        (
            ["fit", "--method", "isotonic", "preds.npz", "-o", "i.json", "--force"],
            EVERYTHING - {"matplotlib", "PIL", "onnx", "onnxruntime", "ray"},
        ),
        (
            ["compare", "preds.npz", "--methods", "temperature", "--n-boot", "0", "--out", "r"],
            # the report's figures; its calibration tests' chi-square and normal tails, and
            # Kendall's tau of the ranking table (scipy.stats)
            {"torch", "matplotlib", "PIL", "scipy.sparse", *SCIPY_STATS},
        ),
    ],
)
def test_calibrator_commands_load_what_their_methods_use(
    files: Path, argv: list[str], allowed: frozenset[str]
) -> None:
    loaded = set(_loaded(files, *argv))
    assert loaded <= allowed, loaded - allowed
    assert "torch" in loaded


def test_demo_and_study_never_load_ray_or_onnx(tmp_path: Path) -> None:
    """The demo and a smoke study (serial executor) train, fit every default calibrator
    (scikit-learn's isotonic among them) and draw figures: all but Ray and ONNX."""
    allowed = EVERYTHING - {"ray", "onnx", "onnxruntime"}
    demo = ["demo", "--epochs", "1", "--n-boot", "0", "--methods", "temperature", "--out", "d"]
    assert set(_loaded(tmp_path, *demo)) <= allowed
    study = set(_loaded(tmp_path, "study", "--smoke", "--quiet", "--out", "s"))
    assert study <= allowed
    assert {"torch", "matplotlib"} <= study
