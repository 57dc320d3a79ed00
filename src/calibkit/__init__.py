"""calibkit: measure and fix the confidence calibration of neural-network classifiers.

The public API, by layer (see "How the code is laid out" in the README):

- core: ``as_outputs``, ``ClassifierOutputs``, ``bin_stats``, the errors;
- files: ``load_predictions``, ``save_predictions``;
- metrics: ``ece``, ``nll``, ``evaluate``, ... and ``METRICS``;
- losses: ``create_loss`` and ``LOSSES``;
- calibrators: ``TemperatureScaling`` ... ``NeuralClamping``, ``create_calibrator``,
  ``CalibratedClassifier`` (any scikit-learn classifier, calibrated);
- models and data: ``create_model``, ``load_dataset``;
- training: ``TrainConfig``, ``train``;
- workflows: ``split_outputs``, ``compare``;
- reporting: ``reliability_figure``, ``ReliabilityDisplay``, ``write_compare_report``;
- studies: ``StudyConfig``, ``load_study_config``, ``run_study``.

``import calibkit`` is cheap: each name imports its module on first use, so a program that
only computes metrics never loads matplotlib, Pillow or the dataset loaders.

>>> import calibkit as ck
>>> round(ck.ece([0, 1], probs=[[0.9, 0.1], [0.2, 0.8]]), 6)
0.15
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from calibkit.core.version import __version__

#: Each module of the public API -> the names it gives the package (loaded on first access).
#: A new public name goes here and in the ``TYPE_CHECKING`` imports at the end (tested equal).
_MODULES: dict[str, str] = {
    "calibkit.core.errors": "CalibkitError InputError NotFittedError UnknownNameError",
    "calibkit.core.outputs": "ClassifierOutputs as_outputs",
    "calibkit.core.binning": "BinStats bin_stats",
    "calibkit.io.predictions": "load_predictions save_predictions",
    "calibkit.metrics": (
        "METRICS METRIC_NAMES EXTRA_METRICS BootstrapInterval Evaluation "
        "ScoreDecomposition SmoothReliability StreamingCalibration accuracy aece bootstrap_ci "
        "brier calibration_error debiased_ece ece entropy evaluate ks_error mce mmce nll "
        "reliability_stats rmsce sce score_decomposition smooth_ece smooth_reliability"
        " debiased_marginal_ce"
    ),
    "calibkit.losses": "LOSSES create_loss",
    "calibkit.calibrators": (
        "CALIBRATORS AutoCalibrator BetaCalibration CalibratedModel Calibrator "
        "ClasswiseHistogramBinning DirichletCalibration HistogramBinning IsotonicCalibrator "
        "MatrixScaling MatrixScalingODIR NeuralClamping PlattScaling TemperatureScaling "
        "TemperatureScalingECE VectorScaling ece_grid_minimum ece_temperature_curve "
        "create_calibrator get_calibrator "
        "CentredIsotonicCalibrator ScalingBinning SplineCalibration VennAbers "
        "ConformalClassifier PriorShiftAdapter PostHoc CalibratorSpec load"
    ),
    "calibkit.calibrators.sklearn_wrapper": "CalibratedClassifier",
    "calibkit.calibrators.structured": (
        "StructuredMatrixScaling StructuredMatrixScalingCV StructuredVectorScaling"
    ),
    "calibkit.calibrators.temperature_smoothed": "SmoothedTemperatureScaling",
    "calibkit.models": "MODELS create_model",
    "calibkit.data": "DATASETS load_dataset",
    "calibkit.training": "TrainConfig train",
    "calibkit.workflows.compare": "Comparison MethodResult compare split_outputs",
    "calibkit.reporting.figures": (
        "reliability_figure reliability_grid ece_temperature_figure save_figure"
        " smooth_reliability_figure"
    ),
    "calibkit.reporting.compare_report": "write_compare_report",
    "calibkit.reporting.display": "ReliabilityDisplay",
    "calibkit.study": "StudyConfig load_study_config run_study",
}
#: Public name -> the module that defines it.
_EXPORTS: dict[str, str] = {name: mod for mod, names in _MODULES.items() for name in names.split()}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """Import the module that defines ``name`` on first use (PEP 562)."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'calibkit' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names only (not the helpers of this module, nor submodules loaded so far)."""
    return sorted({*__all__, "__version__"})


# What the names are, for type checkers and IDEs: the same names from the same modules as
# _MODULES (tests/test_package.py checks that the two lists agree).
if TYPE_CHECKING:
    from calibkit.calibrators import (
        CALIBRATORS,
        AutoCalibrator,
        BetaCalibration,
        CalibratedModel,
        Calibrator,
        CalibratorSpec,
        CentredIsotonicCalibrator,
        ClasswiseHistogramBinning,
        ConformalClassifier,
        DirichletCalibration,
        HistogramBinning,
        IsotonicCalibrator,
        MatrixScaling,
        MatrixScalingODIR,
        NeuralClamping,
        PlattScaling,
        PostHoc,
        PriorShiftAdapter,
        ScalingBinning,
        SplineCalibration,
        TemperatureScaling,
        TemperatureScalingECE,
        VectorScaling,
        VennAbers,
        create_calibrator,
        ece_grid_minimum,
        ece_temperature_curve,
        get_calibrator,
        load,
    )
    from calibkit.calibrators.sklearn_wrapper import CalibratedClassifier
    from calibkit.calibrators.structured import (
        StructuredMatrixScaling,
        StructuredMatrixScalingCV,
        StructuredVectorScaling,
    )
    from calibkit.calibrators.temperature_smoothed import SmoothedTemperatureScaling
    from calibkit.core.binning import BinStats, bin_stats
    from calibkit.core.errors import CalibkitError, InputError, NotFittedError, UnknownNameError
    from calibkit.core.outputs import ClassifierOutputs, as_outputs
    from calibkit.data import DATASETS, load_dataset
    from calibkit.io.predictions import load_predictions, save_predictions
    from calibkit.losses import LOSSES, create_loss
    from calibkit.metrics import (
        EXTRA_METRICS,
        METRIC_NAMES,
        METRICS,
        BootstrapInterval,
        Evaluation,
        ScoreDecomposition,
        SmoothReliability,
        StreamingCalibration,
        accuracy,
        aece,
        bootstrap_ci,
        brier,
        calibration_error,
        debiased_ece,
        debiased_marginal_ce,
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
        score_decomposition,
        smooth_ece,
        smooth_reliability,
    )
    from calibkit.models import MODELS, create_model
    from calibkit.reporting.compare_report import write_compare_report
    from calibkit.reporting.display import ReliabilityDisplay
    from calibkit.reporting.figures import (
        ece_temperature_figure,
        reliability_figure,
        reliability_grid,
        save_figure,
        smooth_reliability_figure,
    )
    from calibkit.study import StudyConfig, load_study_config, run_study
    from calibkit.training import TrainConfig, train
    from calibkit.workflows.compare import Comparison, MethodResult, compare, split_outputs
