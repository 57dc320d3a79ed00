"""Calibration metrics: pure functions, a suite with bootstrap CIs, one
mergeable accumulator (:class:`StreamingCalibration`).

Every function takes ``labels`` and exactly one of ``probs`` or ``logits`` (never guessed),
as numpy arrays or torch tensors, and returns a float64 Python float (a fraction, not a
percentage). Binned metrics follow the bin rule of :mod:`calibkit.core.binning`. Smooth ECE
and the calibration / refinement split of NLL and Brier, and Murphy's reliability /
resolution / uncertainty of the Brier score, are outside the default suite
(:data:`EXTRA_METRICS`). The selective-prediction metrics (:mod:`.selective`: failure
AUROC, AURC, E-AURC, AUGRC, risk at 80% coverage, coverage at 5% risk) judge the ranking of
the top-label confidence; they are in the suite.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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
from calibkit.metrics.calibration_tests import (
    CalibrationTest,
    calibration_tests,
    hosmer_lemeshow_test,
    ks_test,
    kuiper_test,
    spiegelhalter_test,
)
from calibkit.metrics.conformal import SetMetrics, set_metrics
from calibkit.metrics.continuous import ks_error, mmce
from calibkit.metrics.debiased import debiased_marginal_ce
from calibkit.metrics.decomposition import ScoreDecomposition, score_decomposition
from calibkit.metrics.evaluation import Evaluation, evaluate
from calibkit.metrics.groups import GroupEvaluation, evaluate_groups
from calibkit.metrics.info import (
    EXTRA_METRICS,
    FLOOR_METRICS,
    METRIC_NAMES,
    METRICS,
    MetricInfo,
    extra_names,
    floor_names,
    register_metric,
    suite_names,
)
from calibkit.metrics.kernels import BinNorm, RankStatistic, Residual, SampleMean
from calibkit.metrics.murphy import (
    BrierDecomposition,
    brier_decomposition,
    brier_reliability,
    brier_resolution,
    brier_uncertainty,
)
from calibkit.metrics.reliability_bands import (
    BinIntervals,
    CorpReliability,
    bin_intervals,
    corp_reliability,
)
from calibkit.metrics.scores import accuracy, brier, entropy, nll
from calibkit.metrics.selective import (
    RiskCoverage,
    augrc,
    aurc,
    coverage_at_risk,
    eaurc,
    failure_auroc,
    ranking_change,
    risk_at_coverage,
    risk_coverage_curve,
)
from calibkit.metrics.smooth import SmoothReliability, smooth_ece, smooth_reliability
from calibkit.metrics.suite import MetricSuite

__all__ = [
    "EXTRA_METRICS",
    "FLOOR_METRICS",
    "METRICS",
    "METRIC_NAMES",
    "BinIntervals",
    "BinNorm",
    "BootstrapInterval",
    "BrierDecomposition",
    "CalibrationTest",
    "CorpReliability",
    "Evaluation",
    "GroupEvaluation",
    "MetricInfo",
    "MetricSuite",
    "RankStatistic",
    "Residual",
    "RiskCoverage",
    "SampleMean",
    "ScoreDecomposition",
    "SetMetrics",
    "SmoothReliability",
    "StreamingCalibration",
    "accuracy",
    "aece",
    "augrc",
    "aurc",
    "bin_intervals",
    "bootstrap_ci",
    "brier",
    "brier_decomposition",
    "brier_reliability",
    "brier_resolution",
    "brier_uncertainty",
    "calibration_error",
    "calibration_tests",
    "corp_reliability",
    "coverage_at_risk",
    "debiased_ece",
    "debiased_marginal_ce",
    "eaurc",
    "ece",
    "entropy",
    "evaluate",
    "evaluate_groups",
    "extra_names",
    "failure_auroc",
    "floor_names",
    "hosmer_lemeshow_test",
    "ks_error",
    "ks_test",
    "kuiper_test",
    "mce",
    "mmce",
    "nll",
    "ranking_change",
    "register_metric",
    "reliability_stats",
    "risk_at_coverage",
    "risk_coverage_curve",
    "rmsce",
    "sce",
    "score_decomposition",
    "set_metrics",
    "smooth_ece",
    "smooth_reliability",
    "spiegelhalter_test",
    "suite_names",
]

if TYPE_CHECKING:
    from calibkit.metrics.streaming import StreamingCalibration


def __getattr__(name: str) -> Any:
    """``StreamingCalibration`` holds torch tensors: torch is imported when it is first used."""
    if name == "StreamingCalibration":
        from calibkit.metrics.streaming import StreamingCalibration

        return StreamingCalibration
    raise AttributeError(f"module 'calibkit.metrics' has no attribute {name!r}")
