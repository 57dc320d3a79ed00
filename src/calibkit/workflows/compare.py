"""Compare post-hoc calibrators on held-out data: fit on one part, judge on the other.

:func:`~calibkit.core.splits.split_outputs` makes a seeded, stratified calibration / test
split of one set of classifier outputs; :func:`compare` fits every requested calibrator on
the calibration part and evaluates it on the test part with :func:`calibkit.metrics.evaluate`
(every metric, bootstrap intervals and noise floors). The uncalibrated model is the first
row, named ``"none"``; the rows and what they say together are a
:class:`~calibkit.workflows.comparison.Comparison`.

Every row is evaluated with the same ``seed``, so all methods are judged on the same
bootstrap resamples of the test part (a paired comparison).

Default methods: :func:`~calibkit.workflows.methods.applicable_methods`, the registry's
defaults without those whose declared scope (:mod:`calibkit.core.catalog`) declines the
data or that need every class; ``"auto"`` repeats one of the other rows, so it runs only
when named (its row names the method it chose, ``chosen``, with that method's parameters).
Name a declined method to include it anyway. None is dropped silently: each is logged with
its reason before the work and kept in :attr:`Comparison.declined` (the report says them).

What the rows say together is read from :class:`Comparison`: :attr:`Comparison.same_maps`
(a map equal to an earlier row's by construction is fitted once, :func:`reused_fits`: the
later row reuses its fit, test probabilities and evaluation, fit time 0),
:attr:`Comparison.accuracy_changed` (only a map that is not monotone within a sample can
change the predicted class) and each row's :attr:`MethodResult.ranking`
(:func:`calibkit.metrics.selective.ranking_change`, all that the selective-prediction
metrics see: histogram binning and isotonic regression create ties; temperature scaling
keeps the ranking of two classes but can reorder samples on several).

Calibration per group (``cal_groups=`` and ``test_groups=``, one group per row of each
part): every row also gets its per-group evaluation on the test part
(:attr:`MethodResult.groups`, :func:`calibkit.metrics.groups.evaluate_groups`) and its
reliability bins per group; the calibrators of kind ``groups`` (:func:`group_methods`) join
the default list, fitted with the calibration part's groups and predicting with the test
part's (a group absent from the calibration part gets the global map).

Which calibrator to use (``recommend=True``): :class:`Recommendation`, chosen on the
calibration part alone among the calibrators without groups. The calibration part gives
no per-group judgement of the group-aware ones, so the group rule is read on the test part
and said beside it (:attr:`Comparison.smallest_gap`), not folded into it; a report says
both, with both gaps and whether their intervals overlap.

:func:`compare_parts` is the whole workflow of ``calibkit compare``: one set of outputs
split once (seeded, stratified; its groups follow their rows) or the two parts as given,
checked, compared and the method to use chosen.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from calibkit.calibrators import CALIBRATORS, Calibrator, create_calibrator, ece_temperature_curve
from calibkit.calibrators.scope import declined as scope_declined
from calibkit.core.errors import InputError
from calibkit.core.groups import check_groups
from calibkit.core.options import Binning, Resampling
from calibkit.core.outputs import ClassifierOutputs, as_outputs
from calibkit.core.progress import Phase, time_left_text
from calibkit.core.splits import split_indices, take
from calibkit.metrics import evaluate, reliability_stats
from calibkit.metrics.calibration_tests import calibration_tests
from calibkit.metrics.groups import evaluate_groups
from calibkit.metrics.intervals import ece_interval
from calibkit.metrics.samples import nll_per_sample
from calibkit.metrics.selective import RankingChange, ranking_change, risk_coverage_curve
from calibkit.workflows.comparison import TEMPERATURE_GRID, Comparison, MethodResult
from calibkit.workflows.methods import (
    SAME_MAP_REASONS,
    UNCALIBRATED,
    chosen_method,
    group_methods,
    left_out_lines,
    left_out_methods,
    resolve_methods,
    same_fit,
    same_maps,
    summarize_params,
)
from calibkit.workflows.recommendation import recommendation

__all__ = ["compare", "compare_parts", "reused_fits"]

_log = logging.getLogger(__name__)


class _Options(NamedTuple):
    """How every row is judged: its bins and its intervals."""

    binning: Binning
    resampling: Resampling


def _judge(
    method: str,
    test: ClassifierOutputs,
    params: dict[str, float],
    seconds: float,
    settings: _Options,
    phase: Phase | None = None,
) -> MethodResult:
    """``method``'s row on ``test`` (its calibrated outputs); ``phase``: a step after
    the calibration tests, the metrics and the risk-coverage curve. With intervals, the
    row keeps each test sample's NLL (the paired differences between rows)."""
    binning, resampling = settings
    reliability = reliability_stats(test, n_bins=binning.n_bins, mode=binning.mode)
    tests = calibration_tests(test, mode=binning.mode)
    _step(phase, "calibration tests")
    evaluation = evaluate(test, binning=binning, resampling=resampling)
    _step(phase, "metrics")
    terms = nll_per_sample(test) if resampling.n_boot else None
    true_ece = ece_interval(test, n_bins=binning.n_bins, mode=binning.mode, level=resampling.level)
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
    row: MethodResult, test: ClassifierOutputs, groups: np.ndarray | None, settings: _Options
) -> MethodResult:
    """``row`` with its per-group results on ``test`` (unchanged without groups)."""
    if groups is None:
        return row
    binning = settings.binning
    per_group = evaluate_groups(test, groups=groups, **settings._asdict())
    bins = {
        g: reliability_stats(
            take(test, np.flatnonzero(groups == g)), n_bins=binning.n_bins, mode=binning.mode
        )
        for g in per_group.names
    }
    return dataclasses.replace(row, groups=per_group, group_reliability=bins)


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
    settings: _Options,
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
    settings: _Options,
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
    binning: Binning = Binning(),
    resampling: Resampling = Resampling(),
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
        Calibrator names (default: :func:`~calibkit.workflows.methods.applicable_methods`).
    binning, resampling
        As in :func:`calibkit.metrics.evaluate` (``resampling.seed`` also seeds the
        recommendation's folds).
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
    >>> none = Resampling(n_boot=0)
    >>> [r.method for r in compare(out, out, ["temperature"], resampling=none).rows]
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
    settings = _Options(binning, resampling)
    n_bins, seed = binning.n_bins, resampling.seed
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
        resampling=resampling,
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
    binning: Binning = Binning(),
    resampling: Resampling = Resampling(),
) -> Comparison:
    """``calibkit compare`` as one call: split ``whole`` (or take ``cal`` and ``test``),
    compare ``methods`` and choose the method to use.

    Parameters
    ----------
    whole : ClassifierOutputs, optional
        One set of outputs, split once into calibration and test parts by
        :func:`~calibkit.core.splits.split_indices` (``cal_size``: a count or a fraction,
        default 0.5; ``resampling.seed``).
    cal, test : ClassifierOutputs, optional
        The two parts as given (instead of ``whole``; no ``cal_size`` then).
    groups : array-like or (array-like, array-like), optional
        With ``whole``: one group per row, split with the rows. With ``cal`` and ``test``:
        the groups of each part. Every group needs 2 rows in each part.
    methods, binning, resampling
        As in :func:`compare` (``resampling.seed`` also seeds the split).
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
    >>> comp = compare_parts(as_outputs(y, logits=z), methods=["temperature"],
    ...                      resampling=Resampling(n_boot=0))
    >>> comp.n_cal, comp.n_test, comp.recommendation.method, comp.source
    (100, 100, 'temperature', 'split 100 / 100 (seed 0)')
    """
    if (whole is None) == (cal is None or test is None) or (cal is None) != (test is None):
        raise InputError("whole/cal/test", "either whole or both cal and test", "a mix")
    part_groups: tuple[object, object] | None = None
    seed = resampling.seed
    if whole is not None:
        if not isinstance(whole, ClassifierOutputs):
            raise InputError("whole", "ClassifierOutputs (from as_outputs)", type(whole).__name__)
        size = 0.5 if cal_size is None else cal_size
        try:
            cal_idx, test_idx = split_indices(whole.labels, size, seed)
        except InputError as exc:
            raise InputError("cal_size", exc.expected, exc.got) from None
        cal, test = take(whole, cal_idx), take(whole, test_idx)
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
        binning=binning,
        resampling=resampling,
        source=source,
        recommend=True,
        cal_groups=cal_g,
        test_groups=test_g,
    )
