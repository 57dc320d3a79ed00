"""Post-hoc calibrators sharing one contract (see :mod:`calibkit.calibrators.base`).

Look one up by name with :func:`get_calibrator`; ``CALIBRATORS.names()`` lists them all.
"""

from __future__ import annotations

from calibkit.calibrators.auto import AutoCalibrator

# isort: off  (import order is registration order: the order of methods in reports)
from calibkit.calibrators.base import CALIBRATORS, Calibrator, get_calibrator
from calibkit.calibrators.binary import BetaCalibration, PlattScaling
from calibkit.calibrators.histogram import ClasswiseHistogramBinning, HistogramBinning
from calibkit.calibrators.isotonic import IsotonicCalibrator
from calibkit.calibrators.linear import (
    DirichletCalibration,
    MatrixScaling,
    MatrixScalingODIR,
    VectorScaling,
)
from calibkit.calibrators.temperature import TemperatureScaling
from calibkit.calibrators.temperature_grid import TemperatureScalingECE, ece_temperature_curve

# isort: on

__all__ = [
    "CALIBRATORS",
    "AutoCalibrator",
    "BetaCalibration",
    "Calibrator",
    "ClasswiseHistogramBinning",
    "DirichletCalibration",
    "HistogramBinning",
    "IsotonicCalibrator",
    "MatrixScaling",
    "MatrixScalingODIR",
    "PlattScaling",
    "TemperatureScaling",
    "TemperatureScalingECE",
    "VectorScaling",
    "ece_temperature_curve",
    "get_calibrator",
]
