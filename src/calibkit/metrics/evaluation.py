"""Every metric of one set of outputs, with its interval and noise floor: :func:`evaluate`
and its result, :class:`Evaluation`, read from one :class:`~calibkit.metrics.suite.MetricSuite`.

The noise floor is :mod:`~calibkit.metrics.suite`'s (its module docstring).

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> p = rng.dirichlet(np.ones(3), size=500)
>>> y = np.array([rng.choice(3, p=row) for row in p])
>>> res = evaluate(y, probs=p, resampling=Resampling(n_boot=50, seed=0))
>>> sorted(res.values)[:3]
['accuracy', 'aece', 'aece_floor']
>>> res.values["ece"] < 0.1
True
"""

from __future__ import annotations

from dataclasses import dataclass, field

from calibkit.core.binning import Scheme
from calibkit.core.docs import fill_doc
from calibkit.core.options import Binning, Resampling
from calibkit.core.outputs import ClassifierOutputs, as_outputs
from calibkit.core.validation import RESAMPLES
from calibkit.metrics.analytic import influence_estimand, mean_estimand
from calibkit.metrics.info import METRICS, suite_names
from calibkit.metrics.kernels import BinNorm, RankStatistic
from calibkit.metrics.suite import MetricSuite

__all__ = ["Evaluation", "adopted_intervals", "analytic_intervals", "evaluate", "evaluate_suite"]


@dataclass(frozen=True)
class Evaluation:
    """Metric values (fractions), their intervals and the noise floors.

    Attributes
    ----------
    values : dict of str to float
        Every metric of :data:`METRIC_NAMES`, plus ``"<name>_floor"`` noise floors.
    ci : dict of str to (float, float)
        The interval of each metric that has one, as its entry declares (empty without
        bootstrap replicates; see :func:`evaluate`).
    level : float
        Confidence level of the intervals.
    n_samples, n_classes, n_bins : int
        Sizes of the evaluated data and the bin count.

    Examples
    --------
    >>> Evaluation({"ece": 0.25}, n_samples=2, n_classes=2, n_bins=10).to_dict()["ece"]
    0.25
    """

    values: dict[str, float]
    ci: dict[str, tuple[float, float]] = field(default_factory=dict)
    level: float = 0.95
    n_samples: int = 0
    n_classes: int = 0
    n_bins: int = 15
    #: What each interval is an interval of (``ci_estimand`` in :meth:`to_dict`).
    estimands: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        """Flat metric values plus ``ci`` (with each interval's estimand, ``ci_estimand``)
        and the sizes, ready for JSON."""
        d: dict[str, object] = dict(self.values)
        d["ci"] = {k: list(v) for k, v in self.ci.items()}
        d["ci_estimand"] = {k: self.estimands[k] for k in self.ci if k in self.estimands}
        d["ci_level"] = self.level
        d.update(n_samples=self.n_samples, n_classes=self.n_classes, n_bins=self.n_bins)
        return d


def evaluate(
    labels: object,
    probs: object = None,
    *,
    logits: object = None,
    binning: Binning = Binning(),
    resampling: Resampling = Resampling(),
    n_floor_draws: int = 200,
) -> Evaluation:
    """Every metric, with its interval (``resampling.n_boot=0``: none) and the noise floors.

    Each metric gets the interval its entry declares (the kinds are described at
    :attr:`~calibkit.metrics.info.MetricInfo.interval`; the bootstrap's over ``n_boot``
    resamples of the test set). What each is an interval of is in
    :attr:`Evaluation.estimands` (``ci_estimand`` in ``to_dict()``).

    Parameters
    ----------
    labels, probs, logits
        The outputs, as for every metric.
    binning : Binning
        Bin count and binary semantics (see :mod:`calibkit.core.binning`).
    resampling : Resampling
        Bootstrap replicates (0: no interval at all), the confidence level of the intervals
        and the seed of the bootstrap and of the floors.
    n_floor_draws : int
        Noise-floor draws (0: none).

    Returns
    -------
    Evaluation
        Values, intervals and sizes.

    Examples
    --------
    >>> res = evaluate([1, 0], probs=[[0.2, 0.8], [0.4, 0.6]], binning=Binning(n_bins=10),
    ...                resampling=Resampling(n_boot=0))
    >>> round(res.values["ece"], 4), res.ci, res.n_samples
    (0.4, {}, 2)
    """
    n_floor_draws = RESAMPLES.check("n_floor_draws", n_floor_draws)
    out = as_outputs(labels, probs, logits=logits)
    suite = MetricSuite.from_outputs(out, n_bins=binning.n_bins, mode=binning.mode)
    return evaluate_suite(
        suite, out, binning=binning, resampling=resampling, n_floor_draws=n_floor_draws
    )


