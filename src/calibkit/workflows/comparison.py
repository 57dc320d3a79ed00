"""What a comparison of calibrators is: each method's row judged on the test part
(:class:`MethodResult`) and every row with what they say together (:class:`Comparison`), as
:func:`calibkit.workflows.compare.compare` returns them and the reports, the study and the
CLI read them.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from calibkit.core.binning import BinStats
from calibkit.core.errors import InputError
from calibkit.core.options import Resampling
from calibkit.metrics import Evaluation
from calibkit.metrics.calibration_tests import CalibrationTest
from calibkit.metrics.groups import GroupEvaluation
from calibkit.metrics.intervals import CalibrationInterval, paired_interval
from calibkit.metrics.selective import RankingChange, RiskCoverage
from calibkit.workflows.methods import SAME_MAP_REASONS, UNCALIBRATED, same_maps
from calibkit.workflows.recommendation import Recommendation

__all__ = ["TEMPERATURE_GRID", "Comparison", "MethodResult"]

F64 = npt.NDArray[np.float64]

#: Temperatures of the ECE-versus-temperature curve: 0.05, 0.075, ..., 5.
TEMPERATURE_GRID: F64 = np.round(np.arange(2, 201) * 0.025, 3)


@dataclass(frozen=True)
class MethodResult:
    """One row of a comparison: a calibrator judged on the test part.

    Attributes
    ----------
    method, evaluation, reliability
        Calibrator name (``"none"``: uncalibrated), its :class:`Evaluation` and reliability
        bin sums (:class:`BinStats`) on the test part.
    params, fit_seconds
        Scalar fitted parameters (:func:`~calibkit.workflows.methods.summarize_params`) and
        the fit's wall time.
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
    >>> from calibkit.core.outputs import as_outputs
    >>> from calibkit import compare
    >>> out = as_outputs([0, 1], probs=[[0.8, 0.2], [0.4, 0.6]])
    >>> from calibkit import Binning, Resampling
    >>> row = compare(out, out, [], binning=Binning(n_bins=10), resampling=Resampling(n_boot=0))
    >>> row = row.row("none")
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
    n_cal, n_test, n_classes, n_bins : int
        Sizes of the parts, class and bin counts.
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
    >>> from calibkit.core.outputs import as_outputs
    >>> from calibkit import compare
    >>> out = as_outputs([0, 1], logits=[[1.0, 0.0], [0.0, 1.0]])
    >>> comp = compare(out, out, [], resampling=Resampling(n_boot=0))
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
    #: The intervals' replicates, level and seed (``n_boot=0``: no intervals).
    resampling: Resampling = Resampling(n_boot=0)
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

        >>> from calibkit.core.outputs import as_outputs
        >>> from calibkit import compare
        >>> out = as_outputs([0, 1, 0, 1], logits=[[2.0, 0.0], [0.0, 1.0], [0.0, 1.0], [1.0, 0.0]])
        >>> comp = compare(out, out, ["temperature"], resampling=Resampling(n_boot=10))
        >>> ci = comp.nll_change("temperature")
        >>> bool(ci.low <= ci.estimate <= ci.high), ci.estimate < 0
        (True, True)
        """
        a, b = self.row(method).nll_terms, self.row(against).nll_terms
        if a is None or b is None:
            return None
        return paired_interval(a - b, level=self.resampling.level)

    @property
    def accuracy_changed(self) -> list[str]:
        """Methods whose count of correct test predictions differs from ``"none"``'s."""
        accuracy = [r.evaluation.values.get("accuracy", math.nan) for r in self.rows]
        if not all(math.isfinite(a) for a in accuracy):
            return []
        correct = [round(a * self.n_test) for a in accuracy]
        return [r.method for r, c in zip(self.rows, correct, strict=True) if c != correct[0]]
