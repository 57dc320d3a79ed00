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
entries of a kind.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

# The contract and the registry are imported at once (numpy only); every other public name
# loads its module on first use (PEP 562, ``__getattr__`` below), so that reading the
# registry's metadata (``calibkit methods``) or fitting temperature scaling imports no torch.
# The order of the methods in reports is that of ``core.catalog.ENTRIES`` (``CALIBRATORS.names()``).
from calibkit.calibrators.base import CALIBRATORS as CALIBRATORS
from calibkit.calibrators.base import Calibrator as Calibrator
from calibkit.calibrators.base import create_calibrator as create_calibrator
from calibkit.calibrators.fitted import CalibratorSpec as CalibratorSpec
from calibkit.calibrators.fitted import PostHoc as PostHoc
from calibkit.calibrators.fitted import load as load
from calibkit.core import catalog as _catalog
from calibkit.core.lazy import lazy_getattr as _lazy_getattr
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
    from calibkit.calibrators.priors.estimators import BBSE as BBSE
    from calibkit.calibrators.priors.estimators import EM as EM
    from calibkit.calibrators.priors.estimators import adapt_priors as adapt_priors
    from calibkit.calibrators.priors.estimators import (
        estimate_priors_bbse as estimate_priors_bbse,
    )
    from calibkit.calibrators.priors.estimators import estimate_priors_em as estimate_priors_em
    from calibkit.calibrators.sets.conformal_scores import APS as APS
    from calibkit.calibrators.sets.conformal_scores import LAC as LAC
    from calibkit.calibrators.sets.conformal_scores import RAPS as RAPS
    from calibkit.calibrators.sets.conformal_scores import SAPS as SAPS

#: Each public name loaded on first use -> its module: those of the ``TYPE_CHECKING`` imports
#: above, and the class of every entry of :mod:`calibkit.core.catalog` (but the Neural
#: Clamping variants; type checkers see those through ``__getattr__``).
_LAZY: dict[str, str] = {**_type_checking_imports(__file__), **_catalog.exported()}
#: The names imported at once (the contract and the registry), then the lazy ones.
_EAGER = ("CALIBRATORS", "Calibrator", "CalibratorSpec", "PostHoc", "create_calibrator", "load")

__all__ = sorted([*_EAGER, *_LAZY])
#: A public name of :data:`_LAZY`, its module imported on first use (then kept here).
__getattr__ = _lazy_getattr(__name__, _LAZY)


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