def evaluate_suite(
    suite: MetricSuite,
    out: ClassifierOutputs,
    *,
    binning: Binning = Binning(),
    resampling: Resampling = Resampling(),
    n_floor_draws: int = 200,
) -> Evaluation:
    """:func:`evaluate` of ``out`` from its prepared ``suite``
    (``MetricSuite.from_outputs(out, n_bins=binning.n_bins, mode=binning.mode)``), which
    keeps its noise draws for the caller (:meth:`MetricSuite.noise_draws`).

    Parameters
    ----------
    suite : MetricSuite
        The suite prepared from ``out`` with the same ``binning``.
    out : ClassifierOutputs
        The evaluated outputs.
    binning, resampling, n_floor_draws
        As in :func:`evaluate`.

    Returns
    -------
    Evaluation
        Values, intervals (with what each is an interval of) and sizes.

    Examples
    --------
    >>> out = as_outputs([1, 0], probs=[[0.2, 0.8], [0.4, 0.6]])
    >>> suite = MetricSuite.from_outputs(out, n_bins=10)
    >>> none = Resampling(n_boot=0)
    >>> evaluate_suite(suite, out, binning=Binning(n_bins=10), resampling=none).values["accuracy"]
    0.5
    """
    values = suite.compute()
    level = resampling.level
    if n_floor_draws:
        floors = suite.noise_floor(n_floor_draws, resampling.seed)
        values.update({f"{k}_floor": v for k, v in floors.items()})
    ci: dict[str, tuple[float, float]] = {}
    estimands: dict[str, str] = {}
    if resampling.n_boot:
        names = suite_names()
        kind = {name: METRICS.get(name).interval for name in names}
        # resampled only where the percentile interval is the one printed
        boot = tuple(name for name in names if kind[name] == "bootstrap")
        boot_ci = suite.bootstrap(resampling, names=boot) if boot else {}
        ci, estimands = adopted_intervals(out, values, boot_ci, binning=binning, level=level)
        analytic, what = analytic_intervals(suite, names, level)
        ci.update(analytic)
        estimands.update(what)
        ci = {name: ci[name] for name in names if name in ci}  # report order
        estimands = {name: estimands[name] for name in ci if name in estimands}
    return Evaluation(
        values=values,
        ci=ci,
        level=level,
        n_samples=out.n_samples,
        n_classes=out.n_classes,
        n_bins=binning.n_bins,
        estimands=estimands,
    )


#: The end of the Parameters section of :func:`analytic_intervals` and
#: :func:`adopted_intervals`, and their Returns section.
_INTERVALS = """level : float
    The confidence level.

Returns
-------
ci : dict of str to (float, float)
    The intervals.
estimands : dict of str to str
    What each is an interval of."""


