"""calibkit: measure and fix the confidence calibration of neural-network classifiers.

The public API: metrics (``ece``, ``evaluate``, ...), calibrators (``TemperatureScaling``,
``get_calibrator``, ...), prediction files (``load_predictions``), the compare workflow
(``split_outputs``, ``compare``) and, imported on first use because they load matplotlib,
the figures and reports (``reliability_figure``, ``write_compare_report``), and the training
side: datasets, models, losses, the trainer and studies (``load_dataset``, ``create_model``,
``create_loss``, ``train``, ``run_study``).
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

from calibkit.binning import BinStats, bin_stats
from calibkit.calibrators import (
    CALIBRATORS,
    AutoCalibrator,
    BetaCalibration,
    CalibratedModel,
    Calibrator,
    ClasswiseHistogramBinning,
    DirichletCalibration,
    HistogramBinning,
    IsotonicCalibrator,
    MatrixScaling,
    MatrixScalingODIR,
    NeuralClamping,
    PlattScaling,
    TemperatureScaling,
    TemperatureScalingECE,
    VectorScaling,
    ece_grid_minimum,
    ece_temperature_curve,
    get_calibrator,
)
from calibkit.compare import Comparison, MethodResult, compare, split_outputs
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
from calibkit.predfile import load_predictions, save_predictions

_LAZY = {
    "reliability_figure": "calibkit.plots",
    "reliability_grid": "calibkit.plots",
    "ece_temperature_figure": "calibkit.plots",
    "save_figure": "calibkit.plots",
    "write_compare_report": "calibkit.report",
    "DATASETS": "calibkit.data",
    "load_dataset": "calibkit.data",
    "MODELS": "calibkit.models",
    "create_model": "calibkit.models",
    "LOSSES": "calibkit.losses",
    "build_loss": "calibkit.losses",
    "create_loss": "calibkit.losses",
    "TrainConfig": "calibkit.training",
    "train": "calibkit.training",
    "StudyConfig": "calibkit.study",
    "load_study_config": "calibkit.study",
    "run_study": "calibkit.study",
}


def __getattr__(name: str) -> Any:
    """Import the matplotlib-backed parts on first use."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'calibkit' has no attribute {name!r}")


__all__ = [
    "CALIBRATORS",
    "DATASETS",
    "LOSSES",
    "METRICS",
    "METRIC_NAMES",
    "MODELS",
    "AutoCalibrator",
    "BetaCalibration",
    "BinStats",
    "BootstrapInterval",
    "CalibkitError",
    "CalibratedModel",
    "CalibrationMetrics",
    "Calibrator",
    "ClassifierOutputs",
    "ClasswiseHistogramBinning",
    "Comparison",
    "DirichletCalibration",
    "Evaluation",
    "HistogramBinning",
    "InputError",
    "IsotonicCalibrator",
    "MatrixScaling",
    "MatrixScalingODIR",
    "MethodResult",
    "NeuralClamping",
    "NotFittedError",
    "PlattScaling",
    "StudyConfig",
    "TemperatureScaling",
    "TemperatureScalingECE",
    "TrainConfig",
    "UnknownNameError",
    "VectorScaling",
    "accuracy",
    "aece",
    "as_outputs",
    "bin_stats",
    "bootstrap_ci",
    "brier",
    "build_loss",
    "calibration_error",
    "compare",
    "create_loss",
    "create_model",
    "debiased_ece",
    "ece",
    "ece_grid_minimum",
    "ece_temperature_curve",
    "ece_temperature_figure",
    "entropy",
    "evaluate",
    "get_calibrator",
    "ks_error",
    "load_dataset",
    "load_predictions",
    "load_study_config",
    "mce",
    "mmce",
    "nll",
    "reliability_figure",
    "reliability_grid",
    "reliability_stats",
    "rmsce",
    "run_study",
    "save_figure",
    "save_predictions",
    "sce",
    "split_outputs",
    "train",
    "write_compare_report",
]
