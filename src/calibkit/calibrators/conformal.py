"""Split conformal prediction sets on top of any calibrator's probabilities.

:class:`ConformalClassifier` turns a classifier's logits into *prediction sets* that hold
the true class with probability at least ``1 - alpha`` on exchangeable data (Vovk et al.
2005; Angelopoulos & Bates 2021, "A gentle introduction"). ``fit(logits, labels)`` on a
calibration set computes a non-conformity score ``s(x, y)`` for each row's true class and
keeps its conformal quantile ``q``: the ``k``-th smallest of the ``n`` scores, ``k =
ceil((n + 1)(1 - alpha))``. ``predict_set(logits)`` returns the boolean mask ``s(x, y) <=
q`` of shape ``(n, K)``. Then ``1 - alpha <= P(y in set) <= 1 - alpha + 1 / (n + 1)``, the
upper bound when scores have no ties (the randomised variants make them tie-free).

Scores (``p`` the probabilities sorted in decreasing order, ``r`` the 1-based rank of
``y``, ``U`` uniform in [0, 1) per row, 0 for the non-randomised variants):

- ``"lac"`` (also called THR, Sadinle et al. 2019): ``1 - p_y``; no randomised variant
  (a set is every class with ``p_y >= 1 - q``; it may be empty).
- ``"aps"`` (Romano et al. 2020): ``p_(1) + ... + p_(r) - U p_(r)``.
- ``"raps"`` (Angelopoulos et al. 2021): APS ``+ penalty * max(0, r - k_reg)``.
- ``"saps"`` (Huang et al. 2023): ``(1 - U) p_(1)`` for ``r = 1``, else ``p_(1) + weight
  * (r - 1 - U)``: only the top probability is used, the rest is the rank.

Ties between classes of equal probability are broken by class index (the lower index is
ranked first; numpy's stable sort, and the exported module's pairwise comparisons). With
``U = 0`` a set is the longest prefix of the ranking whose cumulative score stays at or
below ``q`` (MAPIE's ``include_last_label=False``), so it may be empty.

Class-conditional (Mondrian) conformal (``mondrian=True``, Vovk 2012): one quantile per
class, from that class's calibration rows only; class ``y`` enters a set when ``s(x, y) <=
q_y``. Each class then has its own guarantee ``P(y in set | y = c) >= 1 - alpha``, at the
price of needing ``n_c >= 1 / alpha - 1`` rows of every class.

A calibration part too small for ``alpha`` (``k > n``: fewer than ``1 / alpha - 1`` rows)
has an infinite quantile: every set would be the full set of classes, which holds the
guarantee trivially and says nothing. ``fit`` refuses it with an InputError saying how many
rows are needed, unless ``allow_full_sets=True`` (then ``thresholds_`` is ``inf`` and the
sets are full).

The calibrator and the rows (the choice, and its effect on the guarantee)
    ``calibrator`` is ``None`` (softmax of the logits), a registered calibrator name (e.g.
    ``"temperature"``) or a :class:`~calibkit.calibrators.base.Calibrator`. The guarantee
    needs the quantile's rows to be exchangeable with the test rows *given the
    calibrator*, so by default (``calibrator_split=0.5``) a seeded stratified half of the
    calibration rows fits the calibrator and the other half gives the quantile: the bound
    holds exactly, with ``n`` the quantile's rows (``n_calibration_``). With
    ``calibrator_split=None`` both use every row: more rows for each, but the calibrator
    has seen the quantile's rows, so the guarantee is no longer formal (for temperature
    scaling's one parameter the effect is negligible in practice). A calibrator given
    already fitted is used as it is (it must not have seen the calibration rows), and
    every row gives the quantile; an unfitted one is copied, never changed.

Randomisation
    ``randomized=True`` (APS, RAPS, SAPS) draws ``U`` from ``seed``: at fit for the
    calibration rows; in ``predict_set`` from a second stream of ``seed`` unless the
    caller passes ``u`` (one value per row). The exported module of a randomised set
    takes ``u`` as a second input, so the caller owns the randomness.

>>> rng = np.random.default_rng(0)
>>> logits = rng.normal(size=(400, 4)) * 3
>>> labels = np.array([rng.choice(4, p=np.exp(z) / np.exp(z).sum()) for z in logits])
>>> cp = ConformalClassifier(score="aps", alpha=0.1).fit(logits, labels)
>>> sets = cp.predict_set(logits[:3])
>>> sets.dtype, sets.shape, cp.n_calibration_
(dtype('bool'), (3, 4), 400)
>>> ConformalClassifier(score="top")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
calibkit.core.errors.InputError: score: expected one of lac, aps, raps, saps, got 'top'
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING, Any, ClassVar, Self

import numpy as np
import numpy.typing as npt

from calibkit.calibrators.base import Calibrator
from calibkit.calibrators.fitted import CALIBRATORS, CalibratorSpec, FittedObject, PostHoc
from calibkit.core.errors import InputError
from calibkit.core.fitted_state import Array
from calibkit.core.outputs import as_outputs, check_scores, log_softmax64
from calibkit.core.splits import stratified_split
from calibkit.core.validation import (
    SEED,
    Boolean,
    Choice,
    Constraints,
    Integer,
    NoneOr,
    Real,
)

if TYPE_CHECKING:
    from torch import nn

F64 = npt.NDArray[np.float64]
Mask = npt.NDArray[np.bool_]
#: The scores, in the order tables list them.
SCORES = ("lac", "aps", "raps", "saps")
#: The scores with a randomised (uniform ``U``) variant.
RANDOMIZABLE = ("aps", "raps", "saps")


def conformal_quantile_rank(n: int, alpha: float) -> int:
    """``k = ceil((n + 1)(1 - alpha))``, computed exactly on the float ``alpha``.

    >>> conformal_quantile_rank(99, 0.1), conformal_quantile_rank(9, 0.1)
    (90, 9)
    """
    return math.ceil((n + 1) * (1 - Fraction(alpha)))


def rows_needed(alpha: float) -> int:
    """The fewest calibration rows with a finite quantile: the least ``n`` with ``k <= n``.

    >>> rows_needed(0.1), rows_needed(0.01), rows_needed(0.3)
    (9, 99, 3)
    """
    return max(1, math.ceil(1 / Fraction(alpha) - 1))


def conformal_threshold(scores: F64, alpha: float) -> float:
    """The ``ceil((n + 1)(1 - alpha))``-th smallest of ``scores``; ``inf`` past ``n``.

    >>> conformal_threshold(np.arange(10.0), 0.2), conformal_threshold(np.arange(3.0), 0.2)
    (8.0, inf)
    """
    k = conformal_quantile_rank(scores.shape[0], alpha)
    return math.inf if k > scores.shape[0] else float(np.partition(scores, k - 1)[k - 1])


def set_scores(
    probs: F64,
    score: str,
    u: F64 | None = None,
    *,
    penalty: float = 0.0,
    k_reg: int = 0,
    weight: float = 0.2,
) -> F64:
    """The non-conformity score of every class of every row, ``(N, K)`` (module docstring).

    ``u`` is one uniform value per row (``None``: 0, the non-randomised scores).

    >>> p = np.array([[0.5, 0.2, 0.3]])
    >>> set_scores(p, "aps").round(6).tolist(), set_scores(p, "lac").round(6).tolist()
    ([[0.5, 1.0, 0.8]], [[0.5, 0.8, 0.7]])
    """
    if score == "lac":
        return 1.0 - probs
    n, k = probs.shape
    order = np.argsort(-probs, axis=1, kind="stable")  # equal probabilities: lower index first
    ordered = np.take_along_axis(probs, order, axis=1)
    rank = np.arange(1, k + 1, dtype=np.float64)[None, :]
    uu = np.zeros((n, 1)) if u is None else np.asarray(u, dtype=np.float64).reshape(n, 1)
    if score == "saps":
        top = ordered[:, :1]
        sorted_scores = np.where(rank == 1, (1 - uu) * top, top + weight * (rank - 1 - uu))
    else:
        sorted_scores = np.cumsum(ordered, axis=1) - uu * ordered
        if score == "raps":
            sorted_scores = sorted_scores + penalty * np.maximum(rank - k_reg, 0)
    out = np.empty_like(sorted_scores)
    np.put_along_axis(out, order, sorted_scores, axis=1)
    return out


@CALIBRATORS.register("conformal", default=False)
class ConformalClassifier(PostHoc):
    """Split (or class-conditional) conformal prediction sets; see the module docstring.

    Parameters
    ----------
    score : {"lac", "aps", "raps", "saps"}
    alpha : float
        Miscoverage in (0, 1): sets hold the true class with probability >= 1 - alpha.
    calibrator : None, str or Calibrator
        What makes the probabilities (None: softmax of the logits).
    calibrator_split : float or None
        Fraction of the calibration rows that fit the calibrator (the rest give the
        quantile); None: the same rows for both (no formal guarantee). Unused without a
        calibrator to fit.
    mondrian : bool
        One quantile per class (class-conditional coverage).
    randomized : bool
        The uniform-``U`` variant (APS, RAPS, SAPS only).
    penalty, k_reg : float, int
        RAPS's ``lambda`` and ``k_reg`` (defaults 0.1 and 1, for tens of classes; the RAPS
        paper uses about 0.01 and 5 on ImageNet's 1000).
    weight : float
        SAPS's rank weight ``lambda`` (TorchCP's default 0.2).
    allow_full_sets : bool
        Accept a calibration part too small for ``alpha`` (the sets are then full).
    seed : int
        Seed of the calibrator split and of ``U``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(2000, 4)) * 3
    >>> y = z.argmax(1)
    >>> flip = rng.random(2000) < 0.2
    >>> y[flip] = rng.integers(0, 4, flip.sum())
    >>> cp = ConformalClassifier(score="raps", alpha=0.1, calibrator="temperature").fit(z, y)
    >>> sets = cp.predict_set(z[:5])
    >>> sets.shape, sets.dtype
    ((5, 4), dtype('bool'))
    """

    kind: ClassVar[str] = "sets"

    score: str
    alpha: float
    calibrator: str | Calibrator | None
    calibrator_split: float | None
    mondrian: bool
    randomized: bool
    penalty: float
    k_reg: int
    weight: float
    allow_full_sets: bool
    seed: int
    n_classes_: int
    calibrator_: Calibrator | None
    thresholds_: F64
    n_calibration_: int
    class_counts_: npt.NDArray[np.int64]

    param_constraints: ClassVar[Constraints] = {
        "score": Choice(*SCORES),
        "alpha": Real(0.0, 1.0, closed="neither"),
        "calibrator": CalibratorSpec(),
        "calibrator_split": NoneOr(Real(0.0, 1.0, closed="neither")),
        "mondrian": Boolean(),
        "randomized": Boolean(),
        "penalty": Real(0.0),
        "k_reg": Integer(0, 100_000),
        "weight": Real(0.0, closed="neither"),
        "allow_full_sets": Boolean(),
        "seed": SEED,
    }
    state_constraints: ClassVar[Constraints] = {
        "calibrator_": FittedObject(),
        "thresholds_": Array(shape=("k",), allow_inf=True),
        "n_calibration_": Integer(low=1),
        "class_counts_": Array("int64", shape=("k",), low=0),
    }

    def __init__(
        self,
        score: str = "aps",
        alpha: float = 0.1,
        calibrator: str | Calibrator | None = None,
        calibrator_split: float | None = 0.5,
        mondrian: bool = False,
        randomized: bool = False,
        penalty: float = 0.1,
        k_reg: int = 1,
        weight: float = 0.2,
        allow_full_sets: bool = False,
        seed: int = 0,
    ) -> None:
        self._set_params(
            score=score,
            alpha=alpha,
            calibrator=calibrator,
            calibrator_split=calibrator_split,
            mondrian=mondrian,
            randomized=randomized,
            penalty=penalty,
            k_reg=k_reg,
            weight=weight,
            allow_full_sets=allow_full_sets,
            seed=seed,
        )
        if self.randomized and self.score not in RANDOMIZABLE:
            expected = "randomized=False for 'lac' (randomised: " + ", ".join(RANDOMIZABLE) + ")"
            raise InputError("randomized", expected, "True")

    def _score_options(self) -> dict[str, Any]:
        return {"penalty": self.penalty, "k_reg": self.k_reg, "weight": self.weight}

    # ----- fit and predict ---------------------------------------------------------------
    def fit(
        self, logits: object, labels: object, sample_weight: object = None, **metadata: object
    ) -> Self:
        """Fit the calibrator (on its part) and the quantile(s) on the calibration rows
        (``metadata``: none is declared, so any is refused by name)."""
        self._route(metadata)
        if sample_weight is not None:
            raise InputError("sample_weight", "None for 'conformal' (unweighted ranks)", "weights")
        out = as_outputs(labels, logits=logits)
        z, y = np.asarray(out.as_logits(), dtype=np.float64), out.labels
        quantile_rows = np.arange(y.shape[0])
        calibrator, fitted = CalibratorSpec.resolve(self.calibrator)
        if calibrator is not None and not fitted:
            fit_rows = quantile_rows
            if self.calibrator_split is not None:
                if y.shape[0] < 2:
                    raise InputError("labels", "at least 2 calibration rows to split", "1")
                quantile_rows, fit_rows = stratified_split(
                    y, self.calibrator_split, self.seed, every_class_in_both=False
                )
            calibrator.fit(z[fit_rows], y[fit_rows])
        if calibrator is not None and calibrator.n_classes_ != out.n_classes:
            expected = f"a calibrator of {out.n_classes} classes, as the logits"
            raise InputError("calibrator", expected, f"one of {calibrator.n_classes_}")
        self.n_classes_ = out.n_classes
        self.calibrator_ = calibrator
        probs = self._probs(z[quantile_rows])
        yq = y[quantile_rows]
        u = self._draw(yq.shape[0], 0) if self.randomized else None
        label_scores = np.take_along_axis(
            set_scores(probs, self.score, u, **self._score_options()), yq[:, None], axis=1
        )[:, 0]
        counts = np.bincount(yq, minlength=self.n_classes_)
        groups = (
            [label_scores[yq == c] for c in range(self.n_classes_)]
            if self.mondrian
            else [label_scores]
        )
        self._check_enough(counts if self.mondrian else np.array([yq.shape[0]]))
        values = [conformal_threshold(g, self.alpha) for g in groups]
        self.thresholds_ = np.array(
            values if self.mondrian else values * self.n_classes_, dtype=np.float64
        )
        self.n_calibration_ = int(yq.shape[0])
        self.class_counts_ = counts.astype(np.int64)
        return self

    def _check_enough(self, counts: npt.NDArray[np.int64]) -> None:
        need = rows_needed(self.alpha)
        short = np.flatnonzero(counts < need)
        if short.size == 0 or self.allow_full_sets:
            return
        rows = "calibration rows for the quantile"
        where = f"{int(counts[short[0]])} {rows}"
        if self.mondrian:
            where = f"{int(counts[short[0]])} {rows} of class {int(short[0])}"
        split = " (after the calibrator's split)" if self.calibrator_split is not None else ""
        raise InputError(
            "calibration part",
            f"at least {need} {rows}{' per class' if self.mondrian else ''} for alpha="
            f"{self.alpha:g} (ceil((n + 1)(1 - alpha)) <= n), or allow_full_sets=True",
            where + (split if self.calibrator is not None else ""),
        )

    def _draw(self, n: int, stream: int) -> F64:
        return np.random.default_rng([self.seed, stream]).random(n)

    def _probs(self, logits: F64) -> F64:
        if self.calibrator_ is None:
            return np.exp(log_softmax64(np.asarray(logits, dtype=np.float64)))
        return self.calibrator_.predict_proba(logits)

    def _check_logits(self, logits: object) -> F64:
        self.check_is_fitted()
        z = np.asarray(check_scores(logits, "logits"), dtype=np.float64)
        if z.shape[1] != self.n_classes_:
            raise InputError(
                "logits", f"{self.n_classes_} columns (as at fit time)", f"{z.shape[1]} columns"
            )
        return z

    def predict_proba(self, logits: object, **metadata: object) -> F64:
        """The probabilities the scores are computed from (the calibrator's, or softmax)."""
        self._route(metadata)
        return self._probs(self._check_logits(logits))

    def predict_scores(self, logits: object, u: object = None) -> F64:
        """The non-conformity score of every class, ``(N, K)`` (``u`` as in predict_set)."""
        z = self._check_logits(logits)
        return set_scores(
            self._probs(z), self.score, self._u(u, z.shape[0]), **self._score_options()
        )

    def predict_set(self, logits: object, u: object = None, **metadata: object) -> Mask:
        """The prediction sets as a boolean mask ``(N, K)``.

        ``u``: for a randomised score, one uniform value in [0, 1) per row (default:
        drawn from ``seed``'s prediction stream, the same for the same N); refused otherwise.
        """
        self._route(metadata)
        return self.predict_scores(logits, u) <= self.thresholds_[None, :]

    def _u(self, u: object, n: int) -> F64 | None:
        if not self.randomized:
            if u is not None:
                raise InputError("u", "None for a non-randomised score", "values")
            return None
        if u is None:
            return self._draw(n, 1)
        arr = np.asarray(u, dtype=np.float64)
        if arr.shape != (n,) or not np.all((arr >= 0) & (arr < 1)):
            raise InputError("u", f"{n} values in [0, 1)", f"shape {arr.shape}")
        return arr

    # ----- export ------------------------------------------------------------------------
    def to_module(self) -> nn.Module:
        """The sets as a torch module: logits ``(N, K)`` in (and ``u`` ``(N,)`` for a
        randomised score), a bool mask out (see
        :class:`~calibkit.calibrators.conformal_module.ConformalSets`)."""
        from calibkit.calibrators.conformal_module import (
            ConformalSets,
            RandomizedConformalSets,
            softmax_module,
        )

        self.check_is_fitted()
        probs = (
            softmax_module(self.n_classes_)
            if self.calibrator_ is None
            else self.calibrator_.to_module()
        )
        kind = RandomizedConformalSets if self.randomized else ConformalSets
        return kind(
            probs, self.score, self.thresholds_, self.randomized, **self._score_options()
        ).eval()

    # ----- persistence ------------------------------------------------------------------
    def _check_state(self) -> None:
        if self.calibrator_ is not None and self.calibrator_.n_classes_ != self.n_classes_:
            raise InputError(
                "state.calibrator_", f"a calibrator of {self.n_classes_} classes", "another"
            )
        if (self.calibrator_ is None) != (self.calibrator is None):
            raise InputError("state.calibrator_", "a calibrator as params.calibrator says", "other")

    @classmethod
    def _upgrade(
        cls, params: dict[str, Any], state: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """A file of calibkit 0.x kept ``thresholds_`` as a list of floats."""
        thresholds = state.get("thresholds_")
        if isinstance(thresholds, list) and all(
            isinstance(t, float | int) and not isinstance(t, bool) for t in thresholds
        ):
            state = {**state, "thresholds_": np.array(thresholds, dtype=np.float64)}
        return params, state
