"""The catalogue declares every calibrator as its ``register`` call says (issue #46, item 11).

``calibkit methods`` and the registry's names, kinds and defaults are read from
``calibrators/catalogue.py`` without importing the calibrators' modules (and torch); this
checks that the catalogue says what the modules register, so it cannot drift.
"""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

import calibkit.calibrators
from calibkit.calibrators import CALIBRATORS
from calibkit.calibrators.catalogue import ENTRIES, entry_of, render


def _import_every_module() -> None:
    """Every module under ``calibkit/calibrators`` (so every ``register`` call has run)."""
    prefix = calibkit.calibrators.__name__ + "."
    for info in pkgutil.walk_packages(calibkit.calibrators.__path__, prefix):
        importlib.import_module(info.name)


def test_the_catalogue_is_what_the_modules_register() -> None:
    _import_every_module()
    ours = [n for n in CALIBRATORS.names() if CALIBRATORS.get(n).__module__.startswith("calibkit.")]
    live = {name: entry_of(CALIBRATORS, name) for name in ours}
    assert live == ENTRIES, (
        "calibrators/catalogue.py differs from the register calls; its ENTRIES should read:\n"
        + render(live)
    )


def test_the_catalogue_keeps_the_order_of_reports() -> None:
    assert [n for n in CALIBRATORS.names() if n in ENTRIES] == list(ENTRIES)
    assert CALIBRATORS.defaults(kind="logits")[:3] == ["temperature", "temperature_ece", "vector"]


def test_the_registry_is_read_without_importing_a_calibrator() -> None:
    """Names, kinds, defaults and every fact ``calibkit methods`` prints, in a fresh
    interpreter: no calibrator module, no torch."""
    code = (
        "import sys\n"
        "from calibkit.calibrators import CALIBRATORS as R\n"
        "facts = [(n, R.kind_of(n), R.fact(n, 'summary'), R.fact(n, 'binary_only'),"
        " R.fact(n, 'aliases', ())) for n in R.names()]\n"
        "assert R.defaults() and len(facts) == len(R)\n"
        "loaded = [m for m in sys.modules if m.startswith('calibkit.calibrators.')"
        " and m.count('.') > 2 or m.split('.')[0] == 'torch']\n"
        "print(sorted(loaded))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_declared_entry_loads_its_module_on_first_use() -> None:
    code = (
        "import sys\n"
        "from calibkit.calibrators import CALIBRATORS as R\n"
        "assert not R.is_loaded('temperature')\n"
        "print(R.get('temperature').__name__, R.is_loaded('temperature'),"
        " 'torch' in sys.modules, R.is_loaded('nc_ce'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["TemperatureScaling", "True", "False", "False"]
