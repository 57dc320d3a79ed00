"""Automatic choice of a calibrator by cross-validation on the calibration set.

``AutoCalibrator`` ("auto") splits the calibration set into ``n_folds`` stratified folds
(shuffled with ``seed``), fits every candidate method on each ``n_folds - 1`` folds, scores
it on the held-out fold by ``criterion`` (``"nll"`` or top-label ``"ece"`` with ``n_bins``
equal-width bins), averages the fold scores, picks the lowest (the first listed on a tie)
and refits that method on the whole calibration set. ``predict_proba`` delegates to it.

Candidates: ``methods`` names them; by default every registered method that applies to the
data's number of classes (binary-only methods only for two classes), except ``"auto"``
itself and the grid-search ``"temperature_ece"`` (name it to include it), and without the
methods that need every class (:attr:`~calibkit.calibrators.base.Calibrator.needs_every_class`)
when a class is absent from the labels or from a fold's training part. Names are looked up
in the registry at fit time, so methods registered later are candidates too.

Fitted state: ``chosen_`` (the method name), ``cv_scores_`` (name -> mean score),
``cv_fold_scores_`` (name -> per-fold scores) and ``chosen_state_``, the chosen calibrator's
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
auto chose 'temperature': lowest mean NLL over 5 stratified folds (seed 0)
  temperature  0.88...  <- chosen
  histogram    1.03...
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar, Literal

import numpy as np

from calibkit.calibrators.base import CALIBRATORS, F64, Calibrator, get_calibrator
from calibkit.core import validation as v
from calibkit.core.binning import N_BINS
from calibkit.core.errors import InputError
from calibkit.core.fitted_state import MappingOf
from calibkit.core.outputs import ClassifierOutputs
from calibkit.metrics import ece, nll

if TYPE_CHECKING:
    from torch import nn

Criterion = Literal["nll", "ece"]
CRITERIA: tuple[str, ...] = ("nll", "ece")
#: Registered methods run only when named (by ``auto`` and by ``compare``), so that adding
#: them changed no default output (issue 15's post-hoc methods).
NAMED_ONLY: tuple[str, ...] = (
    "scaling_binning",
    "venn_abers",
    "isotonic_centred",
    "spline",
    "temperature_smoothed",
    "svs",
    "sms",
    "sms_cv",
)
#: Registered methods left out of the default candidates.
EXCLUDED_BY_DEFAULT: tuple[str, ...] = ("auto", "temperature_ece", *NAMED_ONLY)


class _SavedCalibrator(v.Constraint):
    """A fitted calibrator's :meth:`~calibkit.calibrators.base.Calibrator.to_json` dict,
    checked by rebuilding it (see :meth:`~calibkit.calibrators.base.Calibrator.from_json`)."""

    def check(self, name: str, value: object) -> object:
        Calibrator.from_json(value, source=name)
        return value

    def describe(self) -> str:
        return "a saved calibrator"


@CALIBRATORS.register("auto")
class AutoCalibrator(Calibrator):
    """Pick the calibrator with the best cross-validated ``criterion`` (see the module doc).

    Parameters
    ----------
    methods : list of str or None
        The candidates (not ``"auto"``); ``None``: every method that applies, except those
        in ``EXCLUDED_BY_DEFAULT``.
    criterion : {"nll", "ece"}
        The held-out score to minimise.
    n_folds : int
        Stratified folds (>= 2), shuffled with ``seed``.
    seed : int
        Seed of the fold assignment.
    n_bins : int
        Equal-width bins of the ECE criterion.

    Attributes
    ----------
    chosen_ : str
        The method picked; ``chosen`` is the calibrator itself, refitted on all the data.
    cv_scores_ : dict
        Mean held-out score of each candidate.

    Examples
    --------
    >>> AutoCalibrator(methods=["temperature", "platt"], criterion="ece").get_params()
    {'methods': ['temperature', 'platt'], 'criterion': 'ece', 'n_folds': 5, 'seed': 0, 'n_bins': 15}
    """

    param_constraints: ClassVar[v.Constraints] = {
        "methods": v.NoneOr(v.ListOf(v.String(), as_list=True)),
        "criterion": v.Choice(*CRITERIA),
        "n_folds": v.Integer(2, 100),
        "seed": v.SEED,
        "n_bins": N_BINS,
    }
    state_constraints: ClassVar[v.Constraints] = {
        "chosen_": v.String(),
        "cv_scores_": MappingOf(v.Real()),
        "cv_fold_scores_": MappingOf(v.ListOf(v.Real(), as_list=True)),
        "chosen_state_": _SavedCalibrator(),
    }
    methods: list[str] | None
    criterion: Criterion
    n_folds: int
    seed: int
    n_bins: int

    def __init__(
        self,
        methods: Sequence[str] | None = None,
        criterion: Criterion = "nll",
        n_folds: int = 5,
        seed: int = 0,
        n_bins: int = 15,
    ) -> None:
        self._set_params(
            methods=methods, criterion=criterion, n_folds=n_folds, seed=seed, n_bins=n_bins
        )
        if self.methods is not None and "auto" in self.methods:
            raise InputError("methods", "names other than 'auto'", repr(methods))
        self._chosen: Calibrator | None = None

    def candidates(self, n_classes: int, every_class: bool = True) -> list[str]:
        """The method names cross-validated for data with ``n_classes`` classes (by default,
        without the methods that need every class when ``every_class`` is False: a class is
        absent from the labels or from a fold's training part)."""
        if self.methods is None:
            return [
                name
                for name in CALIBRATORS.names()
                if name not in EXCLUDED_BY_DEFAULT
                and not CALIBRATORS.get(name).needs_model
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

    def _fit(self, out: ClassifierOutputs, weights: F64 | None = None) -> None:
        z = np.asarray(out.as_logits(), dtype=np.float64)
        folds = self._folds(out.labels)
        seen = min(np.unique(out.labels[train]).size for train, _ in folds)
        names = self.candidates(out.n_classes, every_class=seen == out.n_classes)
        fold_scores: dict[str, list[float]] = {name: [] for name in names}
        for train, test in folds:
            for name in names:
                cal = get_calibrator(name).fit(z[train], out.labels[train])
                fold_scores[name].append(self._score(out.labels[test], cal.predict_proba(z[test])))
        means = {name: float(np.mean(s)) for name, s in fold_scores.items()}
        best = min(names, key=lambda name: means[name])  # first listed on a tie
        chosen = get_calibrator(best).fit(z, out.labels)
        self.chosen_ = best
        self.cv_scores_ = means
        self.cv_fold_scores_ = fold_scores
        self.chosen_state_ = chosen.to_json()
        self._chosen = chosen

    def _folds(self, labels: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        if labels.shape[0] < 2 * self.n_folds:
            raise InputError(
                "labels",
                f"at least {2 * self.n_folds} samples for {self.n_folds}-fold CV",
                f"{labels.shape[0]} samples",
            )
        from sklearn.model_selection import StratifiedKFold  # lazy: sklearn costs seconds at import

        skf = StratifiedKFold(n_splits=self.n_folds, shuffle=True, random_state=self.seed)
        return list(skf.split(np.zeros((labels.shape[0], 1)), labels))

    def _score(self, labels: np.ndarray, probs: F64) -> float:
        if self.criterion == "nll":
            return nll(labels, probs=probs)
        return ece(labels, probs=probs, n_bins=self.n_bins)

    def _check_state(self) -> None:
        chosen = Calibrator.from_json(self.chosen_state_, source="state.chosen_state_")
        if chosen.name != self.chosen_ or self.chosen_ not in self.cv_scores_:
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
        return self.chosen._module()

    def summary(self) -> str:
        """Which method was picked and why: the mean cross-validated score of each candidate."""
        self.check_is_fitted()
        lines = [
            f"auto chose {self.chosen_!r}: lowest mean {self.criterion.upper()} over "
            f"{self.n_folds} stratified folds (seed {self.seed})"
        ]
        width = max(len(name) for name in self.cv_scores_)
        for name, score in sorted(self.cv_scores_.items(), key=lambda item: item[1]):
            mark = "  <- chosen" if name == self.chosen_ else ""
            lines.append(f"  {name:<{width}}  {score:.6g}{mark}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        base = super().__repr__()
        if not self.is_fitted:
            return base
        return f"{base[:-1]}, chosen={self.chosen_!r})"
