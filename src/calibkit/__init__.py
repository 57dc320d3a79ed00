"""calibkit: measure and fix the confidence calibration of neural-network classifiers.

The public API, by layer (see "How the code is laid out" in docs/layout.md); every name of
the ``__all__`` of ``calibkit.metrics``, ``calibkit.calibrators``, ``calibkit.workflows``
and ``calibkit.reporting`` is here too (``tests/test_package.py`` checks it):

- core: ``as_outputs``, ``ClassifierOutputs``, ``bin_stats``, the errors;
- files: ``load_predictions``, ``save_predictions``, ``load_groups``; a language model's
  answers (lm-eval samples, chat logprobs, option or stated-confidence tables): ``load_lm``
  (``LMOutputs``);
- metrics: ``ece``, ``nll``, ``evaluate``, ``evaluate_groups``, the calibration tests
  (``calibration_tests``, ``spiegelhalter_test``, ...), the selective metrics (``aurc``,
  ``risk_at_coverage``, ...), ``set_metrics``, ``StreamingCalibration`` and ``METRICS``;
  ``simulate`` (outputs with a declared miscalibration and its exact population values);
  ``ece_interval``, ``l2_ece_interval`` (the true calibration error, with intervals that
  cover it);
- losses: ``create_loss`` and ``LOSSES``;
- fitted post-hoc objects, one contract (``PostHoc``) and one loader (``load``):
  calibrators (``TemperatureScaling`` ... ``NeuralClamping``, ``create_calibrator``),
  ``ConformalClassifier`` (prediction sets), ``PriorShiftAdapter`` (label shift),
  ``CalibratedClassifier`` (any scikit-learn classifier, calibrated);
- models and data: ``create_model``, ``load_dataset``;
- training: ``TrainConfig``, ``train``;
- workflows: ``compare``, ``conformal_sets``, ``label_shift``, ``run_shift`` (with
  ``ShiftSettings``) and ``shift_table``, ``run_demo``;
- reporting: ``reliability_figure``, ``ReliabilityDisplay``, ``write_compare_report``, the
  document model (``Document``, ``Section``, ``Table``, ...);
- studies: ``StudyConfig``, ``load_study_config``, ``run_study``.

``import calibkit`` is cheap: each name imports its module on first use, so a program that
only computes metrics never loads matplotlib, Pillow or the dataset loaders.

>>> import calibkit as ck
>>> round(ck.ece([0, 1], probs=[[0.9, 0.1], [0.2, 0.8]]), 6)
0.15
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from calibkit.core import catalog as _catalog
from calibkit.core.lazy import lazy_getattr as _lazy_getattr
from calibkit.core.lazy import type_checking_imports as _type_checking_imports
from calibkit.core.version import __version__

#: Public name -> the module that defines it: the ``TYPE_CHECKING`` imports at the end (what
#: type checkers read, written once), and every catalogued calibrator's class
#: (:func:`calibkit.core.catalog.exported`).
_EXPORTS: dict[str, str] = {
    **_type_checking_imports(__file__),
    **dict.fromkeys(_catalog.exported(), "calibkit.calibrators"),
}

__all__ = sorted(_EXPORTS)
#: Each name imports the module that defines it on first use (PEP 562).
__getattr__ = _lazy_getattr(__name__, _EXPORTS)


def __dir__() -> list[str]:
    """The public names only (not the helpers of this module, nor submodules loaded so far)."""
    return sorted({*__all__, "__version__"})


# The public names (but the catalogued calibrators), for type checkers and IDEs, and for
# _EXPORTS: a new public name is one import here.
if TYPE_CHECKING:
    from calibkit.calibrators import (
        ABLATIONS,
        APS,
        BBSE,
        CALIBRATORS,
        EM,
        LAC,
        RAPS,
        SAPS,
        CalibratedModel,
        Calibrator,
        CalibratorSpec,
        NeuralClamping,
        PostHoc,
        SGDSettings,
        adapt_priors,
        create_calibrator,
        ece_grid_minimum,
        ece_temperature_curve,
        estimate_priors_bbse,
        estimate_priors_em,
        export_onnx,
        export_program,
        load,
    )
    from calibkit.calibrators.sklearn_wrapper import (
        CalibratedClassifier,
    )
    from calibkit.core.binning import (
        BinStats,
        bin_stats,
    )
    from calibkit.core.errors import (
        BoundWarning,
        CalibkitError,
        CalibkitWarning,
        InputError,
        NotFittedError,
        UnknownNameError,
    )
    from calibkit.core.options import Binning, Resampling
    from calibkit.core.outputs import (
        ClassifierOutputs,
        as_outputs,
    )
    from calibkit.core.splits import split_outputs
    from calibkit.data import (
        DATASETS,
        load_dataset,
    )
    from calibkit.io.lm_outputs import LMOutputs
    from calibkit.io.predictions import (
        load_groups,
        load_lm,
        load_predictions,
        save_predictions,
    )
    from calibkit.losses import (
        LOSSES,
        create_loss,
    )
    from calibkit.metrics import (
        EXTRA_METRICS,
        FLOOR_METRICS,
        METRIC_NAMES,
        METRICS,
        BinIntervals,
        BinNorm,
        BootstrapInterval,
        BrierDecomposition,
        CalibrationTest,
        CorpReliability,
        Evaluation,
        GroupEvaluation,
        MetricInfo,
        MetricSuite,
        RankStatistic,
        Residual,
        RiskCoverage,
        SampleMean,
        ScoreDecomposition,
        SetMetrics,
        SmoothReliability,
        StreamingCalibration,
        accuracy,
        aece,
        augrc,
        aurc,
        bin_intervals,
        bootstrap_ci,
        brier,
        brier_decomposition,
        brier_reliability,
        brier_resolution,
        brier_uncertainty,
        calibration_error,
        calibration_tests,
        corp_reliability,
        coverage_at_risk,
        debiased_ece,
        debiased_marginal_ce,
        eaurc,
        ece,
        ece_sweep,
        entropy,
        evaluate,
        evaluate_groups,
        extra_names,
        failure_auroc,
        floor_names,
        hosmer_lemeshow_test,
        ks_error,
        ks_test,
        kuiper_test,
        mce,
        mmce,
        nll,
        ranking_change,
        register_metric,
        reliability_stats,
        risk_at_coverage,
        risk_coverage_curve,
        rmsce,
        sce,
        score_decomposition,
        set_metrics,
        smooth_ece,
        smooth_reliability,
        spiegelhalter_test,
        suite_names,
    )
    from calibkit.metrics.intervals import CalibrationInterval, ece_interval, l2_ece_interval
    from calibkit.metrics.simulated import Simulation, SimulationTruth, simulate
    from calibkit.models import (
        MODELS,
        create_model,
    )
    from calibkit.reporting.compare_report import (
        write_compare_report,
    )
    from calibkit.reporting.curves import ece_temperature_figure, risk_coverage_figure
    from calibkit.reporting.display import (
        ReliabilityDisplay,
    )
    from calibkit.reporting.document import (
        Document,
        Figure,
        Gallery,
        Paragraph,
        Section,
        Table,
        Verdict,
    )
    from calibkit.reporting.evaluate_report import (
        evaluation_report,
    )
    from calibkit.reporting.figure_style import save_figure
    from calibkit.reporting.figures import (
        reliability_figure,
        reliability_grid,
        smooth_reliability_figure,
    )
    from calibkit.reporting.render import (
        to_html,
        to_markdown,
    )
    from calibkit.reporting.shift_report import (
        shift_report,
        write_shift_report,
    )
    from calibkit.reporting.writer import (
        Report,
        print_report,
        write_report,
    )
    from calibkit.study import (
        StudyConfig,
        load_study_config,
        run_study,
    )
    from calibkit.training import (
        TrainConfig,
        train,
    )
    from calibkit.workflows.compare import compare
    from calibkit.workflows.comparison import (
        Comparison,
        MethodResult,
    )
    from calibkit.workflows.conformal import (
        SetsResult,
        conformal_sets,
    )
    from calibkit.workflows.demo import (
        DemoResult,
        DemoSettings,
        run_demo,
    )
    from calibkit.workflows.evaluate import (
        EvaluationRun,
        evaluate_outputs,
    )
    from calibkit.workflows.label_shift import (
        LabelShiftResult,
        label_shift,
        resample_to_priors,
        simulate_label_shift,
    )
    from calibkit.workflows.recommendation import Recommendation
    from calibkit.workflows.shift import (
        ShiftRow,
        severity_summary,
        shift_table,
    )
    from calibkit.workflows.shift_study import (
        ShiftResult,
        ShiftSettings,
        run_shift,
    )
