"""Statistical tests of calibration, with p-values: is the miscalibration more than noise?

Each test asks whether the outcomes could be Bernoulli draws of the confidences (the null
hypothesis of perfect calibration), on the pairs ``(confidence, outcome)`` of
:func:`~calibkit.metrics.samples.calibration_target`: top-label (max probability against
"prediction correct", the default) or, for a binary problem, ``mode="positive_class"``
(``P(y = 1)`` against ``y == 1``). Each returns a :class:`CalibrationTest`.

- :func:`spiegelhalter_test`: Spiegelhalter's (1986) Z,
  ``sum (y - s)(1 - 2 s) / sqrt(sum (1 - 2 s)^2 s (1 - s))``, standard normal under the
  null; two-sided p-value ``2 * (1 - Phi(|Z|))``. (MAPIE reports the one-sided
  ``1 - Phi(Z)``.) Scores in {0, 1/2, 1} carry no information: when all are, Z is NaN.
- :func:`ks_test` and :func:`kuiper_test`: the cumulative-difference tests of
  Arrieta-Ibarra, Gujral, Tannen, Tygert & Xu (JMLR 2022) and Tygert (2022). With the
  pairs sorted by confidence, ``C_j = sum_{i <= j} (y_i - s_i) / n`` and
  ``sigma = sqrt(sum s (1 - s)) / n``, the statistics are ``max |C| / sigma`` (ECCE-MAD,
  Kolmogorov-Smirnov) and ``(max C - min C) / sigma`` (ECCE-R, Kuiper), both over the path
  from its origin ``C_0 = 0`` (the authors' code; MAPIE 1.6 leaves ``C_0`` out of the
  range, which differs only where the path stays on one side of 0, and there reads a path
  of one run, e.g. constant confidences, as range 0, p-value 1). Under the null
  ``C / sigma`` tends to a standard Brownian motion on [0, 1], and the p-values come from
  the distributions of its maximum absolute value (Darling & Siegert 1953) and of its range
  (Feller 1951), by their series (exact to about 1e-12; a statistic above 12 has a p-value
  below 1e-30 and gets 0).
- :func:`hosmer_lemeshow_test`: Hosmer & Lemeshow's C-hat over "deciles of risk".

Tie rule of the cumulative tests. ``ties="group"`` (the default): the path ``C`` is read
only at the end of each run of equal confidences, so the statistic does not depend on the
order of tied rows (any order within a run gives a path through the same run ends; the
statistic is the smallest over those orders, so heavy ties make the test conservative).
``ties="jitter"`` is MAPIE's convention, for parity: every score is multiplied by
``1 + 1e-8 * N(0, 1)`` drawn from ``numpy.random.RandomState(1)``, rows are sorted by the
jittered score (``np.argsort``) and ``C`` sums the jittered scores; ``sigma`` takes the
scores as given. On scores without ties the two agree to about 1e-8 relative.

>>> y = [0, 1, 0, 1, 0]
>>> s = [0.1, 0.9, 0.21, 0.9, 0.5]
>>> t = ks_test(y, s, mode="positive_class")
>>> t.name, round(t.statistic, 3), round(t.p_value, 4)
('ks', 0.978, 0.6494)
>>> round(spiegelhalter_test(y, s, mode="positive_class").statistic, 3)
-0.757
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypedDict, Unpack

import numpy as np

from calibkit.core.binning import equal_mass_cuts
from calibkit.core.errors import InputError
from calibkit.core.outputs import as_outputs
from calibkit.metrics.samples import F64, Mode, calibration_target

Ties = Literal["group", "jitter"]

#: The tests of :func:`calibration_tests`, in report order, with their labels.
TEST_LABELS: dict[str, str] = {
    "spiegelhalter": "Spiegelhalter Z",
    "ks": "Cumulative KS (ECCE-MAD)",
    "kuiper": "Cumulative Kuiper (ECCE-R)",
    "hosmer_lemeshow": "Hosmer-Lemeshow",
}
#: Fewest samples any test is computed on.
MIN_SAMPLES = 2
#: A Brownian-motion statistic above this has a p-value below 1e-30: reported as 0.
_X_MAX = 12.0
#: Series terms: ample for statistics up to :data:`_X_MAX` (the terms fall below 1e-17).
_TERMS = 48
#: MAPIE's jitter: relative amplitude and seed (``mapie.metrics.calibration.add_jitter``).
_JITTER, _JITTER_SEED = 1e-8, 1


class UndefinedTestError(InputError):
    """A test these outputs leave undefined, the reason in the message (Hosmer-Lemeshow on
    fewer than two groups of distinct confidences; Spiegelhalter's Z, KS or Kuiper when the
    null variance is 0). :func:`calibration_tests` and ``calibkit evaluate --extra tests``
    mark that one test undefined, with the reason, and go on.

    Examples
    --------
    >>> try:
    ...     hosmer_lemeshow_test([0, 1, 1, 0], [0.6] * 4, mode="positive_class")
    ... except UndefinedTestError as err:
    ...     print(err.reason)
    too few distinct confidences: 1 group of them, at least 2 needed
    """

    def __init__(self, argument: str, reason: str) -> None:
        self.reason = reason
        super().__init__(argument, "outputs on which the test is defined", reason)

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.argument, self.reason), self.__dict__


@dataclass(frozen=True)
class CalibrationTest:
    """One test's result: ``name`` (a key of :data:`TEST_LABELS`), its ``statistic`` and
    ``p_value`` (the probability, under perfect calibration, of a statistic at least as
    extreme), the sample count ``n``, for Hosmer-Lemeshow the degrees of freedom, and for a
    test these outputs leave undefined (NaN statistic and p-value) the ``reason``.

    >>> CalibrationTest("ks", 0.5, 0.99, 10).label
    'Cumulative KS (ECCE-MAD)'
    """

    name: str
    statistic: float
    p_value: float
    n: int
    df: int | None = None
    reason: str | None = None

    @property
    def label(self) -> str:
        return TEST_LABELS.get(self.name, self.name)

    def to_dict(self) -> dict[str, float | int | str | None]:
        """The result as JSON-ready numbers (NaN stays NaN: the writer maps it to null)."""
        return {
            "name": self.name,
            "statistic": self.statistic,
            "p_value": self.p_value,
            "n": self.n,
            "df": self.df,
            "undefined": self.reason,
        }


# ----- the statistics on arrays (the last axis is the samples) --------------------------------
def spiegelhalter_z(conf: F64, outcome: F64) -> F64:
    """Spiegelhalter's Z of each row of ``conf`` / ``outcome`` (NaN where undefined).

    >>> round(float(spiegelhalter_z(np.array([0.8, 0.3]), np.array([1.0, 0.0]))), 6)
    -0.794719
    """
    s = np.asarray(conf, dtype=np.float64)
    num = np.sum((outcome - s) * (1 - 2 * s), axis=-1)
    var = np.sum((1 - 2 * s) ** 2 * s * (1 - s), axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(var > 0, num / np.sqrt(np.where(var > 0, var, 1.0)), np.nan)


def cumulative_differences(conf: F64, outcome: F64, ties: Ties = "group") -> tuple[F64, F64]:
    """The path ``C`` (sorted by confidence) of each row, and ``sigma`` per row.

    Under ``ties="group"``, positions inside a run of tied confidences repeat the run's
    last value, so max and min see run ends only (see the module docstring).

    >>> c, sigma = cumulative_differences(np.array([0.7, 0.3, 0.6]), np.array([1.0, 0, 0]))
    >>> np.round(c, 10).tolist(), round(float(sigma), 6)
    ([-0.1, -0.3, -0.2], 0.270801)
    """
    s = np.asarray(conf, dtype=np.float64)
    y = np.asarray(outcome, dtype=np.float64)
    n = s.shape[-1]
    sigma = np.sqrt(np.sum(s * (1 - s), axis=-1)) / n
    if ties == "jitter":
        if s.ndim != 1:
            raise InputError("ties", "'group' for several datasets at once", "'jitter'")
        rng = np.random.RandomState(_JITTER_SEED)
        jittered = s * (1 + _JITTER * rng.normal(size=n))
        order = np.argsort(jittered)
        return np.cumsum(y[order] - jittered[order]) / n, sigma
    if ties != "group":
        raise InputError("ties", "'group' or 'jitter'", repr(ties))
    order = np.argsort(s, axis=-1, kind="stable")
    s_sorted = np.take_along_axis(s, order, axis=-1)
    path = np.cumsum(np.take_along_axis(y, order, axis=-1) - s_sorted, axis=-1) / n
    run_end = np.ones(s.shape, dtype=bool)
    run_end[..., :-1] = s_sorted[..., :-1] != s_sorted[..., 1:]
    # the value at the end of each run, carried back over the run (a reversed running min
    # of the end positions finds each position's run end)
    idx = np.where(run_end, np.arange(n), n)
    ends = np.minimum.accumulate(idx[..., ::-1], axis=-1)[..., ::-1]
    return np.take_along_axis(path, ends, axis=-1), sigma


def _series(x: F64) -> tuple[F64, F64, F64]:
    """``x`` as float64, the series' half-integers ``k`` and ``x`` clipped to where the
    series converges, one axis added for the terms."""
    x = np.asarray(x, dtype=np.float64)
    return x, np.arange(_TERMS, dtype=np.float64) + 0.5, np.clip(x, 1e-3, _X_MAX)[..., None]


def brownian_max_abs_sf(x: F64) -> F64:
    """``P(max_{t <= 1} |B_t| > x)`` for a standard Brownian motion (the KS p-value).

    >>> round(float(brownian_max_abs_sf(np.array(1.0))), 4)
    0.6292
    """
    x, k, xc = _series(x)
    terms = (-1.0) ** np.arange(_TERMS) / k * np.exp(-(k**2) * np.pi**2 / (2 * xc**2))
    cdf = 2 / np.pi * np.sum(terms, axis=-1)
    return np.where(x >= _X_MAX, 0.0, np.clip(1.0 - cdf, 0.0, 1.0))


def brownian_range_sf(x: F64) -> F64:
    """``P(max_{t <= 1} B_t - min_{t <= 1} B_t > x)`` (the Kuiper p-value).

    >>> round(float(brownian_range_sf(np.array(1.0))), 4)
    0.9366
    """
    x, k, xc = _series(x)
    terms = (8 / xc**2 + 2 / (k**2 * np.pi**2)) * np.exp(-2 * k**2 * np.pi**2 / xc**2)
    cdf = np.sum(terms, axis=-1)
    return np.where(x >= _X_MAX, 0.0, np.clip(1.0 - cdf, 0.0, 1.0))


def normal_two_sided(z: F64) -> F64:
    """``2 * (1 - Phi(|z|))``, NaN for NaN."""
    from scipy.special import ndtr

    return np.asarray(2 * ndtr(-np.abs(z)), dtype=np.float64)


# ----- the tests ------------------------------------------------------------------------------
def _pairs(labels: object, probs: object, logits: object, mode: Mode) -> tuple[F64, F64]:
    out = as_outputs(labels, probs, logits=logits)
    if out.n_samples < MIN_SAMPLES:
        got = f"{out.n_samples} sample"
        raise InputError("labels", f"at least {MIN_SAMPLES} samples for a calibration test", got)
    return calibration_target(out, mode)


def spiegelhalter_test(
    labels: object, probs: object = None, *, logits: object = None, mode: Mode = "top_label"
) -> CalibrationTest:
    """Spiegelhalter's Z and its two-sided p-value (see the module docstring).

    >>> t = spiegelhalter_test([1, 0, 1, 0, 1, 0], [0.8, 0.3, 0.5, 0.5, 0.7, 0.1],
    ...                        mode="positive_class")
    >>> round(t.statistic, 4), round(t.p_value, 4)
    (-1.0302, 0.3029)
    """
    conf, outcome = _pairs(labels, probs, logits, mode)
    z = spiegelhalter_z(conf, outcome)
    why = "every confidence is 0, 1/2 or 1 (Z's null variance is 0)" if np.isnan(z) else None
    return CalibrationTest(
        "spiegelhalter", float(z), float(normal_two_sided(z)), conf.size, None, why
    )


class _Cumulative(TypedDict, total=False):
    """The keyword options of the cumulative tests (defaults: :func:`_cumulative_test`)."""

    logits: object
    mode: Mode
    ties: Ties


def _cumulative_test(
    name: str,
    labels: object,
    probs: object,
    *,
    logits: object = None,
    mode: Mode = "top_label",
    ties: Ties = "group",
) -> CalibrationTest:
    conf, outcome = _pairs(labels, probs, logits, mode)
    path, sigma = cumulative_differences(conf, outcome, ties)
    stat = cumulative_statistic(name, path, sigma)
    sf = brownian_max_abs_sf if name == "ks" else brownian_range_sf
    why = "every confidence is 0 or 1 (sigma is 0)" if np.isnan(stat) else None
    return CalibrationTest(name, float(stat), float(sf(stat)), conf.size, None, why)


def cumulative_statistic(name: str, path: F64, sigma: F64) -> F64:
    """ECCE-MAD (``name="ks"``) or ECCE-R (``"kuiper"``) of paths ``C`` over ``sigma``
    (NaN where ``sigma`` is 0: every score 0 or 1)."""
    if name == "ks":
        spread = np.max(np.abs(path), axis=-1)
    else:  # the range of the path from its origin C_0 = 0, as the Brownian motion's
        spread = np.maximum(path.max(axis=-1), 0.0) - np.minimum(path.min(axis=-1), 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(sigma > 0, spread / np.where(sigma > 0, sigma, 1.0), np.nan)


def ks_test(
    labels: object, probs: object = None, **options: Unpack[_Cumulative]
) -> CalibrationTest:
    """The cumulative-difference Kolmogorov-Smirnov test (ECCE-MAD over sigma).

    MAPIE's example: the tie at 0.5 holds an outcome 1 and a 0. Read at the run's end, the
    path never sees the dip that MAPIE's jitter order (0 first) makes:

    >>> y, s = [1, 0, 1, 0, 1, 0], [0.8, 0.3, 0.5, 0.5, 0.7, 0.1]
    >>> round(ks_test(y, s, mode="positive_class").p_value, 4)
    0.9998
    >>> round(ks_test(y, s, mode="positive_class", ties="jitter").p_value, 4)
    0.7857
    """
    return _cumulative_test("ks", labels, probs, **options)


def kuiper_test(
    labels: object, probs: object = None, **options: Unpack[_Cumulative]
) -> CalibrationTest:
    """The cumulative-difference Kuiper test (ECCE-R over sigma: the path's range from 0).

    The path of MAPIE's example stays below 0 (from -0.02 down to -0.162), so its range from
    the origin is 0.162, as its largest deviation (MAPIE, without the origin, gives 0.857):

    >>> t = kuiper_test([0, 1, 0, 1, 0], [0.1, 0.9, 0.21, 0.9, 0.5], mode="positive_class")
    >>> round(t.statistic, 3)
    0.978
    """
    return _cumulative_test("kuiper", labels, probs, **options)


def hosmer_lemeshow_statistic(conf: F64, outcome: F64, n_groups: int = 10) -> tuple[float, int]:
    """C-hat and the number of non-empty groups (1-D ``conf`` / ``outcome``).

    >>> s, y = np.array([0.2, 0.2, 0.8, 0.8]), np.array([0.0, 1, 1, 1])
    >>> c, groups = hosmer_lemeshow_statistic(s, y, 2)
    >>> round(c, 10), groups
    (1.625, 2)
    """
    order = np.argsort(conf, kind="stable")
    s, y = conf[order], outcome[order]
    cuts = equal_mass_cuts(s, n_groups)
    starts = cuts[:-1][np.diff(cuts) > 0]
    size = np.diff(np.append(starts, s.size)).astype(np.float64)
    observed, expected = np.add.reduceat(y, starts), np.add.reduceat(s, starts)
    var = expected * (1 - expected / size)
    diff2 = (observed - expected) ** 2
    with np.errstate(invalid="ignore", divide="ignore"):
        terms = np.where(
            var > 0, diff2 / np.where(var > 0, var, 1.0), np.where(diff2 > 0, np.inf, 0)
        )
    return float(np.sum(terms)), int(starts.size)


def hosmer_lemeshow_test(
    labels: object,
    probs: object = None,
    *,
    logits: object = None,
    mode: Mode = "top_label",
    n_groups: int = 10,
    df_offset: int = 0,
) -> CalibrationTest:
    """Hosmer & Lemeshow's test over ``n_groups`` groups of risk (deciles by default).

    The pairs are sorted by confidence and cut into ``n_groups`` groups of equal size, with
    the cuts of adaptive ECE's equal-mass bins (a run of tied confidences is never split,
    so fewer groups may hold samples). With ``O_g`` outcomes, ``E_g`` summed confidences
    and ``n_g`` samples in group ``g``,
    ``C = sum_g (O_g - E_g)^2 / (E_g (1 - E_g / n_g))``, compared with a chi-square of
    ``G - df_offset`` degrees of freedom (``G`` the non-empty groups).

    Warning: the result depends on the grouping. Another number of groups, or another rule
    for ties, can turn a small p-value into a large one on the same data (Hosmer et al.
    1997; Kuss 2002), and the test has little power on small samples and too much on large
    ones. The default, ``G`` degrees of freedom (``df_offset=0``), is the null distribution
    for probabilities judged on data they were not fitted on (a held-out test set: what
    calibkit evaluates). ``df_offset=2`` is the textbook reference for a logistic model
    fitted on these very data; on held-out data it rejects too often (about 11.5% at
    alpha = 0.05 with ten groups; see the tests of this module).

    >>> t = hosmer_lemeshow_test([0, 1, 1, 1], [0.2, 0.2, 0.8, 0.8], mode="positive_class",
    ...                          n_groups=2)
    >>> round(t.statistic, 10), t.df, round(t.p_value, 4)
    (1.625, 2, 0.4437)
    """
    from scipy.stats import chi2

    if not isinstance(n_groups, int | np.integer) or n_groups < 2:
        raise InputError("n_groups", "an integer of at least 2", repr(n_groups))
    if not isinstance(df_offset, int | np.integer) or df_offset < 0:
        raise InputError("df_offset", "a non-negative integer", repr(df_offset))
    conf, outcome = _pairs(labels, probs, logits, mode)
    stat, groups = hosmer_lemeshow_statistic(conf, outcome, int(n_groups))
    df = groups - int(df_offset)
    if df < 1 or groups < 2:
        need, them = max(2, df_offset + 1), "group" + ("s" if groups != 1 else "")
        why = f"too few distinct confidences: {groups} {them} of them, at least {need} needed"
        raise UndefinedTestError("probs", why)
    return CalibrationTest("hosmer_lemeshow", stat, float(chi2.sf(stat, df)), conf.size, df)


def calibration_tests(
    labels: object, probs: object = None, *, logits: object = None, mode: Mode = "top_label"
) -> dict[str, CalibrationTest]:
    """Every test of :data:`TEST_LABELS` on the same outputs (defaults of each test).

    A test these outputs leave undefined (e.g. Hosmer-Lemeshow on fewer than 2 groups of
    distinct confidences) gets NaN statistic and p-value and its ``reason``, so a report
    still shows the rest.

    >>> tests = calibration_tests([0, 1, 1, 0], [[0.6, 0.4]] * 4)
    >>> list(tests), tests["hosmer_lemeshow"].p_value
    (['spiegelhalter', 'ks', 'kuiper', 'hosmer_lemeshow'], nan)
    >>> tests["hosmer_lemeshow"].reason
    'too few distinct confidences: 1 group of them, at least 2 needed'
    """
    out = as_outputs(labels, probs, logits=logits)
    results = {
        "spiegelhalter": spiegelhalter_test(out, mode=mode),
        "ks": ks_test(out, mode=mode),
        "kuiper": kuiper_test(out, mode=mode),
    }
    try:
        results["hosmer_lemeshow"] = hosmer_lemeshow_test(out, mode=mode)
    except UndefinedTestError as exc:
        results["hosmer_lemeshow"] = CalibrationTest(
            "hosmer_lemeshow", math.nan, math.nan, out.n_samples, None, exc.reason
        )
    return results


def calibration_test_metric(name: str, part: str) -> Callable[..., float]:
    """A metric function ``(labels, probs, *, logits, mode) -> float`` giving one part of
    one test, for the metric registry (``calibkit evaluate --extra``); a test these outputs
    leave undefined raises :class:`UndefinedTestError` with the reason (never a bare NaN).

    >>> p = calibration_test_metric("spiegelhalter", "p_value")
    >>> p([0, 1], [[0.5, 0.5], [0.5, 0.5]])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calibkit.metrics.calibration_tests.UndefinedTestError: probs: ... (Z's null variance is 0)
    """
    tests = {
        "spiegelhalter": spiegelhalter_test,
        "ks": ks_test,
        "kuiper": kuiper_test,
        "hosmer_lemeshow": hosmer_lemeshow_test,
    }
    if part not in ("statistic", "p_value"):
        raise InputError("part", "'statistic' or 'p_value'", repr(part))
    test = tests[name]

    def metric(
        labels: object, probs: object = None, *, logits: object = None, mode: Mode = "top_label"
    ) -> float:
        result = test(labels, probs, logits=logits, mode=mode)
        if result.reason is not None:
            raise UndefinedTestError("probs", result.reason)
        return float(getattr(result, part))

    metric.__name__ = f"{name}_{'p' if part == 'p_value' else part}"  # its registry key
    metric.__doc__ = f"The {part.replace('_', '-')} of :func:`{test.__name__}`."
    return metric
