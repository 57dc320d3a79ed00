"""Compare post-hoc calibrators on held-out data: fit on one part, judge on the other.

:func:`split_outputs` makes a seeded, stratified calibration / test split of one set of
classifier outputs; :func:`compare` fits every requested calibrator on the calibration
part and evaluates it on the test part with :func:`calibkit.metrics.evaluate` (every
metric, bootstrap intervals and noise floors). The uncalibrated model is the first row,
named ``"none"``.

Every row is evaluated with the same ``seed``, so all methods are judged on the same
bootstrap resamples of the test part (a paired comparison).

Default methods (:func:`applicable_methods`, in :mod:`calibkit.workflows.methods`)
    Every registered calibrator that applies to the number of classes (binary-only ones
    such as Platt or beta scaling only when K = 2), in the registry's order (its entries'
    ``order``), except those registered with ``default=False``: the methods run only
    when named, and ``"auto"``: it selects one of the other methods by itself, so its row
    would repeat one of theirs at the price of another full model selection. Ask for it by
    name to include it; its row names the method it chose (``chosen`` in its parameters)
    and shows that method's fitted parameters. ``"temperature_ece"`` (temperature chosen by
    calibration-set ECE) is included. A method whose declared scope (the ``scope=`` of its
    registry entry, :mod:`calibkit.calibrators.scope`) declines the data is left out:
    unregularised ``"matrix"`` scaling, with K (K + 1) parameters, from K = 50 classes on
    (on 100 classes it gives 26-38% ECE and an NLL of 64) or when the calibration part holds
    fewer than 2 samples per parameter (220 for 10 classes); SMS and SMS-CV below 20 samples
    per class; vector scaling from 500 classes and the cross-validated K x K maps
    (MS-ODIR, Dirichlet, SMS, SMS-CV) from 200, for their cost (``docs/performance.md``).
    Name one to include it anyway. At 500 classes and more the recommendation does not
    cross-fit ``temperature_ece``, ``isotonic`` and ``histogram_classwise`` (their scopes'
    cross-fitting limit; their rows stay; said in :attr:`Recommendation.not_cross_fitted`).
    When a class is absent from the calibration part, the methods that refuse such data
    (they fit each class from its own rows: ``needs_every_class``) are left out too; named,
    they refuse. None is dropped silently: each is logged with its reason before the work
    and kept in :attr:`Comparison.declined` (the report says them).

Rows that say more than their numbers (:class:`Comparison`)
    :attr:`Comparison.same_maps`: methods whose maps equal an earlier row's, by
    construction (Dirichlet and MS-ODIR on probabilities:
    :func:`calibkit.workflows.methods.same_maps`) or because both fits solved the same
    problem (matrix scaling and MS-ODIR, both shrunk towards temperature scaling, whenever
    they choose the same strength: :func:`calibkit.workflows.methods.same_fit`; both are
    still fitted), each with its reason (:attr:`Comparison.same_map_reasons`), and
    ``"auto"`` beside the method it chose. A map equal by construction is fitted once
    (:func:`reused_fits`): the later row reuses the earlier one's fit, test probabilities
    and evaluation (fit time 0), and the recommendation cross-fits it once.
    :attr:`Comparison.accuracy_changed`: methods whose test accuracy differs from the
    uncalibrated row's (only a map that is not monotone within a sample can change the
    predicted class).
    :attr:`MethodResult.ranking`: whether the method changes the *ranking* of the test
    samples by top-label confidence (:func:`calibkit.metrics.selective.ranking_change`),
    which is all the selective-prediction metrics see: histogram binning and isotonic
    regression create ties; temperature scaling keeps the ranking of two classes, but on
    several classes it can reorder samples (a close runner-up against many close ones).

Calibration per group (``cal_groups=`` and ``test_groups=``, one group per row of each part)
    Every row also gets its per-group ECE, NLL, accuracy and confidence on the test part,
    with stratified bootstrap intervals and the worst-group gap
    (:attr:`MethodResult.groups`, :func:`calibkit.metrics.groups.evaluate_groups`), and its
    reliability bins per group. The calibrators that take the groups (kind ``groups``:
    group-wise temperature scaling, multicalibration; :func:`group_methods`) join the
    default list; each is fitted with the calibration part's groups and predicts with the
    test part's (a group absent from the calibration part gets the global map).

Which calibrator to use (``recommend=True``, :class:`Recommendation`)
    Chosen on the calibration part alone by ``auto``'s rule (cross-fitted NLL; temperature
    scaling unless a richer method beats it by more than
    :data:`~calibkit.calibrators.logit.auto.MARGIN_SE` standard errors of the paired
    difference), never by the test part the rows are judged on. With groups the rule stays
    among the calibrators without groups: the calibration part gives no per-group judgement
    of the group-aware ones (cross-fitting them per group is not done), so the group rule is
    read on the test part and said beside it, not folded into it:
    :attr:`Comparison.smallest_gap` is the calibrator (``"none"`` excluded) with the
    smallest worst-group ECE gap on the test part (the first row on a tie). A report says
    both plainly: use the recommended method overall; for the groups, the smallest-gap
    method, with both gaps (and whether their intervals overlap, in which case the test
    part cannot tell the two gaps apart).

:func:`compare_parts` is the whole workflow of ``calibkit compare``: one set of outputs
split once (seeded, stratified; its groups follow their rows) or the two parts as given,
checked, compared and the method to use chosen.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from calibkit.calibrators import CALIBRATORS, Calibrator, create_calibrator, ece_temperature_curve
from calibkit.calibrators.scope import declined as scope_declined
from calibkit.core.binning import BinStats
from calibkit.core.errors import InputError
from calibkit.core.groups import check_groups
from calibkit.core.outputs import ClassifierOutputs, as_outputs, check_labels
from calibkit.core.progress import Phase, time_left_text
from calibkit.core.splits import stratified_split
from calibkit.metrics import Evaluation, evaluate, reliability_stats
from calibkit.metrics.calibration_tests import CalibrationTest, calibration_tests
from calibkit.metrics.groups import GroupEvaluation, evaluate_groups
from calibkit.metrics.intervals import CalibrationInterval, ece_interval, paired_interval
from calibkit.metrics.samples import Mode, nll_per_sample
from calibkit.metrics.selective import (
    RankingChange,
    RiskCoverage,
    ranking_change,
    risk_coverage_curve,
)
from calibkit.workflows.methods import (
    SAME_MAP_REASONS,
    UNCALIBRATED,
    applicable_methods,
    chosen_method,
    group_methods,
    left_out_lines,
    left_out_methods,
    resolve_methods,
    same_fit,
    same_maps,
    summarize_params,
)
from calibkit.workflows.recommendation import Recommendation, recommendation

__all__ = [
    "TEMPERATURE_GRID",
    "UNCALIBRATED",
    "Comparison",
    "MethodResult",
    "Recommendation",
    "applicable_methods",
    "compare",
    "compare_parts",
    "group_methods",
    "recommendation",
    "resolve_methods",
    "reused_fits",
    "split_indices",
    "split_outputs",
    "summarize_params",
]

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

#: Temperatures of the ECE-versus-temperature curve: 0.05, 0.075, ..., 5.
TEMPERATURE_GRID: F64 = np.round(np.arange(2, 201) * 0.025, 3)
_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MethodResult:
    """One row of a comparison: a calibrator judged on the test part.

    Attributes
    ----------
    method, evaluation, reliability
        Calibrator name (``"none"``: uncalibrated), its :class:`Evaluation` and reliability
        bin sums (:class:`BinStats`) on the test part.
    params, fit_seconds
        Scalar fitted parameters (:func:`summarize_params`) and the fit's wall time.
    chosen
        The method ``"auto"`` picked (None for every other method).
    same_as
        The earlier row whose fitted map this one repeats and why
        (:func:`~calibkit.workflows.methods.same_fit`), or None.
    tests
        The calibration tests on the test part, by name
        (:func:`~calibkit.metrics.calibration_tests.calibration_tests`).
    ranking, risk_coverage
        How its test confidences rank the samples against the uncalibrated ones
        (:class:`~calibkit.metrics.selective.RankingChange`), and its risk-coverage curve.
    groups, group_reliability
        With groups: its per-group results on the test part
        (:class:`~calibkit.metrics.groups.GroupEvaluation`) and reliability bins by group.
    true_ece
        The interval of the method's true ECE on the test part's distribution
        (:func:`~calibkit.metrics.intervals.ece_interval`; analytic, so computed whatever
        ``n_boot``: a study's rows keep it).
    nll_terms
        Each test sample's NLL under this method (None without intervals: ``n_boot=0``),
        for the paired differences of :meth:`Comparison.nll_change`.

    Examples
    --------
    >>> out = as_outputs([0, 1], probs=[[0.8, 0.2], [0.4, 0.6]])
    >>> row = compare(out, out, [], n_bins=10, n_boot=0).row("none")
    >>> row.method, round(row.evaluation.values["ece"], 4), row.reliability.counts[6:9].tolist()
    ('none', 0.3, [1.0, 0.0, 1.0])
    """

    method: str
    evaluation: Evaluation
    params: dict[str, float]
    fit_seconds: float
    reliability: BinStats
    chosen: str | None = None
    same_as: tuple[str, str] | None = None
    tests: dict[str, CalibrationTest] = dataclasses.field(default_factory=dict)
    ranking: RankingChange | None = None
    risk_coverage: RiskCoverage | None = None
    groups: GroupEvaluation | None = None
    group_reliability: dict[str, BinStats] | None = None
    true_ece: CalibrationInterval | None = None
    nll_terms: F64 | None = dataclasses.field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class Comparison:
    """Every method's result on the same test part, the uncalibrated row first.

    Attributes
    ----------
    rows : list of MethodResult
        One row per method, ``"none"`` first.
    n_cal, n_test, n_classes, n_bins, n_boot, seed : int
        Sizes of the parts, class and bin counts, bootstrap replicates and seed.
    temperatures, ece_curve, source
        Test ECE of the uncalibrated logits over temperatures; where the data came from.
    kind : str
        What the calibrators were given: ``"logits"``, ``"probs"`` (log-probabilities
        then), or ``"mixed"`` (one part of each).
    recommendation : Recommendation or None
        The method to use (with ``recommend=True``).
    declined : dict of str to str
        The default methods not run on this data, each with its one-line reason
        (:func:`~calibkit.workflows.methods.left_out_methods`: a declared scope that
        declines the class or sample count, a class absent from the calibration part);
        empty when the methods were named.

    Examples
    --------
    >>> out = as_outputs([0, 1], logits=[[1.0, 0.0], [0.0, 1.0]])
    >>> comp = compare(out, out, [], n_boot=0)
    >>> [r.method for r in comp.rows], comp.n_test, float(comp.temperatures[0])
    (['none'], 2, 0.05)
    """

    rows: list[MethodResult]
    n_cal: int
    n_test: int
    n_classes: int
    n_bins: int
    temperatures: F64
    ece_curve: F64
    source: str
    n_boot: int = 0
    seed: int = 0
    kind: str = "logits"
    recommendation: Recommendation | None = None
    declined: dict[str, str] = dataclasses.field(default_factory=dict)

    def row(self, method: str) -> MethodResult:
        """The result of ``method`` (InputError if it was not compared)."""
        for r in self.rows:
            if r.method == method:
                return r
        raise InputError("method", "one of " + ", ".join(r.method for r in self.rows), repr(method))

    @property
    def fitted_temperatures(self) -> dict[str, float]:
        """Temperature of every method that fitted one (temperature scaling variants)."""
        return {r.method: r.params["temperature"] for r in self.rows if "temperature" in r.params}

    @property
    def same_maps(self) -> dict[str, str]:
        """Method -> the earlier method whose map it equals, by construction or by its fit
        (see above); ``"auto"`` -> the method it chose, when that method has a row too."""
        return {m: twin for m, (twin, _) in self._same_maps().items()}

    @property
    def same_map_reasons(self) -> dict[str, str]:
        """Method of :attr:`same_maps` -> why its map equals that method's, in words."""
        return {m: why for m, (_, why) in self._same_maps().items()}

    def _same_maps(self) -> dict[str, tuple[str, str]]:
        names = [r.method for r in self.rows]
        found = {r.method: r.same_as for r in self.rows if r.same_as is not None}
        for later, first in same_maps(names, self.n_classes, self.kind).items():
            found.setdefault(later, (first, SAME_MAP_REASONS[first, later]))
        for r in self.rows:
            if r.chosen is not None and r.chosen in names:
                found[r.method] = (r.chosen, f"auto chose {r.chosen} and refitted it")
        return found

    @property
    def smallest_gap(self) -> str | None:
        """The calibrator (``"none"`` excluded) with the smallest worst-group ECE gap on the
        test part, the first row on a tie; None without groups (see the module doc)."""
        rows = [r for r in self.rows[1:] if r.groups is not None]
        if not rows:
            return None
        return min(rows, key=lambda r: r.groups.gap if r.groups is not None else math.inf).method

    def nll_change(self, method: str, against: str = UNCALIBRATED) -> CalibrationInterval | None:
        """The paired change in test NLL from ``against`` to ``method``: the mean of the
        per-sample differences on the test part and its Student-t interval
        (:func:`~calibkit.metrics.intervals.paired_interval`: of the population difference
        between the two fitted maps); None without intervals.

        >>> out = as_outputs([0, 1, 0, 1], logits=[[2.0, 0.0], [0.0, 1.0], [0.0, 1.0], [1.0, 0.0]])
        >>> comp = compare(out, out, ["temperature"], n_boot=10)
        >>> ci = comp.nll_change("temperature")
        >>> bool(ci.low <= ci.estimate <= ci.high), ci.estimate < 0
        (True, True)
        """
        a, b = self.row(method).nll_terms, self.row(against).nll_terms
        if a is None or b is None:
            return None
        return paired_interval(a - b, level=self.rows[0].evaluation.level)

    @property
    def accuracy_changed(self) -> list[str]:
        """Methods whose count of correct test predictions differs from ``"none"``'s."""
        accuracy = [r.evaluation.values.get("accuracy", math.nan) for r in self.rows]
        if not all(math.isfinite(a) for a in accuracy):
            return []
        correct = [round(a * self.n_test) for a in accuracy]
        return [r.method for r, c in zip(self.rows, correct, strict=True) if c != correct[0]]


def _cal_count(n_cal: object, n: int) -> int:
    if n < 2:
        raise InputError("outputs", "at least 2 samples to split", f"{n}")
    if isinstance(n_cal, bool) or not isinstance(n_cal, int | float | np.integer | np.floating):
        raise InputError("n_cal", "a count (int) or a fraction (float)", repr(n_cal))
    if isinstance(n_cal, int | np.integer):
        if not 1 <= n_cal <= n - 1:
            raise InputError("n_cal", f"a count in [1, {n - 1}]", str(n_cal))
        return int(n_cal)
    if not (math.isfinite(n_cal) and 0.0 < n_cal < 1.0):
        raise InputError("n_cal", "a fraction strictly between 0 and 1", repr(n_cal))
    return min(max(round(float(n_cal) * n), 1), n - 1)


def split_indices(labels: object, n_cal: int | float, seed: int) -> tuple[I64, I64]:
    """Sorted calibration and test indices of a seeded stratified split of ``labels``.

    ``n_cal`` is a count (int) or a fraction of the samples (float). Each class is divided
    in proportion, rounding by largest remainder (random tie-break) so that the
    calibration part holds exactly ``n_cal`` samples.

    Parameters
    ----------
    labels, n_cal, seed
        Integer labels ``(N,)``; a count in ``[1, N - 1]`` or a fraction in (0, 1); the seed.

    Returns
    -------
    cal, test : ndarray of int64
        Sorted indices of the two parts.

    Examples
    --------
    >>> cal, test = split_indices([0, 0, 0, 0, 1, 1, 1, 1], 4, seed=1)
    >>> len(cal), len(test), sorted(np.array([0, 0, 0, 0, 1, 1, 1, 1])[cal].tolist())
    (4, 4, [0, 0, 1, 1])
    """
    y = check_labels(labels)
    test, cal = stratified_split(y, _cal_count(n_cal, y.shape[0]), seed, every_class_in_both=False)
    return cal, test


def _subset(out: ClassifierOutputs, idx: I64) -> ClassifierOutputs:
    return ClassifierOutputs(labels=out.labels[idx], scores=out.scores[idx], kind=out.kind)


def split_outputs(
    out: ClassifierOutputs, n_cal: int | float, seed: int
) -> tuple[ClassifierOutputs, ClassifierOutputs]:
    """Seeded stratified ``(calibration, test)`` split (see :func:`split_indices`).

    Parameters
    ----------
    out, n_cal, seed
        Validated outputs; size and seed as in :func:`split_indices`.

    Returns
    -------
    cal, test : ClassifierOutputs
        The two parts.

    Examples
    --------
    >>> out = as_outputs([0, 0, 1, 1], logits=np.zeros((4, 2)))
    >>> cal, test = split_outputs(out, 0.5, seed=0)
    >>> sorted(cal.labels.tolist()), sorted(test.labels.tolist())
    ([0, 1], [0, 1])
    """
    if not isinstance(out, ClassifierOutputs):
        raise InputError("out", "ClassifierOutputs (from as_outputs)", type(out).__name__)
    cal_idx, test_idx = split_indices(out.labels, n_cal, seed)
    return _subset(out, cal_idx), _subset(out, test_idx)


def _judge(
    method: str,
    test: ClassifierOutputs,
    params: dict[str, float],
    seconds: float,
    settings: dict[str, Any],
    phase: Phase | None = None,
) -> MethodResult:
    """``method``'s row on ``test`` (its calibrated outputs); ``phase``: a step after
    the calibration tests, the metrics and the risk-coverage curve. With intervals, the
    row keeps each test sample's NLL (the paired differences between rows)."""
    reliability = reliability_stats(test, n_bins=settings["n_bins"], mode=settings["mode"])
    tests = calibration_tests(test, mode=settings["mode"])
    _step(phase, "calibration tests")
    evaluation = evaluate(test, **settings)
    _step(phase, "metrics")
    terms = nll_per_sample(test) if settings["n_boot"] else None
    true_ece = ece_interval(
        test, n_bins=settings["n_bins"], mode=settings["mode"], level=settings["level"]
    )
    result = MethodResult(
        method,
        evaluation,
        params,
        seconds,
        reliability,
        tests=tests,
        true_ece=true_ece,
        nll_terms=terms,
    )
    result = dataclasses.replace(result, risk_coverage=risk_coverage_curve(test))
    _step(phase, "risk-coverage")
    return result


def _step(phase: Phase | None, text: str) -> None:
    if phase is not None:
        phase.step(text)


def _check_parts(cal: ClassifierOutputs, test: ClassifierOutputs) -> None:
    for arg, val in (("cal", cal), ("test", test)):
        if not isinstance(val, ClassifierOutputs):
            raise InputError(arg, "ClassifierOutputs (from as_outputs)", type(val).__name__)
    if cal.n_classes != test.n_classes:
        got = f"{test.n_classes} classes"
        raise InputError("test", f"{cal.n_classes} classes, as in the calibration part", got)


def _by_group(
    row: MethodResult, test: ClassifierOutputs, groups: np.ndarray | None, settings: dict[str, Any]
) -> MethodResult:
    """``row`` with its per-group results on ``test`` (unchanged without groups)."""
    if groups is None:
        return row
    per_group = evaluate_groups(test, groups=groups, **settings)
    bins = {
        g: reliability_stats(_subset(test, np.flatnonzero(groups == g)), **_bin_settings(settings))
        for g in per_group.names
    }
    return dataclasses.replace(row, groups=per_group, group_reliability=bins)


def _bin_settings(settings: dict[str, Any]) -> dict[str, Any]:
    return {"n_bins": settings["n_bins"], "mode": settings["mode"]}


def reused_fits(
    names: Sequence[str],
    cal: ClassifierOutputs,
    test: ClassifierOutputs,
    params: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, str]:
    """The methods of ``names`` fitted once for two rows: each later method whose map
    equals an earlier one's by construction on these parts
    (:func:`~calibkit.workflows.methods.same_maps`; both parts of the same kind) and that
    is given the same ``params``, mapped to that earlier method. Its row reuses the
    earlier row's fit, test probabilities and evaluation (the same inputs and seed give
    the same numbers), and its ``same_as`` says so.

    Parameters
    ----------
    names : sequence of str
        The compared methods, in their order.
    cal, test : ClassifierOutputs
        The calibration and test parts.
    params : mapping, optional
        Calibrator parameters by method (as :func:`compare`'s).

    Returns
    -------
    dict of str to str
        Each reusing method -> the method whose fit it reuses.

    Examples
    --------
    >>> p = as_outputs([0, 1, 1], probs=[[0.7, 0.3], [0.4, 0.6], [0.2, 0.8]])
    >>> reused_fits(["ms_odir", "dirichlet"], p, p)
    {'dirichlet': 'ms_odir'}
    >>> reused_fits(["ms_odir", "dirichlet"], p, p, {"dirichlet": {"reg_lambda": 1.0}})
    {}
    """
    params = params or {}
    kind = cal.kind if cal.kind == test.kind else "mixed"
    return {
        later: first
        for later, first in same_maps(names, cal.n_classes, kind).items()
        if dict(params.get(later, {})) == dict(params.get(first, {}))
    }


def _rows(
    cal: ClassifierOutputs,
    test: ClassifierOutputs,
    names: list[str],
    settings: dict[str, Any],
    params: Mapping[str, Mapping[str, Any]],
    groups: tuple[np.ndarray, np.ndarray] | None = None,
    keep: dict[str, Calibrator] | None = None,
) -> list[MethodResult]:
    """The uncalibrated row, then each method fitted on ``cal`` and judged on ``test``
    (``groups``: the parts' group names, for the per-group results and the calibrators
    that take them). A method whose map equals an earlier one's by construction
    (:func:`reused_fits`) reuses that row: one fit, one evaluation. ``keep`` (a dict) gets
    the fitted calibrators by name."""
    _log.info(f"evaluating the uncalibrated model on {test.n_samples:,} test samples")
    test_groups = None if groups is None else groups[1]
    phase = Phase(_log, f"judging none on {test.n_samples:,} test samples", 3)
    rows = [_judge(UNCALIBRATED, test, {}, 0.0, settings, phase)]
    rows[0] = dataclasses.replace(rows[0], ranking=RankingChange(True, 1.0))
    rows[0] = _by_group(rows[0], test, test_groups, settings)
    twins = reused_fits(names, cal, test, params)
    fitted: dict[str, Calibrator] = {}
    began = time.perf_counter()
    for i, name in enumerate(names, start=1):
        spent = time.perf_counter() - began
        eta = f" ({time_left_text(spent, i - 1, len(names))} of the fits)" if i > 1 else ""
        if name in twins:  # the same map by construction: the earlier row's fit, reused
            twin = twins[name]
            _log.info(f"[{i}/{len(names)}] {name}: the same map as {twin}, its fit reused{eta}")
            fitted[name] = fitted[twin]
            earlier = next(r for r in rows if r.method == twin)
            why = (twin, f"{SAME_MAP_REASONS[twin, name]}; fitted once, its row reused")
            rows.append(dataclasses.replace(earlier, method=name, fit_seconds=0.0, same_as=why))
            continue
        _log.info(
            f"[{i}/{len(names)}] fitting {name} on {cal.n_samples:,} calibration samples{eta}"
        )
        calibrator, row = _fitted_row(name, cal, test, settings, params, groups)
        row = dataclasses.replace(row, same_as=same_fit(fitted, name, calibrator, cal.kind))
        fitted[name] = calibrator
        rows.append(row)
    if keep is not None:
        keep.update(fitted)
    return rows


def _fitted_row(
    name: str,
    cal: ClassifierOutputs,
    test: ClassifierOutputs,
    settings: dict[str, Any],
    params: Mapping[str, Mapping[str, Any]],
    groups: tuple[np.ndarray, np.ndarray] | None,
) -> tuple[Calibrator, MethodResult]:
    """``name`` fitted on ``cal`` and its row on ``test`` (its (N, K) test probabilities
    freed on return: one such array alive at a time)."""
    start = time.perf_counter()
    calibrator = create_calibrator(name, **params.get(name, {}))
    with_groups: dict[str, Any] = {}
    kind = cal.kind  # declared: a map that is not shift-invariant records it
    if groups is not None and calibrator.kind == "groups":
        calibrator.fit(cal.as_logits(), cal.labels, groups=groups[0], input_kind=kind)
        with_groups = {"groups": groups[1]}
    else:
        calibrator.fit(cal.as_logits(), cal.labels, input_kind=kind)
    seconds = time.perf_counter() - start
    phase = Phase(_log, f"judging {name} on {test.n_samples:,} test samples", 4)
    probs = calibrator.predict_proba(test.as_logits(), **with_groups)
    calibrated = as_outputs(test.labels, probs=probs)
    del probs
    phase.step("test probabilities")
    row = _judge(name, calibrated, summarize_params(calibrator), seconds, settings, phase)
    ranking = ranking_change(test.confidence, calibrated.confidence)
    row = dataclasses.replace(row, chosen=chosen_method(calibrator), ranking=ranking)
    test_groups = None if groups is None else groups[1]
    return calibrator, _by_group(row, calibrated, test_groups, settings)


def _check_group_parts(
    cal: ClassifierOutputs, test: ClassifierOutputs, cal_groups: object, test_groups: object
) -> tuple[np.ndarray, np.ndarray] | None:
    """Both parts' group names (checked), or None without groups."""
    if cal_groups is None and test_groups is None:
        return None
    if cal_groups is None or test_groups is None:
        got = "cal_groups only" if test_groups is None else "test_groups only"
        raise InputError("cal_groups/test_groups", "both or neither", got)
    parts = []
    for name, out, g in (("cal_groups", cal, cal_groups), ("test_groups", test, test_groups)):
        checked = check_groups(g, out.n_samples, name)
        parts.append(np.asarray(checked.names)[checked.codes])
    return parts[0], parts[1]


def compare(
    cal: ClassifierOutputs,
    test: ClassifierOutputs,
    methods: Sequence[str] | None = None,
    *,
    n_bins: int = 15,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    mode: Mode = "top_label",
    source: str = "",
    params: Mapping[str, Mapping[str, Any]] | None = None,
    recommend: bool = False,
    cal_groups: object = None,
    test_groups: object = None,
) -> Comparison:
    """Fit each method on ``cal``, evaluate it on ``test``; the ``"none"`` row comes first.

    An error in any method propagates (no report is written from a partial comparison).

    Parameters
    ----------
    cal, test : ClassifierOutputs
        Calibration and test parts, with the same number of classes.
    methods : sequence of str, optional
        Calibrator names (default: :func:`applicable_methods`).
    n_bins, n_boot, level, seed, mode
        As in :func:`calibkit.metrics.evaluate` (``mode``: see :mod:`calibkit.core.binning`;
        ``level``: of the bootstrap intervals).
    source : str
        Where the outputs came from (kept in the result). Each step is logged (INFO).
    params : mapping, optional
        Calibrator parameters by method, e.g. ``{"temperature_ece": {"t_max": 10.0}}``.
    recommend : bool
        Also say which method to use (:class:`Recommendation`): ``auto``'s rule over the
        compared methods and temperature scaling, cross-fitted on ``cal`` (each candidate
        with its default parameters; ``n_folds`` times the fits).
    cal_groups, test_groups : array-like, optional
        One group (integer or string) per row of ``cal`` and of ``test`` (both or neither;
        at least 2 rows per group in each): per-group results for every row, and the
        calibrators that take groups (:func:`group_methods`) join the default methods.

    Returns
    -------
    Comparison
        Every row and the test part's ECE-versus-temperature curve.

    Examples
    --------
    >>> out = as_outputs([0, 1, 0, 1], logits=[[2.0, 0], [0, 2.0], [1.0, 0], [0, 1.0]])
    >>> [r.method for r in compare(out, out, ["temperature"], n_boot=0).rows]
    ['none', 'temperature']
    """
    _check_parts(cal, test)
    groups = _check_group_parts(cal, test, cal_groups, test_groups)
    every_class = np.unique(cal.labels).size == cal.n_classes
    names = resolve_methods(methods, cal.n_classes, cal.n_samples, every_class)
    declined = (
        {} if methods is not None else left_out_methods(cal.n_classes, cal.n_samples, every_class)
    )
    for line in left_out_lines(declined):  # said before the work, never silently dropped
        _log.info(f"not run by default: {line}")
    if groups is not None and methods is None:
        names += [m for m in group_methods(cal.n_classes) if m not in names]
    settings: dict[str, Any] = {
        "n_bins": n_bins,
        "n_boot": n_boot,
        "level": level,
        "seed": seed,
        "mode": mode,
    }
    fits: dict[str, Calibrator] = {}
    rows = _rows(cal, test, names, settings, params or {}, groups, fits)
    _log.info(f"the test part's ECE at {TEMPERATURE_GRID.size} temperatures (its figure)")
    curve = ece_temperature_curve(test.as_logits(), test.labels, TEMPERATURE_GRID, n_bins)
    # a twin by construction is cross-fitted once: auto takes the kind (fit_outputs)
    plain = [n for n in names if CALIBRATORS.kind_of(n) != "groups"]
    # the default methods' scopes say which are no candidates (named methods all are)
    skip = {} if methods is not None else scope_declined(plain, cal.n_classes, cal.n_samples, True)
    chosen = recommendation(cal, plain, seed, skip, fits) if recommend else None
    return Comparison(
        rows=rows,
        n_cal=cal.n_samples,
        n_test=test.n_samples,
        n_classes=cal.n_classes,
        n_bins=n_bins,
        temperatures=TEMPERATURE_GRID.copy(),
        ece_curve=curve,
        source=source,
        n_boot=n_boot,
        seed=seed,
        kind=cal.kind if cal.kind == test.kind else "mixed",
        recommendation=chosen,
        declined=declined,
    )


def _part_groups(groups: object, out: ClassifierOutputs, part: str) -> np.ndarray:
    """``groups`` of one part, checked: one per row, every group at least 2 rows there."""
    try:
        checked = check_groups(groups, out.n_samples)
    except InputError as exc:
        raise InputError("groups", f"{exc.expected} of the {part}", exc.got) from None
    return np.asarray(checked.names)[checked.codes]


def compare_parts(
    whole: ClassifierOutputs | None = None,
    *,
    cal: ClassifierOutputs | None = None,
    test: ClassifierOutputs | None = None,
    groups: object = None,
    cal_size: int | float | None = None,
    methods: Sequence[str] | None = None,
    source: str = "",
    n_bins: int = 15,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    mode: Mode = "top_label",
) -> Comparison:
    """``calibkit compare`` as one call: split ``whole`` (or take ``cal`` and ``test``),
    compare ``methods`` and choose the method to use.

    Parameters
    ----------
    whole : ClassifierOutputs, optional
        One set of outputs, split once into calibration and test parts by
        :func:`split_indices` (``cal_size``: a count or a fraction, default 0.5; ``seed``).
    cal, test : ClassifierOutputs, optional
        The two parts as given (instead of ``whole``; no ``cal_size`` then).
    groups : array-like or (array-like, array-like), optional
        With ``whole``: one group per row, split with the rows. With ``cal`` and ``test``:
        the groups of each part. Every group needs 2 rows in each part.
    methods, n_bins, n_boot, level, seed, mode
        As in :func:`compare` (``seed`` also seeds the split and the recommendation's folds).
    source : str
        Where the outputs came from; the split is added to it.

    Returns
    -------
    Comparison
        With its :class:`Recommendation`.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(200, 3)) * 3
    >>> y = z.argmax(1)
    >>> comp = compare_parts(as_outputs(y, logits=z), methods=["temperature"], n_boot=0)
    >>> comp.n_cal, comp.n_test, comp.recommendation.method, comp.source
    (100, 100, 'temperature', 'split 100 / 100 (seed 0)')
    """
    if (whole is None) == (cal is None or test is None) or (cal is None) != (test is None):
        raise InputError("whole/cal/test", "either whole or both cal and test", "a mix")
    part_groups: tuple[object, object] | None = None
    if whole is not None:
        if not isinstance(whole, ClassifierOutputs):
            raise InputError("whole", "ClassifierOutputs (from as_outputs)", type(whole).__name__)
        size = 0.5 if cal_size is None else cal_size
        try:
            cal_idx, test_idx = split_indices(whole.labels, size, seed)
        except InputError as exc:
            raise InputError("cal_size", exc.expected, exc.got) from None
        cal, test = _subset(whole, cal_idx), _subset(whole, test_idx)
        if groups is not None:
            checked = check_groups(groups, whole.n_samples)
            every = np.asarray(checked.names)[checked.codes]
            part_groups = (every[cal_idx], every[test_idx])
        split = f"split {cal.n_samples:,} / {test.n_samples:,} (seed {seed})"
        source = f"{source}, {split}" if source else split
    else:
        if cal_size is not None:
            raise InputError("cal_size", "no size with cal and test (already split)", "a size")
        if groups is not None:
            if not isinstance(groups, tuple | list) or len(groups) != 2:
                raise InputError("groups", "(cal groups, test groups) with cal and test", "one")
            part_groups = (groups[0], groups[1])
    assert cal is not None
    assert test is not None
    _check_parts(cal, test)
    if np.unique(cal.labels).size < 2:
        got = f"only label {int(cal.labels[0])}"
        raise InputError("calibration part", "at least 2 distinct labels", got)
    cal_g = test_g = None
    if part_groups is not None:
        cal_g = _part_groups(part_groups[0], cal, "calibration part")
        test_g = _part_groups(part_groups[1], test, "test part")
    return compare(
        cal,
        test,
        methods,
        n_bins=n_bins,
        n_boot=n_boot,
        level=level,
        seed=seed,
        mode=mode,
        source=source,
        recommend=True,
        cal_groups=cal_g,
        test_groups=test_g,
    )
