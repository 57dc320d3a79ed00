"""Automatic choice of a calibrator by cross-validation on the calibration set.

``AutoCalibrator`` ("auto") splits the calibration set into ``n_folds`` stratified folds
(shuffled with ``seed``), fits every candidate method on each ``n_folds - 1`` folds, and
scores it on the held-out fold by ``criterion``: a proper score, ``"nll"`` (the default) or
``"brier"``, or top-label ``"ece"`` with ``n_bins`` equal-width bins. Every candidate is
scored on the same folds, so its held-out losses are paired with the baseline's
(``baseline``, temperature scaling by default) sample by sample (fold by fold for ECE).

The rule (``rule="margin"``, the default): the simpler method wins unless the richer one is
better beyond the noise of those folds. A candidate beats the baseline when its mean paired
difference is below zero by more than :data:`MARGIN_SE` (3.5) standard errors of that mean;
among those that do, the lowest mean score is chosen, and if none does, the baseline is.
The chosen method is refitted on the whole calibration set; ``predict_proba`` delegates to
it. ``rule="one_se"`` is the rule before issue #43 (one standard error), ``rule="lowest"``
the one before that (the lowest mean score, the first listed on a tie).

The rule's own error rate (issue #43, item 6) is measured in
``experiments/intervals/auto_rule.md``: over its 1,120 draws of calibration and test sets,
the method this rule chose never had a test NLL above temperature scaling's (with one
standard error: above 1.01x in 115). Brier and ECE use the multiple measured for NLL.

Small data degrades the cross-validation, it does not refuse it: with a class of fewer
than ``n_folds`` rows, the folds are as many as that class has; with a class of one row,
they are unstratified (and the methods that need every class in a fold's training part are
left out); a candidate whose fit fails on some fold is left out, and said; with fewer than
4 samples, or no candidate left but the baseline, the baseline is fitted and the reason
said by ``reason_`` (why the choice, in words, from the fitted state).

Candidates: ``methods`` names them (taken as named); by default every registered method
that applies to the data's number of classes (binary-only methods only for two classes),
except ``"auto"`` itself and the grid-search ``"temperature_ece"`` (name it to include it),
and without the methods that need every class
(:attr:`~calibkit.calibrators.base.Calibrator.needs_every_class`) when a class is absent
from the labels or from a fold's training part, and without those whose declared scope
(:mod:`calibkit.calibrators.scope`, on the registry entry) declines the data's number of
classes and calibration samples: each is said, with its one-line reason (``declined_``).
Names are looked up in the registry at fit time, so methods registered later are
candidates too. The matrix family (vector, matrix, MS-ODIR, Dirichlet) enters unshrunk
(``shrink="none"``, :func:`candidate`): ``auto``'s own paired comparison with temperature
scaling is the guard that their shrinkage is elsewhere. Nested in ``auto``, their
shrinkage's cross-validation made a CIFAR-100 fit of 5,000 rows take minutes instead of
seconds, and more single splits worse than TS (``docs/selection.md``).

The cross-fitting shares work:

- **A penalty tuned once.** A candidate that chooses its own penalty by cross-validation
  (:data:`TUNED_ONCE`: MS-ODIR's and Dirichlet's ``lam``, ``sms_cv``'s scale) is fitted
  once on the whole calibration set, its search run on ``auto``'s own folds (the same
  ``n_folds`` and seed, stratified alike), and cross-fitted at the value it chose: one fit
  per fold instead of a nested search per fold (on CIFAR-100 at 5,000 rows, MS-ODIR's and
  Dirichlet's 10 nested searches of 7 penalties x 5 folds became 2, and 1 on
  probabilities). That whole-set fit is the refit when it is chosen. A caller that has
  fitted it so on the same outputs hands it in (``fit_outputs(fitted=...)``: ``calibkit
  compare`` passes its ``sms_cv`` row, and on CIFAR-100 that search is not run twice).
  The held-out rows helped choose the penalty of their own fold's fit, a one-of-seven
  choice on a smooth curve; ``docs/selection.md`` measures the effect on the choice and
  the test NLL.
- **One map, one fit.** On probabilities (:meth:`AutoCalibrator.fit_outputs` with
  ``kind == "probs"``) Dirichlet calibration is MS-ODIR's map (:data:`SAME_MAPS_ON_PROBS`):
  the later of the two in the candidate list is not fitted, its held-out scores are the
  earlier one's, and the summary says so (``same_as_``).
- **The baseline first.** In each fold the baseline (temperature scaling) is fitted
  first and every candidate gets the same training arrays, so the candidates that centre
  on temperature scaling fit it on the same rows (a fit the solvers share).

Fitted state: ``chosen_`` (the method name), ``cv_scores_`` (name -> mean score),
``cv_fold_scores_`` (name -> per-fold scores), ``paired_`` (name -> ``[mean difference
from the baseline, its standard error]``), ``folds_used_``, ``stratified_``, ``dropped_``
(candidates whose fit failed on a fold), ``declined_`` (default candidates declined by
their scope -> why), ``same_as_`` (a candidate -> the one whose map and scores it shares)
and ``chosen_state_``, the chosen calibrator's
:meth:`~calibkit.calibrators.base.Calibrator.to_json` dict, from which a loaded
``AutoCalibrator`` rebuilds it on first use. :meth:`AutoCalibrator.summary` says what was
picked and why.

>>> rng = np.random.default_rng(0)
>>> z = rng.normal(size=(600, 3)) * 4
>>> y = np.array([rng.choice(3, p=np.exp(r / 4) / np.exp(r / 4).sum()) for r in z])
>>> auto = AutoCalibrator(methods=["temperature", "histogram"]).fit(z, y)
>>> auto.chosen_
'temperature'
>>> print(auto.summary())  # doctest: +ELLIPSIS
auto chose 'temperature': no candidate beat temperature's NLL by more than 3.5 standard errors
(5 stratified folds, seed 0)
  temperature  0.88...  <- chosen
  histogram    1.03...  +0.1... ± 0.0... vs temperature
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar, Literal, Self

import numpy as np

from calibkit.calibrators.base import CALIBRATORS, F64, Calibrator, create_calibrator
from calibkit.calibrators.fitted import check_input_kind
from calibkit.calibrators.scope import declined as scope_declined
from calibkit.core import validation as v
from calibkit.core.binning import N_BINS
from calibkit.core.errors import InputError
from calibkit.core.fitted_state import MappingOf
from calibkit.core.outputs import ClassifierOutputs, as_outputs
from calibkit.core.params import param
from calibkit.core.progress import Phase
from calibkit.metrics import brier, ece, nll
from calibkit.metrics.samples import brier_per_sample, nll_per_sample

if TYPE_CHECKING:
    from torch import nn

Criterion = Literal["nll", "brier", "ece"]
CRITERIA: tuple[str, ...] = ("nll", "brier", "ece")
Rule = Literal["margin", "one_se", "lowest"]
RULES: tuple[str, ...] = ("margin", "one_se", "lowest")
#: How many standard errors of its paired difference a candidate must beat the baseline by
#: under ``rule="margin"`` (``"one_se"``: 1): 3.25 was the smallest never above 1.01x TS's
#: test NLL in ``experiments/intervals/auto_rule.md``; 3.5 leaves room.
MARGIN_SE = 3.5
#: The multiple of the standard error of each rule that compares with the baseline.
RULE_SE: dict[str, float] = {"margin": MARGIN_SE, "one_se": 1.0}
#: The fewest samples cross-validated (two folds of two); below, the baseline is fitted.
MIN_SAMPLES = 4
log = logging.getLogger(__name__)


def named_only() -> list[str]:
    """The registered calibrators run only when named: the entries registered with
    ``default=False`` (by ``auto`` and by ``compare``), ``"auto"`` itself aside.

    Examples
    --------
    >>> "venn_abers" in named_only(), "temperature" in named_only(), "auto" in named_only()
    (True, False, False)
    """
    defaults = CALIBRATORS.defaults(kind="logits")
    return [n for n in CALIBRATORS.names(kind="logits") if n != "auto" and n not in defaults]


def default_candidates() -> list[str]:
    """The registered calibrators ``auto`` tries when given no ``methods`` (before the
    filters of :meth:`AutoCalibrator.candidates`): the default entries
    (:meth:`~calibkit.core.registry.Registry.defaults`) not registered with
    ``auto_candidate=False`` (``temperature_ece``, whose criterion is ECE alone).

    Examples
    --------
    >>> "temperature" in default_candidates(), "temperature_ece" in default_candidates()
    (True, False)
    """
    return [
        n
        for n in CALIBRATORS.defaults(kind="logits")
        if CALIBRATORS.info(n).get("auto_candidate", True)
    ]


def candidate(name: str, **params: object) -> Calibrator:
    """The calibrator ``name`` as ``auto`` tries it (with ``params`` besides): a method that
    shrinks itself toward temperature scaling by its own cross-validation (``shrink``)
    enters in its published, unshrunk form, since ``auto``'s cross-fitting against
    temperature scaling is that guard.

    >>> candidate("ms_odir").shrink, candidate("temperature").get_params()
    ('none', {'t_min': 0.1, 't_max': 10.0})
    >>> candidate("ms_odir", reg_lambda=0.1).reg_lambda
    0.1
    """
    klass = CALIBRATORS.get(name)
    unshrunk = {"shrink": "none"} if "shrink" in klass.param_constraints else {}
    return create_calibrator(name, **unshrunk, **params)


def enters_unshrunk(name: str) -> bool:
    """Whether :func:`candidate` enters ``name`` in its unshrunk form (a method that shrinks
    itself towards temperature scaling by default: the matrix family, vector, matrix,
    MS-ODIR and Dirichlet), so that its cross-fitted score is not that of the shrunk fit of
    its own row in a comparison.

    >>> enters_unshrunk("matrix"), enters_unshrunk("ms_odir"), enters_unshrunk("temperature")
    (True, True, False)
    """
    if name not in CALIBRATORS or "shrink" not in CALIBRATORS.get(name).param_constraints:
        return False
    return create_calibrator(name).get_params().get("shrink") != "none"


def _fixed_odir(fitted: Calibrator) -> dict[str, object]:
    return {"reg_lambda": fitted.reg_lambda_, "reg_mu": fitted.reg_mu_}  # type: ignore[attr-defined]


def _fixed_scale(fitted: Calibrator) -> dict[str, object]:
    return {"scale_grid": [fitted.reg_scale_]}  # type: ignore[attr-defined]


#: The candidates that choose a penalty by their own cross-validation, and the parameters
#: that fix it at the value a fitted one chose. ``auto`` tunes each once, on the whole
#: calibration set with its own folds (its ``n_folds`` and ``seed`` passed to the method:
#: the same stratified folds), and cross-fits it at that value (see the module doc).
TUNED_ONCE: dict[str, Callable[[Calibrator], dict[str, object]]] = {
    "ms_odir": _fixed_odir,
    "dirichlet": _fixed_odir,
    "sms_cv": _fixed_scale,
}

#: Pairs of candidates that fit the same map by construction when the inputs are
#: probabilities (``kind == "probs"``): Dirichlet calibration is MS-ODIR's map on
#: log-probabilities, and those are the inputs then (``log_softmax(log p) = log p``; the
#: rule of ``calibkit.workflows.methods.same_maps``). The later of a pair is not fitted:
#: its held-out scores are the earlier one's.
SAME_MAPS_ON_PROBS: tuple[tuple[str, str], ...] = (("ms_odir", "dirichlet"),)


def same_maps(names: Sequence[str], kind: str) -> dict[str, str]:
    """Each of ``names`` whose map is an earlier one's by construction on inputs of
    ``kind`` (:data:`SAME_MAPS_ON_PROBS`), mapped to that earlier one.

    >>> same_maps(["temperature", "dirichlet", "ms_odir"], "probs")
    {'ms_odir': 'dirichlet'}
    >>> same_maps(["temperature", "dirichlet", "ms_odir"], "logits")
    {}
    """
    order = list(names)
    marks: dict[str, str] = {}
    if kind != "probs":
        return marks
    for pair in SAME_MAPS_ON_PROBS:
        if all(m in order for m in pair):
            first, later = sorted(pair, key=order.index)
            marks[later] = first
    return marks


def choose(
    means: Mapping[str, float],
    paired: Mapping[str, Sequence[float]],
    baseline: str,
    rule: str,
) -> str:
    """The method ``rule`` picks from the cross-validated scores: ``means`` (name -> mean
    score, in candidate order) and ``paired`` (name -> ``[mean difference from the
    baseline, its standard error]``), as :attr:`AutoCalibrator.cv_scores_` and
    :attr:`AutoCalibrator.paired_` hold them (see the module doc).

    A gain of 2.5 standard errors passes the old rule (one standard error), not the default
    (:data:`MARGIN_SE`, 3.5):

    >>> means, paired = {"temperature": 0.30, "vector": 0.29}, {"vector": [-0.01, 0.004]}
    >>> [choose(means, paired, "temperature", rule) for rule in ("one_se", "margin")]
    ['vector', 'temperature']
    >>> choose(means, {"vector": [-0.01, 0.002]}, "temperature", "margin")  # 5 standard errors
    'vector'
    >>> choose({}, {}, "temperature", "margin")  # nothing cross-validated: the baseline
    'temperature'
    """
    if not means:  # too few samples, or every candidate failed: the baseline
        return baseline
    if rule == "lowest" or baseline not in means:
        return min(means, key=lambda name: means[name])  # first listed on a tie
    m = RULE_SE[rule]
    better = [name for name, (d, se) in paired.items() if d + m * se < 0]
    return min(better, key=lambda name: means[name]) if better else baseline


def margin_words(rule: str = "margin") -> str:
    """How far a candidate must beat the baseline under ``rule``, in words.

    >>> margin_words(), margin_words("one_se")
    ('3.5 standard errors', 'one standard error')
    """
    m = RULE_SE.get(rule, 1.0)
    return "one standard error" if m == 1.0 else f"{m:g} standard errors"


class _SavedCalibrator(v.Constraint):
    """A fitted calibrator's :meth:`~calibkit.calibrators.base.Calibrator.to_json` dict,
    checked by rebuilding it (see :meth:`~calibkit.calibrators.base.Calibrator.from_json`)."""

    def check(self, name: str, value: object) -> object:
        Calibrator.from_json(value, source=name)
        return value

    def describe(self) -> str:
        return "a saved calibrator"


class _MethodName(v.Constraint):
    """The name of a registered calibrator of logits for any number of classes."""

    def check(self, name: str, value: object) -> str:
        ok = isinstance(value, str) and value in CALIBRATORS.names() and value != "auto"
        klass = CALIBRATORS.get(value) if ok else None  # type: ignore[arg-type]
        if klass is None or klass.binary_only or klass.kind != "logits":
            raise InputError(name, self.describe(), repr(value))
        return str(value)

    def describe(self) -> str:
        return "a registered calibrator of logits for any number of classes"


class _MethodNames(v.Constraint):
    """A list of registered calibrator names."""

    def check(self, name: str, value: object) -> list[str]:
        if not isinstance(value, list) or not all(
            isinstance(n, str) and n in CALIBRATORS.names(kind="logits") for n in value
        ):
            raise InputError(name, self.describe(), repr(value)[:80])
        return list(value)

    def describe(self) -> str:
        return "a list of registered calibrators of logits"


class AutoCalibrator(Calibrator):
    """Pick the calibrator with the best cross-validated ``criterion`` (see the module doc).

    Attributes
    ----------
    chosen_ : str
        The method picked; ``chosen`` is the calibrator itself, refitted on all the data.
    cv_scores_ : dict
        Mean held-out score of each candidate.

    Examples
    --------
    >>> AutoCalibrator(methods=["temperature", "platt"], criterion="ece").get_params()
    ... # doctest: +NORMALIZE_WHITESPACE
    {'methods': ['temperature', 'platt'], 'criterion': 'ece', 'n_folds': 5, 'seed': 0,
     'n_bins': 15, 'rule': 'margin', 'baseline': 'temperature'}
    """

    state_constraints: ClassVar[v.Constraints] = {
        "cv_scores_": MappingOf(v.Real()),
        "cv_fold_scores_": MappingOf(v.ListOf(v.Real(), as_list=True)),
        "paired_": MappingOf(v.ListOf(v.Real(), as_list=True)),
        "folds_used_": v.Integer(0, 100),
        "stratified_": v.Boolean(),
        "dropped_": _MethodNames(),
        "declined_": MappingOf(v.String()),
        "same_as_": MappingOf(v.String()),
        "chosen_": v.String(),
        "chosen_state_": _SavedCalibrator(),
    }
    methods: Sequence[str] | None = param(
        default=None,
        check=v.NoneOr(v.ListOf(v.String(), as_list=True)),
        doc="The candidates (not ``'auto'``); ``None``: every method of "
        ":func:`default_candidates` that applies.",
    )
    criterion: Criterion = param(
        default="nll", check=v.Choice(*CRITERIA), doc="The held-out score to minimise."
    )
    n_folds: int = param(
        default=5,
        check=v.Integer(2, 100),
        doc="Stratified folds, shuffled with ``seed`` (fewer on small classes).",
    )
    seed: int = param(default=0, check=v.SEED, doc="Seed of the fold assignment.")
    n_bins: int = param(default=15, check=N_BINS, doc="Equal-width bins of the ECE criterion.")
    rule: Rule = param(
        default="margin",
        check=v.Choice(*RULES),
        doc="``'margin'``: the baseline unless a candidate beats it by more than "
        ":data:`MARGIN_SE` (3.5) standard errors of the paired difference (its measured error "
        "rate: the module doc); ``'one_se'``: by more than one (the rule before issue #43); "
        "``'lowest'``: the lowest mean score.",
    )
    baseline: str = param(
        default="temperature",
        check=_MethodName(),
        doc="The simple method the others must beat.",
    )

    def _check_params(self) -> None:
        if self.methods is not None and "auto" in self.methods:
            raise InputError("methods", "names other than 'auto'", repr(self.methods))
        # the working state of a fit (none yet)
        self._chosen: Calibrator | None = None
        self._outputs: ClassifierOutputs | None = None  # what fit_outputs passes to _fit
        self._given: dict[str, Calibrator] = {}  # fit_outputs' ``fitted``
        self._input_kind = "logits"  # what fit was told the logits are: its candidates too

    def candidates(
        self, n_classes: int, every_class: bool = True, n_samples: int | None = None
    ) -> list[str]:
        """The method names cross-validated for data with ``n_classes`` classes and
        ``n_samples`` calibration samples (None: not known). By default: the entries of
        :func:`default_candidates` whose declared scope does not decline the data
        (:meth:`declined`), the binary-only ones for two classes only, and without the
        methods that need every class when ``every_class`` is False (a class is absent from
        the labels or from a fold's training part). Named ``methods`` are taken as named.

        >>> auto = AutoCalibrator()
        >>> "temperature" in auto.candidates(100, n_samples=5000)
        True
        >>> "matrix" in auto.candidates(10, n_samples=5000), "matrix" in auto.candidates(100)
        (True, False)
        """
        if self.methods is None:
            left_out = self.declined(n_classes, n_samples)
            return [
                name
                for name in default_candidates()
                if name not in left_out
                and (n_classes == 2 or not CALIBRATORS.get(name).binary_only)
                and (every_class or not CALIBRATORS.get(name).needs_every_class)
            ]
        for name in self.methods:
            if CALIBRATORS.get(name).binary_only and n_classes != 2:
                raise InputError(
                    "methods",
                    f"methods that apply to {n_classes} classes",
                    f"{name!r}, a binary-only method",
                )
        return list(self.methods)

    def declined(self, n_classes: int, n_samples: int | None = None) -> dict[str, str]:
        """The default candidates (``methods=None``) whose declared scope
        (:func:`~calibkit.calibrators.scope.declined`, as a candidate:
        :meth:`~calibkit.calibrators.scope.Scope.declines_cross_fit`) excludes ``n_classes``
        classes and ``n_samples`` calibration samples, each with its one-line reason; named
        ``methods`` are never declined.

        >>> AutoCalibrator().declined(100, 5000)["matrix"][:27]
        'declined from 50 classes on'
        >>> AutoCalibrator(methods=["temperature", "matrix"]).declined(100, 5000)
        {}
        """
        if self.methods is not None:
            return {}
        names = [
            name
            for name in default_candidates()
            if n_classes == 2 or not CALIBRATORS.get(name).binary_only
        ]
        return scope_declined(names, n_classes, n_samples, cross_fit=True)

    def fit_outputs(
        self,
        out: ClassifierOutputs,
        sample_weight: object = None,
        fitted: Mapping[str, Calibrator] | None = None,
    ) -> Self:
        """Fit on a :class:`~calibkit.core.outputs.ClassifierOutputs`, keeping its kind:
        on probabilities (``out.kind == "probs"``) the candidates get the log-probabilities,
        declared so (``input_kind="probs"``), and the pairs of :data:`SAME_MAPS_ON_PROBS`
        are cross-fitted once (``dirichlet`` takes ``ms_odir``'s held-out scores).
        :meth:`fit` takes logits, or log-probabilities with ``input_kind="probs"`` (its
        candidates fitted on them as such, every one fitted).

        ``fitted``: calibrators the caller has already fitted on these same outputs
        (``out.as_logits()`` and ``out.labels``, unweighted), by name. One of
        :data:`TUNED_ONCE` whose parameters are those ``auto`` would tune it with
        (``candidate(name, n_folds=n_folds, seed=seed)``) is taken as its tuned
        whole-set fit instead of fitting it again (``calibkit compare`` passes its rows'
        fits); any other is ignored. The caller vouches for the data: ``auto`` checks the
        parameters, the number of classes and that it is fitted.

        >>> rng = np.random.default_rng(0)
        >>> p = rng.dirichlet(np.ones(3), size=300)
        >>> y = np.array([rng.choice(3, p=row) for row in p])
        >>> methods = ["temperature", "ms_odir", "dirichlet"]
        >>> auto = AutoCalibrator(methods=methods).fit_outputs(as_outputs(y, probs=p))
        >>> auto.same_as_, auto.cv_scores_["dirichlet"] == auto.cv_scores_["ms_odir"]
        ({'dirichlet': 'ms_odir'}, True)
        """
        self._outputs = as_outputs(out)
        self._given = dict(fitted or {})
        try:
            z, labels = self._outputs.as_logits(), self._outputs.labels
            return self.fit(z, labels, sample_weight, input_kind=self._outputs.kind)
        finally:
            self._outputs, self._given = None, {}

    def fit(
        self,
        logits: object,
        labels: object,
        sample_weight: object = None,
        *,
        input_kind: str = "logits",
        **metadata: object,
    ) -> Self:
        """Cross-fit the candidates and refit the chosen one (see the module docstring);
        ``input_kind`` as for :meth:`Calibrator.fit <calibkit.calibrators.base.Calibrator.fit>`,
        declared to every candidate's fit (those that are not shift-invariant record it)."""
        self._input_kind = check_input_kind(input_kind)
        return super().fit(logits, labels, sample_weight, input_kind=input_kind, **metadata)

    def _check_fit_input(self, logits: object, labels: object) -> ClassifierOutputs:
        checked = super()._check_fit_input(logits, labels)
        return checked if self._outputs is None else self._outputs

    def _fit(self, out: ClassifierOutputs, weights: F64 | None = None) -> None:
        z = np.asarray(out.as_logits(), dtype=np.float64)
        labels, kind = out.labels, self._input_kind
        folds, stratified = self._folds(labels)
        names: list[str] = []
        if folds:
            seen = min(np.unique(labels[train]).size for train, _ in folds)
            every = seen == out.n_classes
            names = self.candidates(out.n_classes, every_class=every, n_samples=labels.shape[0])
        same = same_maps(names, out.kind)
        # the baseline first in each fold
        fitted = sorted(
            (name for name in names if name not in same),
            key=lambda name: name != self.baseline,
        )
        failed: set[str] = set()
        tuned = self._tune_once(z, labels, [n for n in fitted if n in TUNED_ONCE], failed)
        scores: dict[str, list[float]] = {name: [] for name in names}
        held: dict[str, F64] = {name: np.empty(labels.shape[0]) for name in names}
        # fold by fold, every candidate in each: the time per fold is alike, so the time
        # left said after the first fold holds (candidate by candidate, cheap ones first, it
        # did not); each fit is the same, so are the scores
        label = f"cross-fitting {len(fitted)} methods x {len(folds)} folds"
        phase = Phase(log, label, len(fitted) * len(folds))
        for f, (train, test) in enumerate(folds, 1):
            z_train, y_train, z_test, y_test = z[train], labels[train], z[test], labels[test]
            for name in fitted:
                if name not in failed:
                    fixed = TUNED_ONCE[name](tuned[name]) if name in tuned else {}
                    try:
                        cal = candidate(name, **fixed).fit(z_train, y_train, input_kind=kind)
                        probs = cal.predict_proba(z_test)
                        scores[name].append(self._score(y_test, probs))
                        held[name][test] = self._losses(y_test, probs)
                    except InputError:  # e.g. a fold too small for the method's own settings
                        failed.add(name)
                phase.step(f"fold {f}/{len(folds)} {name}")
        for later, first in same.items():  # the same map: the same held-out scores
            scores[later], held[later] = scores[first], held[first]
            if first in failed:
                failed.add(later)
        dropped = [name for name in names if name in failed]
        fold_scores = {name: list(scores[name]) for name in names if name not in failed}
        losses = {name: held[name] for name in names if name not in failed}
        self.cv_scores_ = {name: float(np.mean(s)) for name, s in fold_scores.items()}
        self.cv_fold_scores_ = fold_scores
        self.paired_ = self._paired(fold_scores, losses)
        self.folds_used_, self.stratified_, self.dropped_ = len(folds), stratified, dropped
        self.declined_ = self.declined(out.n_classes, labels.shape[0]) if folds else {}
        self.same_as_ = {later: first for later, first in same.items() if later not in failed}
        best = choose(self.cv_scores_, self.paired_, self.baseline, self.rule)
        refit = best not in tuned  # the whole-set fit of a tuned candidate is its refit
        chosen = candidate(best).fit(z, labels, input_kind=kind) if refit else tuned[best]
        self.chosen_ = best
        self.chosen_state_ = chosen.to_json()
        self._chosen = chosen

    def _tune_once(
        self, z: F64, labels: np.ndarray, names: list[str], failed: set[str]
    ) -> dict[str, Calibrator]:
        """Each of ``names`` (of :data:`TUNED_ONCE`) fitted on the whole calibration set,
        its penalty chosen by its own cross-validation on ``auto``'s folds; a refusal adds
        the name to ``failed``."""
        tuned: dict[str, Calibrator] = {}
        if not names:
            return tuned
        folds = {"n_folds": self.n_folds, "seed": self.seed}
        for name in names:
            given = self._given.get(name)
            if given is not None and self._same_tuning(
                given, name, folds, z.shape[1], self._input_kind
            ):
                log.info(f"{name}: its penalty as the caller's fit on these data chose it")
                tuned[name] = given
        names = [name for name in names if name not in tuned]
        if not names:
            return tuned
        phase = Phase(log, f"tuning {len(names)} methods' penalties once", len(names))
        for name in names:
            try:
                tuned[name] = candidate(name, **folds).fit(z, labels, input_kind=self._input_kind)
            except InputError:
                failed.add(name)
            phase.step(name)
        return tuned

    @staticmethod
    def _same_tuning(
        given: Calibrator, name: str, folds: Mapping[str, int], k: int, kind: str
    ) -> bool:
        """Whether ``given`` is ``name`` fitted with the parameters ``auto`` tunes it with
        (``folds``: its ``n_folds`` and seed), on ``k`` classes, of the declared input
        ``kind`` (where its map depends on it)."""
        own = candidate(name, **folds)
        return (
            given.name == own.name
            and given.is_fitted
            and getattr(given, "n_classes_", None) == k
            and given.get_params() == own.get_params()
            and given.fitted_input_kind() in (None, kind)
        )

    def _folds(self, labels: np.ndarray) -> tuple[list[tuple[np.ndarray, np.ndarray]], bool]:
        """The folds (none below :data:`MIN_SAMPLES`) and whether they are stratified."""
        n = labels.shape[0]
        if n < MIN_SAMPLES:
            return [], True
        # lazy: sklearn costs seconds at import
        from sklearn.model_selection import KFold, StratifiedKFold

        smallest = int(np.unique(labels, return_counts=True)[1].min())
        k = min(self.n_folds, smallest)
        if k >= 2:
            skf = StratifiedKFold(n_splits=k, shuffle=True, random_state=self.seed)
            return list(skf.split(np.zeros((n, 1)), labels)), True
        kf = KFold(n_splits=min(self.n_folds, n // 2), shuffle=True, random_state=self.seed)
        return list(kf.split(np.zeros((n, 1)))), False

    def _score(self, labels: np.ndarray, probs: F64) -> float:
        if self.criterion == "ece":
            return ece(labels, probs=probs, n_bins=self.n_bins)
        return nll(labels, probs=probs) if self.criterion == "nll" else brier(labels, probs=probs)

    def _losses(self, labels: np.ndarray, probs: F64) -> F64:
        """Each sample's held-out log loss or Brier score, as :func:`~calibkit.metrics.nll`
        and :func:`~calibkit.metrics.brier` average them (for ECE: its log loss, unused,
        since ECE is paired fold by fold)."""
        out = as_outputs(labels, probs=probs)
        return brier_per_sample(out) if self.criterion == "brier" else nll_per_sample(out)

    def _paired(
        self, fold_scores: dict[str, list[float]], losses: dict[str, F64]
    ) -> dict[str, list[float]]:
        """Each candidate's mean paired difference from the baseline and its standard error:
        over samples for a proper score, over folds for ECE."""
        if self.baseline not in fold_scores:
            return {}
        out = {}
        for name in fold_scores:
            if name == self.baseline:
                continue
            if self.criterion == "ece":
                d = np.subtract(fold_scores[name], fold_scores[self.baseline])
            else:
                d = losses[name] - losses[self.baseline]
            se = float(np.std(d, ddof=1) / np.sqrt(d.size)) if d.size > 1 else float("inf")
            out[name] = [float(np.mean(d)), se]
        return out

    @property
    def reason_(self) -> str:
        """Why :attr:`chosen_`, in words (from the fitted state)."""
        self.check_is_fitted()
        score, k = self.criterion.upper(), self.folds_used_
        if not self.cv_scores_:
            return f"too few samples to cross-validate: {self.chosen_} fitted"
        how = f"{k} stratified folds" if self.stratified_ else f"{k} folds, not stratified"
        if not self.stratified_:
            how += ": a class has 1 row"
        elif k < self.n_folds:
            how += f", fewer than {self.n_folds}: a class has {k} rows"
        pair = self.paired_.get(self.chosen_)
        margin = margin_words(self.rule)
        over = "folds" if self.criterion == "ece" else "samples"
        if self.rule == "lowest" or self.baseline not in self.cv_scores_:
            text = f"lowest mean {score} over {how}"
        elif self.chosen_ == self.baseline:
            text = (
                f"no candidate beat {self.baseline}'s {score} by more than {margin}\n({how}, "
                f"seed {self.seed})"
            )
        elif pair is None:  # no paired difference recorded for it
            text = f"lowest mean {score} over {how}"
        else:
            text = (
                f"lowest mean {score} of the candidates that beat {self.baseline} by more "
                f"than {margin} (held-out {score} of {self.chosen_} minus {self.baseline}'s, "
                f"mean over the {over} {pair[0]:+.4g} ± {pair[1]:.2g}, one standard error)"
                f"\n({how}, seed {self.seed})"
            )
        if self.dropped_:
            text += f"; left out, their fit failed on a fold: {', '.join(self.dropped_)}"
        if self.declined_:
            text += f"; declined by their scope: {', '.join(self.declined_)}"
        return text

    def _check_state(self) -> None:
        chosen = Calibrator.from_json(self.chosen_state_, source="state.chosen_state_")
        scored = self.chosen_ in self.cv_scores_ or not self.cv_scores_
        if chosen.name != self.chosen_ or not scored:
            expected = f"{chosen.name!r}, the method of chosen_state_ and one of cv_scores_"
            raise InputError("state.chosen_", expected, repr(self.chosen_))
        if chosen.n_classes_ != self.n_classes_ or isinstance(chosen, AutoCalibrator):
            expected = f"a calibrator other than 'auto' for {self.n_classes_} classes"
            raise InputError("state.chosen_state_", expected, repr(chosen))
        self._chosen = chosen

    @property
    def chosen(self) -> Calibrator:
        """The fitted calibrator that was picked (rebuilt from ``chosen_state_`` if loaded)."""
        self.check_is_fitted()
        if self._chosen is None:
            self._chosen = Calibrator.from_json(self.chosen_state_)
        return self._chosen

    def _predict_proba(self, logits: F64) -> F64:
        return self.chosen.predict_proba(logits)

    def _module(self) -> nn.Module:
        self.chosen.check_is_fitted()
        return self.chosen._map_module()

    def fitted_input_kind(self) -> str | None:
        """That of the method it chose."""
        return self.chosen.fitted_input_kind()

    def summary(self) -> str:
        """Which method was picked and why: each candidate's mean cross-validated score and
        its paired difference from the baseline (± one standard error)."""
        self.check_is_fitted()
        lines = [f"auto chose {self.chosen_!r}: {self.reason_}"]
        width = max((len(name) for name in [*self.cv_scores_, *self.declined_]), default=0)
        for name, score in sorted(self.cv_scores_.items(), key=lambda item: item[1]):
            mark = "  <- chosen" if name == self.chosen_ else ""
            pair = ""
            if name in self.paired_:
                d, se = self.paired_[name]
                pair = f"  {d:+.4g} ± {se:.2g} vs {self.baseline}"
            same = self.same_as_.get(name)
            twin = f"  ({same}'s scores: the same map on probabilities)" if same else ""
            lines.append(f"  {name:<{width}}  {score:.6g}{pair}{mark}{twin}")
        for name, why in self.declined_.items():
            lines.append(f"  {name:<{width}}  {why}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        base = super().__repr__()
        if not self.is_fitted:
            return base
        return f"{base[:-1]}, chosen={self.chosen_!r})"
