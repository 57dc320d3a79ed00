"""Calibration metrics: pure functions, a suite with bootstrap CIs, accumulators.

Every function takes ``labels`` and exactly one of ``probs`` or ``logits`` (never guessed),
as numpy arrays or torch tensors, and returns a float64 Python float (a fraction, not a
percentage). Binned metrics follow the bin rule of :mod:`calibkit.core.binning`.
"""

from __future__ import annotations

from calibkit.metrics.accumulator import CalibrationMetrics
from calibkit.metrics.binned import (
    aece,
    calibration_error,
    debiased_ece,
    ece,
    mce,
    reliability_stats,
    rmsce,
    sce,
)
from calibkit.metrics.bootstrap import BootstrapInterval, bootstrap_ci
from calibkit.metrics.continuous import ks_error, mmce
from calibkit.metrics.info import FLOOR_METRICS, METRIC_NAMES, METRICS, MetricInfo
from calibkit.metrics.scores import accuracy, brier, entropy, nll
from calibkit.metrics.streaming import StreamingCalibration
from calibkit.metrics.suite import Evaluation, MetricSuite, evaluate

__all__ = [
    "FLOOR_METRICS",
    "METRICS",
    "METRIC_NAMES",
    "BootstrapInterval",
    "CalibrationMetrics",
    "Evaluation",
    "MetricInfo",
    "MetricSuite",
    "StreamingCalibration",
    "accuracy",
    "aece",
    "bootstrap_ci",
    "brier",
    "calibration_error",
    "debiased_ece",
    "ece",
    "entropy",
    "evaluate",
    "ks_error",
    "mce",
    "mmce",
    "nll",
    "reliability_stats",
    "rmsce",
    "sce",
]
