"""Every fitted post-hoc object, on one contract (:class:`PostHoc`,
:mod:`calibkit.calibrators.fitted`), split by kind:

- ``base.py``, ``fitted.py``, ``persistence.py``, ``estimator.py``: the contract, the
  registry :data:`CALIBRATORS`, the one JSON document and :func:`load`; ``modules.py`` and
  ``calibrated_model.py``: the torch modules every kind exports to; ``export.py``: those
  modules as a ``torch.export`` program or an ONNX file that take any number of rows;
  every entry is declared in :mod:`calibkit.core.catalog` (name, class, summary, ...)
  without importing its module, so that listing them or fitting temperature scaling needs
  no torch;
- ``logit/``: calibrators of logits (temperature scaling ... ``auto``);
- ``groups/``: calibrators that take each row's group (group-wise TS, multicalibration);
- ``model/``: calibrators that take the model and its inputs (Neural Clamping);
- ``sets/``: conformal prediction sets and their conformity scores;
- ``priors/``: label-shift adaptation;
- ``sklearn_wrapper.py``: any scikit-learn classifier, calibrated by a calibrator of logits.

Make one by name with :func:`create_calibrator`; ``CALIBRATORS.names(kind=...)`` lists the
entries of a kind. The modules' paths before the split (``calibkit.calibrators.temperature``,
...) still import, with a DeprecationWarning (:data:`MOVED`); ``get_calibrator`` is a
deprecated alias of :func:`create_calibrator`.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import TYPE_CHECKING, Any

# The contract and the registry are imported at once (numpy only); every other public name
# loads its module on first use (PEP 562, ``__getattr__`` below), so that reading the
# registry's metadata (``calibkit methods``) or fitting temperature scaling imports no torch.
# The order of the methods in reports is that of ``core.catalog.ENTRIES`` (``CALIBRATORS.names()``).
from calibkit.calibrators.base import CALIBRATORS as CALIBRATORS
from calibkit.calibrators.base import Calibrator as Calibrator
from calibkit.calibrators.base import create_calibrator as create_calibrator
from calibkit.calibrators.base import get_calibrator as get_calibrator  # deprecated: not in __all__
from calibkit.calibrators.fitted import CalibratorSpec as CalibratorSpec
from calibkit.calibrators.fitted import PostHoc as PostHoc
from calibkit.calibrators.fitted import load as load
from calibkit.core import catalog as _catalog
from calibkit.core.lazy import type_checking_imports as _type_checking_imports

if TYPE_CHECKING:  # the public names besides the catalogued classes, each from its module
    from calibkit.calibrators.calibrated_model import CalibratedModel as CalibratedModel
    from calibkit.calibrators.export import export_onnx as export_onnx
    from calibkit.calibrators.export import export_program as export_program
    from calibkit.calibrators.logit.temperature_grid import ece_grid_minimum as ece_grid_minimum
    from calibkit.calibrators.logit.temperature_grid import (
        ece_temperature_curve as ece_temperature_curve,
    )
    from calibkit.calibrators.model.clamping import ABLATIONS as ABLATIONS
    from calibkit.calibrators.model.clamping import NeuralClamping as NeuralClamping
    from calibkit.calibrators.model.clamping import SGDSettings as SGDSettings
    from calibkit.calibrators.priors.label_shift import adapt_priors as adapt_priors
    from calibkit.calibrators.priors.label_shift import (
        estimate_priors_bbse as estimate_priors_bbse,
    )
    from calibkit.calibrators.priors.label_shift import estimate_priors_em as estimate_priors_em

#: Each public name loaded on first use -> its module: those of the ``TYPE_CHECKING`` imports
#: above, and the class of every entry of :mod:`calibkit.core.catalog` (but the Neural
#: Clamping variants; type checkers see those through ``__getattr__``).
_LAZY: dict[str, str] = {**_type_checking_imports(__file__), **_catalog.exported()}
#: The names imported at once (the contract and the registry), then the lazy ones.
_EAGER = ("CALIBRATORS", "Calibrator", "CalibratorSpec", "PostHoc", "create_calibrator", "load")

__all__ = sorted([*_EAGER, *_LAZY])


# ----- the modules' old paths (before calibrators/ was split by kind) ---------------------
#: Old module -> its place now; importing the old path still works, with a warning.
MOVED: dict[str, str] = {
    f"calibkit.calibrators.{module}": f"calibkit.calibrators.{kind}.{module}"
    for module, kind in (
        ("temperature", "logit"),
        ("temperature_grid", "logit"),
        ("temperature_smoothed", "logit"),
        ("bias_corrected", "logit"),
        ("linear", "logit"),
        ("linear_solver", "logit"),
        ("structured", "logit"),
        ("histogram", "logit"),
        ("isotonic", "logit"),
        ("centred_isotonic", "logit"),
        ("binary", "logit"),
        ("scaling_binning", "logit"),
        ("venn_abers", "logit"),
        ("venn_abers_module", "logit"),
        ("spline", "logit"),
        ("auto", "logit"),
        ("groupwise", "groups"),
        ("group_modules", "groups"),
        ("model_calibrator", "model"),
        ("clamping", "model"),
        ("conformal", "sets"),
        ("conformal_module", "sets"),
        ("conformal_scores", "sets"),
        ("label_shift", "priors"),
        ("label_shift_module", "priors"),
    )
}


def _new_name(old: str) -> str | None:
    """The module's name now, for an old one (``clamping``'s submodules too); None if not
    moved."""
    for before, after in MOVED.items():
        if old == before or old.startswith(before + "."):
            return after + old[len(before) :]
    return None


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old module path and gives the module at its new place (the same object,
    so classes and registries are not duplicated), with a DeprecationWarning."""

    def find_spec(self, fullname: str, path: object, target: object = None) -> ModuleSpec | None:
        if _new_name(fullname) is None:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        new = _new_name(spec.name)
        assert new is not None
        warnings.warn(
            f"{spec.name} moved to {new} (calibrators/ is split by kind); import it from "
            "there, or the public names from calibkit.calibrators",
            DeprecationWarning,
            stacklevel=2,
        )
        module = importlib.import_module(new)
        self._specs[spec.name] = module.__spec__  # the import system overwrites it
        return module

    def exec_module(self, module: ModuleType) -> None:
        # the module at its new place is already executed: give back its own spec
        spec = module.__spec__
        if spec is not None:
            module.__spec__ = self._specs.pop(spec.name, spec)

    def __init__(self) -> None:
        self._specs: dict[str, ModuleSpec | None] = {}


# first on the path: an old submodule of a moved package (``clamping.model``) must not be
# found again through the package's __path__, which would load it twice
if not any(isinstance(finder, _MovedModules) for finder in sys.meta_path):
    sys.meta_path.insert(0, _MovedModules())


def __getattr__(name: str) -> Any:
    """A public name of :data:`_LAZY`, its module imported on first use (then kept here);
    ``calibkit.calibrators.<old module>`` as an attribute (it warns, as its import does)."""
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    if f"{__name__}.{name}" in MOVED:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
