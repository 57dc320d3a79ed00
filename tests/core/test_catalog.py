"""The catalog declares every calibrator once (issue #45, item 1): the registry, its order,
its kinds and facts, ``calibkit methods`` and the command line's name checks read it, and
each entry resolves to the class it names, which registers itself under its key."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from calibkit.calibrators import CALIBRATORS, Calibrator
from calibkit.core import catalog
from calibkit.core.catalog import ENTRIES, Entry
from calibkit.core.errors import InputError, UnknownNameError


@pytest.mark.parametrize("name", list(ENTRIES))
def test_every_entry_resolves_to_its_class(name: str) -> None:
    entry = ENTRIES[name]
    klass = CALIBRATORS.get(name)
    assert klass is getattr(importlib.import_module(entry.module), entry.class_name)
    assert (klass.name, klass.kind, klass.binary_only) == (name, entry.kind, entry.binary_only)
    assert CALIBRATORS.kind_of(name) == entry.kind == catalog.kind_of(name)
    for alias in entry.aliases:
        assert CALIBRATORS.get(alias) is klass
    info = CALIBRATORS.info(name)
    assert (info["summary"], info["default"], info["scope"]) == (
        entry.summary,
        entry.default,
        entry.scope,
    )


def test_the_registry_is_in_the_order_of_the_catalog() -> None:
    assert CALIBRATORS.names() == list(ENTRIES)
    assert CALIBRATORS.defaults(kind="logits")[:3] == ["temperature", "temperature_ece", "vector"]
    assert catalog.names(("sets", "priors")) == ("conformal", "prior_shift")


def test_an_unknown_name_suggests_the_nearest() -> None:
    with pytest.raises(UnknownNameError, match="did you mean 'temperature'"):
        CALIBRATORS.get("temprature")
    assert catalog.kind_of("temprature") is None


def test_a_catalogued_class_outside_its_kinds_folder_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A class the catalog places in ``sets/`` must be of kind ``sets``."""
    monkeypatch.setitem(ENTRIES, "toy_sets", Entry("sets.toy.Toy", "a toy", "A toy."))
    monkeypatch.setitem(catalog._BY_CLASS, "sets.toy.Toy", "toy_sets")
    with pytest.raises(TypeError, match="Toy is of kind 'logits', in 'sets'"):
        type("Toy", (Calibrator,), {"__module__": "calibkit.calibrators.sets.toy"})


def test_the_catalog_imports_no_numpy() -> None:
    code = "import sys, calibkit.core.catalog\nprint('numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_registry_is_read_without_importing_a_calibrator() -> None:
    """Names, kinds, defaults and every fact ``calibkit methods`` prints, in a fresh
    interpreter: no calibrator module, no torch."""
    code = (
        "import sys\n"
        "from calibkit.calibrators import CALIBRATORS as R\n"
        "facts = [(n, R.kind_of(n), R.fact(n, 'summary'), R.fact(n, 'binary_only'),"
        " R.fact(n, 'aliases', ()), R.fact(n, 'scope')) for n in R.names()]\n"
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


def test_a_class_imported_directly_knows_its_name() -> None:
    """Importing a calibrator's module (not through the registry) registers it."""
    code = (
        "from calibkit.calibrators.logit.binary import PlattScaling\n"
        "from calibkit.calibrators import CALIBRATORS as R\n"
        "print(PlattScaling.name, PlattScaling.binary_only, R.is_loaded('platt'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["platt", "True", "True"]


def test_every_conformity_score_resolves_to_its_class() -> None:
    from calibkit.calibrators.sets.conformal_scores import SCORES

    assert SCORES.names() == list(catalog.CONFORMITY_SCORES)
    for name, where in catalog.CONFORMITY_SCORES.items():
        module, _, class_name = f"{catalog.PACKAGE}.{where}".rpartition(".")
        klass = getattr(importlib.import_module(module), class_name)
        assert SCORES.get(name) is klass
        assert klass.name == name


def test_the_prior_estimators_are_the_adapters_choices() -> None:
    from calibkit.calibrators.priors.label_shift import PriorShiftAdapter

    for name in catalog.PRIOR_ESTIMATORS:
        PriorShiftAdapter(estimator=name)
    with pytest.raises(InputError, match="estimator"):
        PriorShiftAdapter(estimator="mle")


@pytest.mark.parametrize("name", list(catalog.MODEL_ENTRIES))
def test_every_model_entry_resolves_to_its_factory(name: str) -> None:
    from calibkit.models import MODELS

    entry = catalog.MODEL_ENTRIES[name]
    module = importlib.import_module(f"calibkit.models.{entry.module}")
    assert MODELS.get(name) is getattr(module, name)
    assert dict(MODELS.info(name)) == entry.info()


def test_the_models_are_listed_without_importing_torch() -> None:
    code = (
        "import sys\n"
        "from calibkit.cli.common import check_name\n"
        "from calibkit.core import catalog\n"
        "check_name('resnet20', '--model', tuple(catalog.MODEL_ENTRIES))\n"
        "print('torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
