"""Post-hoc calibrators sharing one contract (see :mod:`calibkit.calibrators.base`).

Look one up by name with :func:`get_calibrator`; ``CALIBRATORS.names()`` lists them all.
"""

from __future__ import annotations

from calibkit.calibrators.auto import AutoCalibrator
from calibkit.calibrators.base import CALIBRATORS, Calibrator, get_calibrator
from calibkit.calibrators.binary import BetaCalibration, PlattScaling
from calibkit.calibrators.histogram import ClasswiseHistogramBinning, HistogramBinning
from calibkit.calibrators.isotonic import IsotonicCalibrator
from calibkit.calibrators.temperature import (
    TemperatureScaling,
    TemperatureScalingECE,
    ece_temperature_curve,
)

__all__ = [
    "CALIBRATORS",
    "AutoCalibrator",
    "BetaCalibration",
    "Calibrator",
    "ClasswiseHistogramBinning",
    "HistogramBinning",
    "IsotonicCalibrator",
    "PlattScaling",
    "TemperatureScaling",
    "TemperatureScalingECE",
    "ece_temperature_curve",
    "get_calibrator",
]
