"""One evaluation of one model's outputs, every number ``calibkit evaluate`` reports.

:func:`evaluate_outputs` runs the metric suite (values, intervals at ``level``,
noise floors), the extras asked for (:mod:`calibkit.metrics.extras`, each given the options
its registry entry declares), the per-group metrics with ``groups``, the smoothed
reliability curve (with the smooth ECE) and the CORP curve when asked. It computes
numbers only; :mod:`calibkit.reporting.evaluate_report` turns them into a report.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> z = rng.normal(size=(400, 3)) * 3
>>> y = np.argmax(z / 3 + rng.gumbel(size=z.shape), axis=1)  # logits 3x too large
>>> none = Resampling(n_boot=0)
>>> run = evaluate_outputs(as_outputs(y, logits=z), resampling=none, extras=("brier_reliability",))
>>> run.confidence > run.evaluation.values["accuracy"]  # overconfident
True
>>> "brier_reliability" in run.evaluation.values
True
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from calibkit.core.docs import OUTPUTS_EXAMPLE, fill_doc
from calibkit.core.options import Binning, Resampling
from calibkit.core.outputs import ClassifierOutputs, as_outputs
from calibkit.metrics.evaluation import Evaluation, evaluate_suite
from calibkit.metrics.extras import extra_results
from calibkit.metrics.info import METRICS
from calibkit.metrics.samples import Mode
from calibkit.metrics.suite import MetricSuite

#: Noise-floor draws (:func:`calibkit.metrics.evaluate`'s default, so that the floor is
#: the mean of the draws :attr:`EvaluationRun.noise_limit` is a quantile of).
N_FLOOR_DRAWS = 200

if TYPE_CHECKING:
    from calibkit.metrics.groups import GroupEvaluation
    from calibkit.metrics.reliability_bands import CorpReliability
    from calibkit.metrics.smooth import SmoothReliability


@dataclass(frozen=True)
@fill_doc(outputs_example=OUTPUTS_EXAMPLE)
class EvaluationRun:
    """What :func:`evaluate_outputs` found.

    Attributes
    ----------
    outputs : ClassifierOutputs
        The evaluated outputs.
    evaluation : Evaluation
        The suite's values, intervals and floors, and the extras asked for.
    confidence : float
        The mean top-label confidence (against ``evaluation.values["accuracy"]``).
    noise_limit : float
        The ECE a perfectly calibrated model with these confidences stays below with
        probability ``evaluation.level`` (the ``level`` quantile of the draws whose mean is the
        noise floor ``ece_floor``): an ECE below it is within the noise.
    mode : str
        The binary mode of the binned metrics.
    groups : GroupEvaluation or None
        The per-group metrics (with ``groups``).
    smooth : SmoothReliability or None
        The smoothed reliability curve (when the smooth ECE was asked).
    corp : CorpReliability or None
        The CORP reliability curve (with ``corp``).
    undefined : dict of str to str
        The extras these outputs leave undefined (a calibration test on constant
        confidences; their value NaN), each with its reason.

    Examples
    --------
    {outputs_example}

    >>> run = evaluate_outputs(test, resampling=Resampling(n_boot=0))
    >>> run.outputs is test, run.mode, run.evaluation.values["ece"] > run.noise_limit
    (True, 'top_label', True)
    """

    outputs: ClassifierOutputs
    evaluation: Evaluation
    confidence: float
    noise_limit: float
    mode: Mode = "top_label"
    groups: GroupEvaluation | None = None
    smooth: SmoothReliability | None = None
    corp: CorpReliability | None = None
    undefined: dict[str, str] = field(default_factory=dict)


@fill_doc(outputs_example=OUTPUTS_EXAMPLE)
def evaluate_outputs(
    outputs: ClassifierOutputs,
    *,
    groups: object = None,
    extras: tuple[str, ...] = (),
    smooth: bool = False,
    corp: bool = False,
    binning: Binning = Binning(),
    resampling: Resampling = Resampling(),
    coverage: float = 0.8,
    risk: float = 0.05,
) -> EvaluationRun:
    """Every number of one evaluation of ``outputs``.

    Parameters
    ----------
    outputs : ClassifierOutputs
        The model's outputs and the labels.
    groups : array-like of shape (N,), optional
        One group per sample: adds :func:`~calibkit.metrics.groups.evaluate_groups`.
    extras : tuple of str
        Registered extras (:func:`calibkit.metrics.extras.expand_extras`); ``smooth_ece``
        among them (or ``smooth``) computes the smoothed reliability curve, whose smooth ECE
        has a bootstrap interval. An extra these outputs leave undefined is NaN, its reason
        in :attr:`EvaluationRun.undefined` (the others are computed).
    smooth, corp : bool
        Also compute the smoothed reliability curve / the CORP curve.
    binning, resampling
        As in :func:`calibkit.metrics.evaluate`.
    coverage, risk : float
        The options of the extras ``risk_at_coverage`` and ``coverage_at_risk``.

    Examples
    --------
    {outputs_example}

    >>> run = evaluate_outputs(test, resampling=Resampling(n_boot=0))
    >>> round(run.evaluation.values["accuracy"], 3), round(run.confidence, 3)
    (0.843, 0.725)
    """
    outputs = as_outputs(outputs)
    if groups is not None:  # refused before the bootstrap, not after it
        from calibkit.core.groups import check_groups

        check_groups(groups, outputs.n_samples, min_groups=2)
    n_bins, mode, seed = binning.n_bins, binning.mode, resampling.seed
    suite = MetricSuite.from_outputs(outputs, n_bins=n_bins, mode=mode)
    ev = evaluate_suite(
        suite, outputs, binning=binning, resampling=resampling, n_floor_draws=N_FLOOR_DRAWS
    )
    per_group = None
    if groups is not None:
        from calibkit.metrics.groups import evaluate_groups

        per_group = evaluate_groups(outputs, groups=groups, binning=binning, resampling=resampling)
    options = {"n_bins": n_bins, "mode": mode, "coverage": coverage, "risk": risk}
    values = dict(ev.values)
    computed, undefined = extra_results(
        outputs, [n for n in extras if n != "smooth_ece"], **options
    )
    values |= computed
    ci = dict(ev.ci)
    rel = None
    if smooth or "smooth_ece" in extras:
        from calibkit.metrics.smooth import smooth_reliability

        boot = replace(resampling, n_boot=max(1, resampling.n_boot))
        rel = smooth_reliability(outputs, mode=mode, resampling=boot)
        values["smooth_ece"] = rel.value
        if resampling.n_boot and METRICS.get("smooth_ece").interval == "bootstrap":
            ci["smooth_ece"] = rel.interval
    curve = None
    if corp:
        from calibkit.metrics.reliability_bands import corp_reliability

        curve = corp_reliability(outputs, mode=mode, seed=seed)
    confidence = float(np.mean(outputs.confidence))
    draws = suite.noise_draws(N_FLOOR_DRAWS, seed, ("ece",))["ece"]  # the floor's, kept
    limit = float(np.quantile(draws, resampling.level))
    ev = replace(ev, values=values, ci=ci)
    return EvaluationRun(outputs, ev, confidence, limit, mode, per_group, rel, curve, undefined)


__all__ = ["EvaluationRun", "evaluate_outputs"]
