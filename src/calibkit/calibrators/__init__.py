"""Post-hoc calibrators sharing one contract (see :mod:`calibkit.calibrators.base`).

Make one by name with :func:`create_calibrator` (``get_calibrator``: a deprecated
alias); ``CALIBRATORS.names()`` lists them all.
:class:`NeuralClamping` (input perturbation + temperature) wraps a model and takes inputs,
not logits: its entries (``nc_ce``, ``nc_fl``, ``nc_fast``, ``ts_focal``) are in the same
registry, flagged ``needs_model`` (:class:`~calibkit.calibrators.model_calibrator.ModelCalibrator`),
and the consumers of logit calibrators leave them out.
Every fitted calibrator's ``to_module()`` is its map as a torch module
(:mod:`calibkit.calibrators.modules`); :class:`CalibratedModel` puts a classifier and
its calibration in one module.
"""

from __future__ import annotations

# Import order is registration order, the order of the methods in reports unless an entry
# gives its ``order`` (``CALIBRATORS.names()``; see calibkit.core.registry).
# isort: off
from calibkit.calibrators.fitted import CalibratorSpec, PostHoc, load
from calibkit.calibrators.base import CALIBRATORS, Calibrator, create_calibrator
from calibkit.calibrators.base import get_calibrator as get_calibrator  # deprecated: not in __all__
from calibkit.calibrators.temperature import TemperatureScaling
from calibkit.calibrators.temperature_grid import (
    TemperatureScalingECE,
    ece_grid_minimum,
    ece_temperature_curve,
)
from calibkit.calibrators.linear import (
    VectorScaling,
    MatrixScaling,
    MatrixScalingODIR,
    DirichletCalibration,
)
from calibkit.calibrators.temperature_smoothed import SmoothedTemperatureScaling
from calibkit.calibrators.bias_corrected import BiasCorrectedTemperatureScaling
from calibkit.calibrators.structured import (
    StructuredVectorScaling,
    StructuredMatrixScaling,
    StructuredMatrixScalingCV,
)
from calibkit.calibrators.histogram import HistogramBinning, ClasswiseHistogramBinning
from calibkit.calibrators.isotonic import IsotonicCalibrator
from calibkit.calibrators.binary import PlattScaling, BetaCalibration
from calibkit.calibrators.scaling_binning import ScalingBinning
from calibkit.calibrators.venn_abers import VennAbers
from calibkit.calibrators.centred_isotonic import CentredIsotonicCalibrator
from calibkit.calibrators.spline import SplineCalibration
from calibkit.calibrators.auto import AutoCalibrator
from calibkit.calibrators.groupwise import GroupwiseTemperatureScaling, Multicalibration
from calibkit.calibrators.conformal import ConformalClassifier
from calibkit.calibrators.label_shift import (
    PriorShiftAdapter,
    adapt_priors,
    estimate_priors_bbse,
    estimate_priors_em,
)

# isort: on
from calibkit.calibrators.calibrated_model import CalibratedModel
from calibkit.calibrators.clamping import ABLATIONS, NeuralClamping, SGDSettings

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
    "load",
]
