"""What calibkit knows about each metric, in one place: one :class:`MetricInfo` per metric.

:data:`METRICS` holds them in report order. Everything else (the metric engines, the suite's
metric names and noise floors, table labels and formatting, a study's allowed report
metrics, ``calibkit evaluate --extra``) is read from here. A suite metric declares its
kernel (:mod:`~calibkit.metrics.kernels`), from which every engine computes it: registering
it with :func:`register_metric` is the only step to reach :func:`~calibkit.metrics.evaluate`,
the bootstrap, the noise floor (``has_floor``), :class:`~calibkit.metrics.StreamingCalibration`
(a streamable kernel) and the reports. Metrics outside the suite (``in_suite=False``: smooth
ECE, the calibration / refinement parts of NLL and Brier, Murphy's parts of the Brier score)
are described here too, so tables show them and ``calibkit evaluate --extra`` computes them.

>>> METRICS.get("ece").label, METRICS.get("ece").better, METRICS.get("ece").has_floor
('ECE', 'min', True)
>>> METRICS.get("ece").kernel
BinNorm(norm='l1', scheme='width')
>>> METRICS.get("accuracy")([0, 1], probs=[[0.8, 0.2], [0.3, 0.7]])
1.0
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from calibkit.core.errors import InputError
from calibkit.core.registry import Registry
from calibkit.metrics.analytic import influence_functions
from calibkit.metrics.binned import aece, debiased_ece, ece, mce, rmsce, sce
from calibkit.metrics.calibration_tests import TEST_LABELS, calibration_test_metric
from calibkit.metrics.continuous import ks_error, mmce
from calibkit.metrics.decomposition import score_decomposition
from calibkit.metrics.kernels import BinNorm, Kernel, RankStatistic, Residual, SampleMean
from calibkit.metrics.murphy import brier_reliability, brier_resolution, brier_uncertainty
from calibkit.metrics.parts import part_metric
from calibkit.metrics.scores import accuracy, brier, confidence, entropy, nll, top_confidence
from calibkit.metrics.selective import (
    augrc,
    augrc_of,
    aurc,
    aurc_of,
    auroc_of,
    cov_at_risk5_of,
    coverage_at_risk,
    eaurc,
    eaurc_of,
    failure_auroc,
    risk_at_cov80_of,
    risk_at_coverage,
)
from calibkit.metrics.smooth import smooth_ece
from calibkit.metrics.sweep import ece_sweep

#: What ``evaluate``'s interval of a metric is (:attr:`MetricInfo.interval`).
Interval = Literal["mean", "influence", "bootstrap", "true_error", "none"]
INTERVALS: tuple[str, ...] = ("mean", "influence", "bootstrap", "true_error", "none")


@dataclass(frozen=True)
class MetricInfo:
    """One metric: its name, how it is shown, which way is better, and its function.

    ``kind`` is ``"score"`` (accuracy, the proper scores, entropy), ``"error"`` (a
    calibration error) or ``"set"`` (a metric of prediction sets, from ``(sets, labels)``:
    :mod:`~calibkit.metrics.conformal`; never in the suite); ``better`` is ``"min"`` (lower
    is better), ``"max"`` or ``None`` (not ranked); ``percent``: shown in percent (a
    fraction otherwise); ``has_floor``: the
    suite estimates its noise floor; ``in_suite``: computed by the metric suite (and so
    by ``evaluate``) by default; ``kernel``: how the engines compute it, required in the
    suite (:mod:`~calibkit.metrics.kernels`); ``options``: the keyword options its function
    takes from the caller (``calibkit evaluate --extra`` passes exactly these:
    :func:`~calibkit.metrics.extras.extra_values`); ``interval``: what ``evaluate``'s interval
    of it is (:data:`INTERVALS`: ``"mean"``, for a mean of per-sample terms (a
    :class:`~calibkit.metrics.kernels.SampleMean` kernel), the Student-t interval of the
    population mean, ``estimate +- t s / sqrt(n)``, analytic (the central limit theorem,
    :mod:`~calibkit.metrics.analytic`); ``"influence"``, for a ranking metric whose
    influence function :func:`~calibkit.metrics.analytic.influence_functions` knows (failure
    AUROC, AURC, E-AURC, AUGRC), the normal interval ``estimate +- z se`` with the standard
    error of that function (DeLong's for the AUROC), analytic too; ``"bootstrap"``, the
    percentile bootstrap, for the other metrics whose estimator is nearly unbiased;
    ``"true_error"``, an interval of the model's true
    binned error, :mod:`~calibkit.metrics.intervals`, for a binned error whose plug-in
    estimate is biased upwards, so that a bootstrap of it misses the truth of a nearly
    calibrated model; ``"none"``: no interval shown covered the truth in the conformance
    study, ``experiments/intervals``, and none is printed); ``summary``: what it measures, in
    one line, read by the reports beside its label (:func:`calibkit.reporting.tables.meaning`
    adds which way is better). Calling a ``MetricInfo`` calls its function. A kernel that
    cannot do what the entry asks fails here, when the registry is built.

    >>> MetricInfo("toy", "Toy", "error", True, "min", False, ece)
    Traceback (most recent call last):
    ...
    calibkit.core.errors.InputError: kernel: expected a kernel (SampleMean, BinNorm or \
Residual) for the suite metric 'toy', got None
    """

    name: str
    label: str
    kind: Literal["score", "error", "set"]
    percent: bool
    better: Literal["min", "max"] | None
    has_floor: bool
    function: Callable[..., float]
    in_suite: bool = True
    kernel: Kernel | None = None
    options: tuple[str, ...] = ()
    interval: Interval = "bootstrap"
    summary: str = ""

    def __post_init__(self) -> None:
        k = self.kernel
        if self.interval not in INTERVALS:
            raise InputError("interval", "one of " + ", ".join(INTERVALS), repr(self.interval))
        top_label = isinstance(k, BinNorm) and k.scheme != "classwise"
        if self.interval == "true_error" and not (
            top_label and isinstance(k, BinNorm) and k.norm in ("l1", "l2", "debiased")
        ):
            expected = f"a top-label BinNorm kernel (l1 or l2) for the true error of {self.name!r}"
            raise InputError("interval", expected, repr(k))
        if self.interval == "mean" and not isinstance(k, SampleMean):
            raise InputError("interval", f"a SampleMean kernel for the mean {self.name!r}", repr(k))
        if self.interval == "influence" and not (
            isinstance(k, RankStatistic) and k.function in influence_functions()
        ):
            expected = f"a RankStatistic with a known influence function for {self.name!r}"
            raise InputError("interval", expected, repr(k))
        if k is not None and not isinstance(k, SampleMean | BinNorm | Residual | RankStatistic):
            raise InputError("kernel", f"a kernel for {self.name!r}", type(k).__name__)
        if self.kind == "set" and (self.in_suite or k is not None or self.has_floor):
            got = f"in_suite={self.in_suite}, kernel={k!r}, has_floor={self.has_floor}"
            raise InputError("kind", f"a set metric {self.name!r} outside the suite", got)
        if self.in_suite and k is None:
            expected = (
                f"a kernel (SampleMean, BinNorm or Residual) for the suite metric {self.name!r}"
            )
            raise InputError("kernel", expected, "None")
        if self.has_floor and (k is None or not k.floor_capable):
            expected = f"a BinNorm kernel of top-label bins for the floor of {self.name!r}"
            raise InputError("kernel", expected, repr(k))

    def __call__(self, *args: Any, **kwargs: Any) -> float:
        return self.function(*args, **kwargs)


#: The parts of :func:`~calibkit.metrics.decomposition.score_decomposition`, as metrics.
_NLL_CAL = part_metric(score_decomposition, "calibration", "nll_calibration", score="nll")
_NLL_REF = part_metric(score_decomposition, "refinement", "nll_refinement", score="nll")
_BS_CAL = part_metric(score_decomposition, "calibration", "brier_calibration", score="brier")
_BS_REF = part_metric(score_decomposition, "refinement", "brier_refinement", score="brier")


class MetricRegistry(Registry[MetricInfo]):
    """The metric registry: entries are checked as they are registered, and can be removed."""

    def __init__(self) -> None:
        super().__init__("metric", on_register=_check_entry)

    def unregister(self, name: str) -> MetricInfo:
        """Remove ``name`` (a metric registered by the caller) and return its entry."""
        return super().unregister(name)


def _check_entry(name: str, info: MetricInfo) -> None:
    if not isinstance(info, MetricInfo):
        raise InputError("info", "a MetricInfo", type(info).__name__)
    if info.name != name:
        raise InputError("name", f"the entry's own name {info.name!r}", repr(name))


#: Every metric by name (a :class:`MetricInfo` each), in report order; a new metric needs
#: one :func:`register_metric`.
METRICS = MetricRegistry()


def register_metric(info: MetricInfo) -> MetricInfo:
    """Add ``info`` to :data:`METRICS` under its name: the one step a new metric needs.

    >>> from calibkit.metrics.kernels import SampleMean
    >>> top = MetricInfo("mean_top", "Mean top probability", "score", False, None, False,
    ...                  accuracy, kernel=SampleMean(lambda out: out.probs.max(axis=1)))
    >>> "mean_top" in suite_names(), register_metric(top) is top, "mean_top" in suite_names()
    (False, True, True)
    >>> METRICS.unregister("mean_top").name
    'mean_top'
    """
    METRICS.register(info.name)(info)
    return info


_TRUE: Interval = "true_error"
_MEAN: Interval = "mean"
_IF: Interval = "influence"
_NONE: Interval = "none"
_W: Literal["width"] = "width"
_M: Literal["mass"] = "mass"
#: What each built-in metric measures, in one line (:attr:`MetricInfo.summary`).
_SUMMARIES = {
    "accuracy": "share of samples whose most probable class is the label",
    "nll": "mean of -log p(label): punishes confident mistakes most",
    "brier": "mean squared distance between the probabilities and the one-hot label",
    "entropy": "mean entropy of the predicted distribution: how unsure the model says it is",
    "ece": "gap between confidence and accuracy, averaged over equal-width confidence bins",
    "aece": "the ECE over equal-mass bins (each bin holds about as many samples)",
    "mce": "the largest gap between confidence and accuracy in any one bin",
    "rmsce": "root mean square of the bins' gaps between confidence and accuracy (an L2 ECE)",
    "ece_debiased": "the RMSCE less each bin's sampling noise: read beside the RMSCE, not the ECE",
    "sce": "class-wise ECE: each class's probability binned, averaged over the classes",
    "ks": "largest gap between cumulative confidence and cumulative accuracy (no bins)",
    "mmce": "kernel (MMD) gap between confidence and correctness (no bins)",
    "failure_auroc": "how well the confidence ranks right predictions above wrong ones",
    "aurc": "mean error rate as the least confident samples are rejected, over all coverages",
    "eaurc": "the AURC less that of a perfect ranking: the ranking's excess risk",
    "augrc": "AURC counting the accepted errors among all samples (Traub et al. 2024)",
    "risk_at_cov80": "error rate on the 80% most confident samples",
    "cov_at_risk5": "largest share of the most confident samples whose error rate is at most 5%",
    "smooth_ece": "ECE of a kernel-smoothed reliability curve, no bins (Błasiok & Nakkiran 2023)",
    "ece_sweep": "ECE over the most equal-mass bins whose accuracies rise (Roelofs et al. 2022)",
    "confidence": "mean probability of the most probable class",
    "nll_calibration": "the part of the NLL that the best temperature removes",
    "nll_refinement": "the NLL left after the best temperature",
    "brier_calibration": "the part of the Brier score that the best temperature removes",
    "brier_refinement": "the Brier score left after the best temperature",
    "brier_reliability": (
        "Murphy's reliability: the binned squared gap between forecast and outcome"
    ),
    "brier_resolution": "Murphy's resolution: how far the bins' outcomes move from the base rate",
    "brier_uncertainty": (
        "Murphy's uncertainty: the Brier score of always forecasting the base rate"
    ),
    "risk_at_coverage": "error rate on the most confident share of samples (--coverage)",
    "coverage_at_risk": (
        "largest share of the most confident samples with error rate at most --risk"
    ),
}


def _suite(
    name: str,
    label: str,
    kind: Literal["score", "error"],
    percent: bool,
    better: Literal["min", "max"] | None,
    function: Callable[..., float],
    kernel: Kernel,
    interval: Interval = "bootstrap",
    has_floor: bool = False,
) -> None:
    """Register a built-in suite metric (its summary from :data:`_SUMMARIES`)."""
    summary = _SUMMARIES[name]
    args = (name, label, kind, percent, better, has_floor, function, True, kernel, ())
    register_metric(MetricInfo(*args, interval, summary))


def _extra(
    name: str,
    label: str,
    kind: Literal["score", "error"],
    percent: bool,
    better: Literal["min", "max"] | None,
    function: Callable[..., float],
    options: tuple[str, ...] = (),
    interval: Interval = "bootstrap",
    kernel: Kernel | None = None,
) -> None:
    """Register a built-in metric outside the suite (its summary from :data:`_SUMMARIES`)."""
    summary = _SUMMARIES[name]
    args = (name, label, kind, percent, better, False, function, False, kernel, options)
    register_metric(MetricInfo(*args, interval, summary))


# name, label, kind, percent, better, function, kernel, interval (has_floor)
_suite("accuracy", "Accuracy", "score", True, "max", accuracy, SampleMean("correct"), _MEAN)
_suite("nll", "NLL", "score", False, "min", nll, SampleMean("nll"), _MEAN)
_suite("brier", "Brier", "score", False, "min", brier, SampleMean("brier"), _MEAN)
_suite("entropy", "Entropy", "score", False, None, entropy, SampleMean("entropy"), _MEAN)
_suite("ece", "ECE", "error", True, "min", ece, BinNorm("l1", _W), _TRUE, has_floor=True)
_suite("aece", "Adaptive ECE", "error", True, "min", aece, BinNorm("l1", _M), _TRUE, has_floor=True)
_suite("mce", "MCE", "error", True, "min", mce, BinNorm("max", _W), _NONE)
_suite("rmsce", "RMSCE", "error", True, "min", rmsce, BinNorm("l2", _W), _TRUE)
_suite(
    "ece_debiased",
    "Debiased RMSCE",
    "error",
    True,
    "min",
    debiased_ece,
    BinNorm("debiased", _W),
    _TRUE,
)
_suite("sce", "SCE", "error", True, "min", sce, BinNorm("l1", "classwise"), _NONE)
_suite("ks", "KS", "error", True, "min", ks_error, Residual("sup"), _NONE)
# its percentile bootstrap covered a calibrated model's 0 in none of 20 simulated data
# sets of 2,000 (the plug-in is biased upwards, as the binned errors are): none printed
_suite("mmce", "MMCE", "error", True, "min", mmce, Residual("laplace"), _NONE)
# selective prediction (calibkit.metrics.selective): the ranking, not the values
_suite(
    "failure_auroc",
    "Failure AUROC",
    "score",
    True,
    "max",
    failure_auroc,
    RankStatistic(auroc_of),
    _IF,
)
_suite("aurc", "AURC", "score", True, "min", aurc, RankStatistic(aurc_of), _IF)
_suite("eaurc", "E-AURC", "score", True, "min", eaurc, RankStatistic(eaurc_of), _IF)
_suite("augrc", "AUGRC", "score", True, "min", augrc, RankStatistic(augrc_of), _IF)
_suite(
    "risk_at_cov80",
    "Risk @ 80% cov.",
    "score",
    True,
    "min",
    risk_at_coverage,
    RankStatistic(risk_at_cov80_of),
)
_suite(
    "cov_at_risk5",
    "Cov. @ 5% risk",
    "score",
    True,
    "max",
    coverage_at_risk,
    RankStatistic(cov_at_risk5_of),
)
# outside the suite: name, label, kind, percent, better, function, options, interval (kernel)
_extra("smooth_ece", "Smooth ECE", "error", True, "min", smooth_ece, ("mode",), _NONE)
_extra("ece_sweep", "ECE sweep", "error", True, "min", ece_sweep, ("mode",), _NONE)
# mean top-label confidence: computed by the suite's kernels where asked for (the per-group
# results, calibkit.metrics.groups)
_extra(
    "confidence",
    "Confidence",
    "score",
    True,
    None,
    confidence,
    (),
    _MEAN,
    SampleMean(top_confidence),
)
_extra("nll_calibration", "NLL calibration", "score", False, "min", _NLL_CAL)
_extra("nll_refinement", "NLL refinement", "score", False, "min", _NLL_REF)
_extra("brier_calibration", "Brier calibration", "score", False, "min", _BS_CAL)
_extra("brier_refinement", "Brier refinement", "score", False, "min", _BS_REF)
_extra(
    "brier_reliability", "Brier reliability", "score", False, "min", brier_reliability, ("n_bins",)
)
_extra("brier_resolution", "Brier resolution", "score", False, "max", brier_resolution, ("n_bins",))
_extra(
    "brier_uncertainty", "Brier uncertainty", "score", False, None, brier_uncertainty, ("n_bins",)
)
# at the caller's coverage / risk (calibkit evaluate --coverage C / --risk R)
_extra("risk_at_coverage", "Risk @ coverage", "score", True, "min", risk_at_coverage, ("coverage",))
_extra("coverage_at_risk", "Coverage @ risk", "score", True, "max", coverage_at_risk, ("risk",))

#: The calibration tests as extras: ``<test>_statistic`` and ``<test>_p`` (never ranked, no
#: bootstrap interval; :mod:`~calibkit.metrics.calibration_tests`).
TEST_METRICS: tuple[str, ...] = tuple(
    f"{test}_{part}" for test in TEST_LABELS for part in ("statistic", "p")
)
for _test, _label in TEST_LABELS.items():
    for _part, _suffix in (("statistic", "statistic"), ("p_value", "p-value")):
        _function = calibration_test_metric(_test, _part)
        _name = f"{_test}_{'p' if _part == 'p_value' else _part}"
        register_metric(
            MetricInfo(
                _name,
                f"{_label} {_suffix}",
                "score",
                False,
                None,
                False,
                _function,
                False,
                options=("mode",),
                summary=(
                    f"the {_label} test's statistic"
                    if _part == "statistic"
                    else f"the {_label} test's p-value: small if the sample size does not "
                    "explain the gap"
                ),
            )
        )


def suite_names() -> tuple[str, ...]:
    """The suite's metric names now, in report order (with any registered since import).

    Examples
    --------
    >>> suite_names()[:4]
    ('accuracy', 'nll', 'brier', 'entropy')
    """
    return tuple(n for n in METRICS if METRICS.get(n).in_suite)


def extra_names() -> tuple[str, ...]:
    """The metrics of predictions outside the suite now (``calibkit evaluate --extra``;
    set metrics, computed from prediction sets, are not among them).

    Examples
    --------
    >>> "smooth_ece" in extra_names(), "smooth_ece" in suite_names()
    (True, False)
    """
    return tuple(n for n in METRICS if not METRICS.get(n).in_suite and METRICS.get(n).kind != "set")


def floor_names() -> tuple[str, ...]:
    """The suite metrics whose noise floor the suite estimates, now.

    Examples
    --------
    >>> floor_names()
    ('ece', 'aece')
    """
    return tuple(n for n in suite_names() if METRICS.get(n).has_floor)


def kernels(names: tuple[str, ...]) -> dict[str, Kernel]:
    """The kernel of each suite metric in ``names`` (other names are left out)."""
    found = {n: METRICS.get(n).kernel for n in names if n in METRICS}
    return {n: k for n, k in found.items() if k is not None}


#: The built-in suite's metric names in report order; ``*_floor`` values are added by its
#: evaluate. The engines read :func:`suite_names` (metrics registered later included).
METRIC_NAMES: tuple[str, ...] = suite_names()
#: Built-in metrics outside the suite, computed on request (``calibkit evaluate --extra``).
EXTRA_METRICS: tuple[str, ...] = extra_names()
#: Built-in metrics whose noise floor the suite estimates.
FLOOR_METRICS: tuple[str, ...] = floor_names()
