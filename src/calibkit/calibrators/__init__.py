"""Every fitted post-hoc object, on one contract (:class:`PostHoc`,
:mod:`calibkit.calibrators.fitted`), split by kind:

- ``base.py``, ``fitted.py``, ``persistence.py``, ``estimator.py``: the contract, the
  registry :data:`CALIBRATORS`, the one JSON document and :func:`load`; ``modules.py`` and
  ``calibrated_model.py``: the torch modules every kind exports to; ``export.py``: those
  modules as a ``torch.export`` program or an ONNX file that take any number of rows;
  ``catalogue.py``: every registered entry declared (name, kind, summary) without importing
  its module, so that listing them or fitting temperature scaling needs no torch;
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

import importlib
from typing import TYPE_CHECKING, Any

# The contract and the registry are imported at once (numpy only); every other public name
# loads its module on first use (PEP 562, ``__getattr__`` below), so that reading the
# registry's metadata (``calibkit methods``) or fitting temperature scaling imports no torch.
# The order of the methods in reports is that of ``catalogue.ENTRIES`` (``CALIBRATORS.names()``).
from calibkit.calibrators.base import CALIBRATORS, Calibrator, create_calibrator
from calibkit.calibrators.fitted import CalibratorSpec, PostHoc, load

if TYPE_CHECKING:
    from calibkit.calibrators.calibrated_model import CalibratedModel
    from calibkit.calibrators.export import export_onnx, export_program
    from calibkit.calibrators.groups.groupwise import (
        GroupwiseTemperatureScaling,
        Multicalibration,
    )
    from calibkit.calibrators.logit.auto import AutoCalibrator
    from calibkit.calibrators.logit.bias_corrected import BiasCorrectedTemperatureScaling
    from calibkit.calibrators.logit.binary import BetaCalibration, PlattScaling
    from calibkit.calibrators.logit.centred_isotonic import CentredIsotonicCalibrator
    from calibkit.calibrators.logit.histogram import ClasswiseHistogramBinning, HistogramBinning
    from calibkit.calibrators.logit.isotonic import IsotonicCalibrator
    from calibkit.calibrators.logit.linear import (
        DirichletCalibration,
        MatrixScaling,
        MatrixScalingODIR,
        VectorScaling,
    )
    from calibkit.calibrators.logit.scaling_binning import ScalingBinning
    from calibkit.calibrators.logit.spline import SplineCalibration
    from calibkit.calibrators.logit.structured import (
        StructuredMatrixScaling,
        StructuredMatrixScalingCV,
        StructuredVectorScaling,
    )
    from calibkit.calibrators.logit.temperature import TemperatureScaling
    from calibkit.calibrators.logit.temperature_grid import (
        TemperatureScalingECE,
        ece_grid_minimum,
        ece_temperature_curve,
    )
    from calibkit.calibrators.logit.temperature_smoothed import SmoothedTemperatureScaling
    from calibkit.calibrators.logit.venn_abers import VennAbers
    from calibkit.calibrators.model.clamping import ABLATIONS, NeuralClamping, SGDSettings
    from calibkit.calibrators.priors.estimators import (
        adapt_priors,
        estimate_priors_bbse,
        estimate_priors_em,
    )
    from calibkit.calibrators.priors.label_shift import PriorShiftAdapter
    from calibkit.calibrators.sets.conformal import ConformalClassifier

#: Each public name loaded on first use -> its module (under calibkit.calibrators).
_LAZY: dict[str, str] = {
    "TemperatureScaling": "logit.temperature",
    "TemperatureScalingECE": "logit.temperature_grid",
    "ece_grid_minimum": "logit.temperature_grid",
    "ece_temperature_curve": "logit.temperature_grid",
    "VectorScaling": "logit.linear",
    "MatrixScaling": "logit.linear",
    "MatrixScalingODIR": "logit.linear",
    "DirichletCalibration": "logit.linear",
    "SmoothedTemperatureScaling": "logit.temperature_smoothed",
    "BiasCorrectedTemperatureScaling": "logit.bias_corrected",
    "StructuredVectorScaling": "logit.structured",
    "StructuredMatrixScaling": "logit.structured",
    "StructuredMatrixScalingCV": "logit.structured",
    "HistogramBinning": "logit.histogram",
    "ClasswiseHistogramBinning": "logit.histogram",
    "IsotonicCalibrator": "logit.isotonic",
    "PlattScaling": "logit.binary",
    "BetaCalibration": "logit.binary",
    "ScalingBinning": "logit.scaling_binning",
    "VennAbers": "logit.venn_abers",
    "CentredIsotonicCalibrator": "logit.centred_isotonic",
    "SplineCalibration": "logit.spline",
    "AutoCalibrator": "logit.auto",
    "GroupwiseTemperatureScaling": "groups.groupwise",
    "Multicalibration": "groups.groupwise",
    "ConformalClassifier": "sets.conformal",
    "PriorShiftAdapter": "priors.label_shift",
    "adapt_priors": "priors.estimators",
    "estimate_priors_bbse": "priors.estimators",
    "estimate_priors_em": "priors.estimators",
    "CalibratedModel": "calibrated_model",
    "export_onnx": "export",
    "export_program": "export",
    "ABLATIONS": "model.clamping",
    "NeuralClamping": "model.clamping",
    "SGDSettings": "model.clamping",
}

__all__ = [
    "ABLATIONS",
    "CALIBRATORS",
    "AutoCalibrator",
    "BetaCalibration",
    "BiasCorrectedTemperatureScaling",
    "CalibratedModel",
    "Calibrator",
    "CalibratorSpec",
    "CentredIsotonicCalibrator",
    "ClasswiseHistogramBinning",
    "ConformalClassifier",
    "DirichletCalibration",
    "GroupwiseTemperatureScaling",
    "HistogramBinning",
    "IsotonicCalibrator",
    "MatrixScaling",
    "MatrixScalingODIR",
    "Multicalibration",
    "NeuralClamping",
    "PlattScaling",
    "PostHoc",
    "PriorShiftAdapter",
    "SGDSettings",
    "ScalingBinning",
    "SmoothedTemperatureScaling",
    "SplineCalibration",
    "StructuredMatrixScaling",
    "StructuredMatrixScalingCV",
    "StructuredVectorScaling",
    "TemperatureScaling",
    "TemperatureScalingECE",
    "VectorScaling",
    "VennAbers",
    "adapt_priors",
    "create_calibrator",
    "ece_grid_minimum",
    "ece_temperature_curve",
    "estimate_priors_bbse",
    "estimate_priors_em",
    "export_onnx",
    "export_program",
    "load",
]


def __getattr__(name: str) -> Any:
    """A public name of :data:`_LAZY`, its module imported on first use (then kept here)."""
    if name in _LAZY:
        value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
