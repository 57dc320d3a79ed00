"""calibkit: measure and fix the confidence calibration of neural-network classifiers."""

from __future__ import annotations

from calibkit.binning import BinStats, bin_stats
from calibkit.calibrators import (
    CALIBRATORS,
    Calibrator,
    TemperatureScaling,
    TemperatureScalingECE,
    ece_temperature_curve,
    get_calibrator,
)
from calibkit.errors import CalibkitError, InputError, NotFittedError, UnknownNameError
from calibkit.metrics import (
    METRIC_NAMES,
    METRICS,
    BootstrapInterval,
    CalibrationMetrics,
    Evaluation,
    accuracy,
    aece,
    bootstrap_ci,
    brier,
    calibration_error,
    debiased_ece,
    ece,
    entropy,
    evaluate,
    ks_error,
    mce,
    mmce,
    nll,
    reliability_stats,
    rmsce,
    sce,
)
from calibkit.outputs import ClassifierOutputs, as_outputs

__version__ = "0.1.0"

__all__ = [
    "CALIBRATORS",
    "METRICS",
    "METRIC_NAMES",
    "BinStats",
    "BootstrapInterval",
    "CalibkitError",
    "CalibrationMetrics",
    "Calibrator",
    "ClassifierOutputs",
    "Evaluation",
    "InputError",
    "NotFittedError",
    "TemperatureScaling",
    "TemperatureScalingECE",
    "UnknownNameError",
    "accuracy",
    "aece",
    "as_outputs",
    "bin_stats",
    "bootstrap_ci",
    "brier",
    "calibration_error",
    "debiased_ece",
    "ece",
    "ece_temperature_curve",
    "entropy",
    "evaluate",
    "get_calibrator",
    "ks_error",
    "mce",
    "mmce",
    "nll",
    "reliability_stats",
    "rmsce",
    "sce",
]
