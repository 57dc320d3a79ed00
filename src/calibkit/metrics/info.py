"""What calibkit knows about each metric, in one place: one :class:`MetricInfo` per metric.

:data:`METRICS` holds them in report order. Everything else (the suite's metric names and
noise floors, table labels and formatting, a study's allowed report metrics) is read from
here. Metrics outside the suite (``in_suite=False``: smooth ECE and the calibration /
refinement parts of NLL and Brier) are described here too, so tables show them, but
:func:`calibkit.metrics.evaluate` computes only :data:`METRIC_NAMES`; ``calibkit evaluate
--extra`` adds them.

>>> METRICS.get("ece").label, METRICS.get("ece").better, METRICS.get("ece").has_floor
('ECE', 'min', True)
>>> METRICS.get("accuracy")([0, 1], probs=[[0.8, 0.2], [0.3, 0.7]])
1.0
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from calibkit.core.registry import Registry
from calibkit.metrics.binned import aece, debiased_ece, ece, mce, rmsce, sce
from calibkit.metrics.continuous import ks_error, mmce
from calibkit.metrics.decomposition import decomposition_part
from calibkit.metrics.murphy import murphy_part
from calibkit.metrics.scores import accuracy, brier, entropy, nll
from calibkit.metrics.smooth import smooth_ece


@dataclass(frozen=True)
class MetricInfo:
    """One metric: its name, how it is shown, which way is better, and its function.

    ``kind`` is ``"score"`` (accuracy, the proper scores, entropy) or ``"error"`` (a
    calibration error); ``better`` is ``"min"`` (lower is better), ``"max"`` or ``None``
    (not ranked); ``percent``: shown in percent (a fraction otherwise); ``has_floor``: the
    suite estimates its noise floor; ``in_suite``: computed by the metric suite (and so
    by ``evaluate``) by default. Calling a ``MetricInfo`` calls its function.
    """

    name: str
    label: str
    kind: Literal["score", "error"]
    percent: bool
    better: Literal["min", "max"] | None
    has_floor: bool
    function: Callable[..., float]
    in_suite: bool = True

    def __call__(self, *args: Any, **kwargs: Any) -> float:
        return self.function(*args, **kwargs)


#: The parts of :func:`~calibkit.metrics.decomposition.score_decomposition`, as metrics.
_NLL_CAL = decomposition_part("nll", "calibration")
_NLL_REF = decomposition_part("nll", "refinement")
_BS_CAL = decomposition_part("brier", "calibration")
_BS_REF = decomposition_part("brier", "refinement")
#: Murphy's binned parts of the Brier score (:mod:`~calibkit.metrics.murphy`).
_BS_REL = murphy_part("reliability")
_BS_RES = murphy_part("resolution")
_BS_UNC = murphy_part("uncertainty")

METRICS: Registry[MetricInfo] = Registry("metric")
for _info in (  # name, label, kind, percent, better, has_floor, function[, in_suite]
    MetricInfo("accuracy", "Accuracy", "score", True, "max", False, accuracy),
    MetricInfo("nll", "NLL", "score", False, "min", False, nll),
    MetricInfo("brier", "Brier", "score", False, "min", False, brier),
    MetricInfo("entropy", "Entropy", "score", False, None, False, entropy),
    MetricInfo("ece", "ECE", "error", True, "min", True, ece),
    MetricInfo("aece", "Adaptive ECE", "error", True, "min", True, aece),
    MetricInfo("mce", "MCE", "error", True, "min", False, mce),
    MetricInfo("rmsce", "RMSCE", "error", True, "min", False, rmsce),
    MetricInfo("ece_debiased", "Debiased ECE", "error", True, "min", False, debiased_ece),
    MetricInfo("sce", "SCE", "error", True, "min", False, sce),
    MetricInfo("ks", "KS", "error", True, "min", False, ks_error),
    MetricInfo("mmce", "MMCE", "error", True, "min", False, mmce),
    MetricInfo("smooth_ece", "Smooth ECE", "error", True, "min", False, smooth_ece, False),
    MetricInfo("nll_calibration", "NLL calibration", "score", False, "min", False, _NLL_CAL, False),
    MetricInfo("nll_refinement", "NLL refinement", "score", False, "min", False, _NLL_REF, False),
    MetricInfo(
        "brier_calibration", "Brier calibration", "score", False, "min", False, _BS_CAL, False
    ),
    MetricInfo(
        "brier_refinement", "Brier refinement", "score", False, "min", False, _BS_REF, False
    ),
    MetricInfo(
        "brier_reliability", "Brier reliability", "score", False, "min", False, _BS_REL, False
    ),
    MetricInfo(
        "brier_resolution", "Brier resolution", "score", False, "max", False, _BS_RES, False
    ),
    MetricInfo(
        "brier_uncertainty", "Brier uncertainty", "score", False, None, False, _BS_UNC, False
    ),
):
    METRICS.register(_info.name)(_info)

#: The suite's metric names in report order; ``*_floor`` values are added by its evaluate.
METRIC_NAMES: tuple[str, ...] = tuple(n for n in METRICS if METRICS.get(n).in_suite)
#: Metrics outside the suite, computed on request (``calibkit evaluate --extra``).
EXTRA_METRICS: tuple[str, ...] = tuple(n for n in METRICS if not METRICS.get(n).in_suite)
#: Metrics whose noise floor the suite estimates.
FLOOR_METRICS: tuple[str, ...] = tuple(n for n in METRIC_NAMES if METRICS.get(n).has_floor)