@fill_doc(intervals=_INTERVALS)
def analytic_intervals(
    suite: MetricSuite, names: tuple[str, ...], level: float
) -> tuple[dict[str, tuple[float, float]], dict[str, str]]:
    """The analytic intervals at ``level`` of the metrics in ``names`` whose entry says
    ``"mean"`` (:meth:`MetricSuite.mean_intervals`) or ``"influence"``
    (:meth:`MetricSuite.influence_intervals`), and what each is an interval of: no
    resampling (:mod:`~calibkit.metrics.analytic`).

    Parameters
    ----------
    suite : MetricSuite
        The prepared suite of the evaluated outputs.
    names : tuple of str
        The metrics asked for (those without an analytic interval are left out).
    {intervals}

    Examples
    --------
    >>> out = as_outputs([0, 1, 1, 0], probs=[[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.7, 0.3]])
    >>> ci, what = analytic_intervals(MetricSuite.from_outputs(out), ("accuracy", "ece"), 0.95)
    >>> [round(x, 4) for x in ci["accuracy"]], what["accuracy"]
    ([-0.0456, 1.5456], 'the population Accuracy (a mean of per-sample terms: Student-t interval)')
    """
    kind = {n: METRICS.get(n).interval for n in names if n in METRICS}
    means = suite.mean_intervals(tuple(n for n, k in kind.items() if k == "mean"), level)
    ranked = suite.influence_intervals(tuple(n for n, k in kind.items() if k == "influence"), level)
    estimands = {n: mean_estimand(METRICS.get(n).label) for n in means}
    for name in ranked:
        kernel = METRICS.get(name).kernel
        assert isinstance(kernel, RankStatistic)
        estimands[name] = influence_estimand(METRICS.get(name).label, kernel.function)
    return {**means, **ranked}, estimands


@fill_doc(intervals=_INTERVALS)
def adopted_intervals(
    out: ClassifierOutputs,
    values: dict[str, float],
    bootstrap: dict[str, tuple[float, float]],
    *,
    binning: Binning,
    level: float,
) -> tuple[dict[str, tuple[float, float]], dict[str, str]]:
    """The intervals ``evaluate`` prints, as each metric entry's
    :attr:`~calibkit.metrics.info.MetricInfo.interval` says, and what each is an interval of:
    ``bootstrap`` (the percentile intervals of the metrics whose entry says
    ``"bootstrap"``) as they are, and an interval of the true error for each metric of
    ``values`` whose entry says ``"true_error"``; ``"none"``: no interval.

    ``"true_error"``: the interval of the model's true binned error
    (:func:`~calibkit.metrics.intervals.ece_interval` for an l1 norm,
    :func:`~calibkit.metrics.intervals.l2_ece_interval` for l2 and Kumar's debiased one, in
    the entry's bins), widened where needed to hold the printed plug-in value (a wider
    interval covers at least as often; the plug-in is biased upwards, so near calibration
    it can lie above the truth's upper end).

    Parameters
    ----------
    out : ClassifierOutputs
        The evaluated outputs.
    values, bootstrap : dict
        The metrics' values and their percentile bootstrap intervals.
    binning : Binning
        The bins and what is binned.
    {intervals}

    Examples
    --------
    >>> out = as_outputs([0, 1, 1, 0], probs=[[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.7, 0.3]])
    >>> ci, what = adopted_intervals(
    ...     out, {"ece": 0.25, "mce": 0.4, "nll": 0.6}, {"nll": (0.5, 0.7)},
    ...     binning=Binning(n_bins=2), level=0.95)
    >>> sorted(ci), what["ece"]
    (['ece', 'nll'], 'the population equal-width 2-bin L1 calibration error')
    """
    from calibkit.metrics.intervals import ece_interval, l2_ece_interval

    ci: dict[str, tuple[float, float]] = {}
    estimands: dict[str, str] = {}
    for name, interval in bootstrap.items():
        ci[name] = interval
        label = METRICS.get(name).label if name in METRICS else name
        estimands[name] = f"the population {label} (percentile bootstrap)"
    for name, value in values.items():
        info = METRICS.get(name) if name in METRICS else None  # not the floors
        if info is None or info.interval != "true_error":
            continue
        kernel = info.kernel
        assert isinstance(kernel, BinNorm)
        scheme: Scheme = "equal_mass" if kernel.scheme == "mass" else "equal_width"
        f = ece_interval if kernel.norm == "l1" else l2_ece_interval
        true = f(out, n_bins=binning.n_bins, scheme=scheme, mode=binning.mode, level=level)
        ci[name] = (min(true.low, value), max(true.high, value))
        estimands[name] = true.estimand
    return ci, estimands
