"""What importing calibkit costs: the package root and the CLI load only what they need.

``import calibkit`` and the core API (metrics, calibrators, the compare workflow) load
neither Pillow, matplotlib nor the dataset loaders; ``calibkit --help`` and ``--version``
do not import torch. Each check runs in a fresh interpreter; times are the best of three
runs, so a busy machine does not fail them.
"""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("PIL", "matplotlib", "calibkit.data")

_CORE_API = """
import json, sys, time
import torch
start = time.perf_counter()
import calibkit
calibkit.ece, calibkit.evaluate, calibkit.TemperatureScaling, calibkit.compare
print(json.dumps({"seconds": time.perf_counter() - start,
                  "loaded": [m for m in %r if m in sys.modules]}))
"""

_CLI = """
import contextlib, io, json, sys, time
start = time.perf_counter()
from calibkit.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    codes = [main(["--help"]), main(["--version"]), main(["study", "--help"])]
print(json.dumps({"seconds": time.perf_counter() - start, "codes": codes,
                  "torch": "torch" in sys.modules, "numpy": "numpy" in sys.modules}))
"""


def _run(code: str) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def test_core_api_loads_no_images_plots_or_datasets() -> None:
    runs = [_run(_CORE_API % (HEAVY,)) for _ in range(3)]
    assert runs[0]["loaded"] == []
    assert min(float(r["seconds"]) for r in runs) < 1.0  # type: ignore[arg-type]


def test_package_root_alone_is_instant() -> None:
    code = "import sys; import calibkit; print([m for m in ('torch', 'numpy') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_help_and_version_do_not_import_torch() -> None:
    runs = [_run(_CLI) for _ in range(3)]
    assert runs[0]["codes"] == [0, 0, 0]
    assert runs[0]["torch"] is False
    assert runs[0]["numpy"] is False
    assert min(float(r["seconds"]) for r in runs) < 0.5  # type: ignore[arg-type]


def test_python_dash_m_runs_the_cli() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "calibkit", "--version"], capture_output=True, text=True, check=True
    )
    assert out.stdout.startswith("calibkit ")
