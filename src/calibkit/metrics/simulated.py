"""Simulated classifier outputs with a known truth: does an estimate, or its interval, find it?

:func:`simulate` draws the outputs of a K-class classifier (K from 2 to 100,000) whose
miscalibration is declared, and returns them with the exact population value of every
quantity calibkit estimates (:class:`~calibkit.metrics.simulated_truth.SimulationTruth`:
top-label ECE bin-free and binned, equal-mass ECE, MCE, RMSCE, class-wise SCE, KS,
accuracy, per-group errors and the worst-group gap, and ``P(correct | conf)`` itself). The
truths are computed from the declarations by quadrature, never from a sample, so a
bootstrap interval's coverage can be measured against them.

How the outputs are drawn is :mod:`calibkit.metrics.simulated_model`'s docstring: the
confidence ``c`` from a Beta law on ``[low, high]``, correct with probability ``f(c)``, a
wrong label drawn in proportion to the other classes' probabilities (so ``f(c) = c`` is
calibrated class by class too, not only the top label).

Shapes (``f``, ``P(correct | c)``; ``gap > 0`` is over-confidence, clipped to [0, 1]):

- ``"constant"``: ``c - gap``;
- ``"sign_change"``: ``c - gap (2 (c - low) / (high - low) - 1)``: under-confident by
  ``gap`` at ``low``, over-confident by ``gap`` at ``high``, calibrated half-way;
- ``"platt"``: ``sigmoid(a logit(c) + b)``, ``params=(a, b)`` (default ``(0.5, 0)``), the
  curves of Kumar et al. 2019's and caltrain's (Roelofs et al. 2022) generators;
- ``"beta"``: ``sigmoid(m + a ln c - b ln(1 - c))``, ``params=(a, b, m)`` (default
  ``(1, 0.5, 0)``), beta calibration's family (Kull et al. 2017);
- ``"classwise"``: each predicted class its own constant gap, ``class_gaps`` (default
  ``+gap`` for even classes, ``-gap`` for odd ones: the top label is then calibrated
  while each class is not);
- ``"groups"``: each group its own constant gap, ``group_gaps`` (default
  ``(-gap, 0, gap)``, equally likely unless ``group_weights``); ``"constant"`` and
  ``"sign_change"`` take ``group_gaps`` too.

Size: ``n * n_classes`` at most :data:`MAX_ENTRIES` (the probabilities are ``n x K``
float64, 400 MB there; ``n = 10**6`` with ``K = 1000`` would be 8 GB): above it an
InputError naming ``n``.

>>> sim = simulate(20_000, 3, shape="constant", gap=0.1, seed=0)
>>> sim.probs.shape, sim.labels.shape, sim.groups
((20000, 3), (20000,), None)
>>> round(sim.truth.true_ece, 10), round(sim.truth.ece, 10)
(0.1, 0.1)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypedDict, Unpack

import numpy as np

from calibkit.core.binning import check_n_bins
from calibkit.core.errors import InputError, UnknownNameError
from calibkit.core.validation import SEED, Integer, Real, is_number
from calibkit.metrics.simulated_model import (
    F64,
    I64,
    CalibrationMap,
    ConfidenceLaw,
    MapKind,
    SimulationModel,
    draw,
)
from calibkit.metrics.simulated_truth import SimulationTruth, population_truth

Shape = Literal["constant", "sign_change", "platt", "beta", "classwise", "groups"]
SHAPES: tuple[str, ...] = ("constant", "sign_change", "platt", "beta", "classwise", "groups")
#: Shapes whose map is a gap (``gap``, ``group_gaps`` or ``class_gaps``), and their default.
GAP_SHAPES: tuple[str, ...] = ("constant", "sign_change", "classwise", "groups")
DEFAULT_GAP = 0.05
#: The default ``params`` of the shapes that take them.
DEFAULT_PARAMS: dict[str, tuple[float, ...]] = {"platt": (0.5, 0.0), "beta": (1.0, 0.5, 0.0)}
#: Most ``n * n_classes`` (the probabilities' entries): 400 MB of float64.
MAX_ENTRIES = 50_000_000
#: Most groups, and most distinct class gaps (the truth's cost grows with them).
MAX_GROUPS = 100
MAX_CLASS_GAPS = 32
_GAP = Real(-1.0, 1.0)
_POSITIVE = Real(0.0, 1e4, closed="right")


@dataclass(frozen=True)
class Simulation:
    """A simulated classifier's outputs and the truth about them.

    Attributes
    ----------
    probs : ndarray of shape (n, K)
        float64 probabilities; each row sums to 1, its maximum (the top-label confidence)
        at the predicted class, strictly above the others.
    labels : ndarray of shape (n,)
        int64 true labels.
    groups : ndarray of shape (n,) or None
        int64 group of each sample (``0 .. G - 1``), with groups.
    truth : SimulationTruth
        The population values for ``truth.n_bins`` bins.
    model : SimulationModel
        The declarations (what :meth:`truth_for` computes from).
    seed : int
        The seed the outputs were drawn with.

    Examples
    --------
    >>> sim = simulate(1000, 4, seed=1)
    >>> bool(np.allclose(sim.probs.sum(axis=1), 1.0)), sim.truth.n_bins
    (True, 15)
    >>> round(sim.truth_for(10).ece, 10) == round(sim.truth.true_ece, 10)  # constant gap
    True
    """

    probs: F64
    labels: I64
    groups: I64 | None
    truth: SimulationTruth
    model: SimulationModel
    seed: int

    def truth_for(self, n_bins: int) -> SimulationTruth:
        """The population values with another number of bins, ``n_bins``."""
        return population_truth(self.model, check_n_bins(n_bins))


class _Declarations(TypedDict, total=False):
    """The declarations :func:`simulate` passes to :func:`simulation_model` (its defaults)."""

    gap: float | None
    params: Sequence[float] | None
    low: float | None
    high: float
    confidence: Sequence[float]
    concentration: float
    group_gaps: Sequence[float] | None
    group_weights: Sequence[float] | None
    class_gaps: Sequence[float] | None


def simulate(
    n: int,
    n_classes: int = 10,
    *,
    seed: int,
    shape: Shape = "constant",
    n_bins: int = 15,
    **declarations: Unpack[_Declarations],
) -> Simulation:
    """Draw a K-class classifier's outputs with declared miscalibration, and its truth.

    Parameters
    ----------
    n : int
        Samples (``n * n_classes <= MAX_ENTRIES``).
    n_classes : int
        K, from 2 to 100,000.
    seed : int
        Seed of the generator (required: the outputs are a function of it).
    shape : {"constant", "sign_change", "platt", "beta", "classwise", "groups"}
        ``P(correct | c)`` (module docstring).
    gap : float, optional
        The gap of a gap shape, in [-1, 1] (positive: over-confident; default 0.05). Not
        with ``group_gaps`` or ``class_gaps``, nor with ``"platt"`` or ``"beta"``.
    params : sequence of float, optional
        ``(a, b)`` of ``"platt"`` (``a > 0``), ``(a, b, m)`` of ``"beta"`` (``a, b >= 0``).
    low, high : float
        The top-label confidence's support, ``1/K <= low < high <= 1`` (default
        ``low = 1/K``).
    confidence : (float, float)
        Beta shape ``(a, b)`` of the confidence on ``[low, high]``; ``(1, 1)``: uniform.
    concentration : float
        Dirichlet concentration of the other classes' shares, in [0.1, 1000].
    group_gaps : sequence of float, optional
        Each group's gap (``"constant"``, ``"sign_change"``, ``"groups"``), at most 100.
    group_weights : sequence of positive float, optional
        The groups' probabilities (normalised; default equal).
    class_gaps : sequence of float, optional
        ``"classwise"``: each class's gap, K values, at most 32 distinct.
    n_bins : int
        Bins of the binned truths (:meth:`Simulation.truth_for` gives others).

    Returns
    -------
    Simulation
        ``probs`` ``(n, K)``, ``labels`` ``(n,)``, ``groups`` ``(n,)`` or None, ``truth``.

    Examples
    --------
    A gap changing sign: a bin across the crossing sees less of it than the bin-free error,
    and one bin sees none.

    >>> sim = simulate(50_000, 10, shape="sign_change", gap=0.1, seed=0, n_bins=5)
    >>> t = sim.truth
    >>> round(t.true_ece, 4), round(t.ece, 4), round(sim.truth_for(1).ece, 4)
    (0.05, 0.0494, 0.0)
    >>> from calibkit.metrics.binned import ece
    >>> abs(ece(sim.labels, probs=sim.probs, n_bins=5) - t.ece) < 0.01
    True
    """
    model = simulation_model(n_classes, shape, **declarations)
    n = Integer(1, MAX_ENTRIES).check("n", n)
    if n * model.n_classes > MAX_ENTRIES:
        raise InputError(
            "n", f"n * n_classes <= {MAX_ENTRIES} (n x K float64 probabilities)", repr(n)
        )
    seed = SEED.check("seed", seed)
    truth = population_truth(model, check_n_bins(n_bins))
    probs, labels, groups = draw(model, n, np.random.default_rng(seed))
    return Simulation(probs, labels, groups, truth, model, seed)


def simulation_model(
    n_classes: int,
    shape: str,
    *,
    gap: float | None = None,
    params: Sequence[float] | None = None,
    low: float | None = None,
    high: float = 1.0,
    confidence: Sequence[float] = (1.0, 1.0),
    concentration: float = 1.0,
    group_gaps: Sequence[float] | None = None,
    group_weights: Sequence[float] | None = None,
    class_gaps: Sequence[float] | None = None,
) -> SimulationModel:
    """The checked declarations of :func:`simulate`, its arguments as there (each bad one an
    InputError naming it).

    Examples
    --------
    >>> simulation_model(3, "groups", gap=0.1).weights
    (0.3333333333333333, 0.3333333333333333, 0.3333333333333333)
    >>> simulation_model(3, "platt", gap=0.1)
    Traceback (most recent call last):
    ...
    calibkit.core.errors.InputError: gap: expected None with shape='platt' (its map is \
params), got 0.1
    """
    k = Integer(2, 100_000).check("n_classes", n_classes)
    if not isinstance(shape, str):
        raise InputError("shape", "one of " + ", ".join(SHAPES), repr(shape))
    if shape not in SHAPES:
        raise UnknownNameError("shape", shape, SHAPES)
    law = _law(k, low, high, confidence)
    _refuse_unused(shape, gap, params, group_gaps, group_weights, class_gaps)
    concentration = Real(0.1, 1000.0).check("concentration", concentration)
    if shape in ("platt", "beta"):
        kind: MapKind = "platt" if shape == "platt" else "beta"
        curve = CalibrationMap(kind, _parametric(shape, params))
        return SimulationModel(k, law, (curve,), concentration=concentration)
    if shape == "classwise":
        return _classwise(k, law, gap, class_gaps, concentration)
    if shape == "groups" and group_gaps is None:
        g = _GAP.check("gap", DEFAULT_GAP if gap is None else gap)
        group_gaps = (-g, 0.0, g)
    if group_gaps is None:
        one = _gap_map(shape, _GAP.check("gap", DEFAULT_GAP if gap is None else gap), law)
        return SimulationModel(k, law, (one,), concentration=concentration)
    return _grouped(k, law, shape, group_gaps, group_weights, concentration)


def _grouped(
    k: int,
    law: ConfidenceLaw,
    shape: str,
    group_gaps: object,
    group_weights: object,
    concentration: float,
) -> SimulationModel:
    """Each group its gap map, drawn with its weight."""
    gaps = _numbers("group_gaps", group_gaps, None, _GAP, most=MAX_GROUPS)
    weights = np.full(len(gaps), 1.0)
    if group_weights is not None:
        weights = np.asarray(_numbers("group_weights", group_weights, len(gaps), _POSITIVE))
    maps = tuple(_gap_map(shape, g, law) for g in gaps)
    share = tuple(float(w) for w in weights / weights.sum())
    return SimulationModel(k, law, maps, share, groups=True, concentration=concentration)


def _numbers(
    name: str, value: object, length: int | None, each: Real, most: int | None = None
) -> tuple[float, ...]:
    """``value`` as a tuple of ``length`` numbers (any length from 1 to ``most``: None),
    each accepted by ``each``; else an InputError naming ``name``."""
    count = f"{length} numbers" if length else f"1 to {most} numbers"
    expected = f"{count}, each {each.describe()}"
    if isinstance(value, str | bytes) or not isinstance(value, Sequence | np.ndarray):
        raise InputError(name, expected, repr(value))
    items = list(value)
    wrong_length = len(items) != length if length else not 1 <= len(items) <= (most or 1)
    if wrong_length or not all(is_number(v) for v in items):
        raise InputError(name, expected, repr(value))
    try:
        return tuple(each.check(name, v) for v in items)
    except InputError:
        raise InputError(name, expected, repr(value)) from None


def _law(k: int, low: object, high: object, confidence: object) -> ConfidenceLaw:
    top = Real(1.0 / k, 1.0, closed="right").check("high", high)
    bottom = 1.0 / k if low is None else Real(1.0 / k, 1.0).check("low", low)
    if not bottom < top:
        raise InputError("low", f"a number in [1/K, high) = [{1.0 / k:g}, {top:g})", repr(low))
    a, b = _numbers("confidence", confidence, 2, _POSITIVE)
    return ConfidenceLaw(bottom, top, a, b)


def _refuse_unused(
    shape: str,
    gap: object,
    params: object,
    group_gaps: object,
    group_weights: object,
    class_gaps: object,
) -> None:
    """An InputError naming a declaration the shape does not read (never ignored)."""
    grouped = shape in ("constant", "sign_change", "groups")
    if params is not None and shape not in DEFAULT_PARAMS:
        raise InputError("params", f"None with shape={shape!r} (its map is a gap)", repr(params))
    if gap is not None and shape not in GAP_SHAPES:
        raise InputError("gap", f"None with shape={shape!r} (its map is params)", repr(gap))
    if group_gaps is not None and not grouped:
        raise InputError("group_gaps", f"None with shape={shape!r}", repr(group_gaps))
    if class_gaps is not None and shape != "classwise":
        raise InputError("class_gaps", f"None with shape={shape!r}", repr(class_gaps))
    if gap is not None and (group_gaps is not None or class_gaps is not None):
        given = "group_gaps" if group_gaps is not None else "class_gaps"
        raise InputError("gap", f"None when {given} is given", repr(gap))
    if group_weights is not None and group_gaps is None and shape != "groups":
        raise InputError("group_weights", "None without groups (group_gaps)", repr(group_weights))


def _parametric(shape: str, params: object) -> tuple[float, ...]:
    """The checked ``params`` of ``"platt"`` (a > 0) or ``"beta"`` (a, b >= 0)."""
    if params is None:
        return DEFAULT_PARAMS[shape]
    if shape == "platt":
        bounds = [Real(0.0, 1e3, closed="right"), Real(-1e3, 1e3)]
        expected = "(a, b), a in (0, 1000] and b in [-1000, 1000]"
    else:
        bounds = [Real(0.0, 1e3), Real(0.0, 1e3), Real(-1e3, 1e3)]
        expected = "(a, b, m), a and b in [0, 1000] and m in [-1000, 1000]"
    try:
        values = _numbers("params", params, len(bounds), Real(finite=True))
        return tuple(r.check("params", v) for r, v in zip(bounds, values, strict=True))
    except InputError:
        raise InputError("params", expected, repr(params)) from None


def _gap_map(shape: str, gap: float, law: ConfidenceLaw) -> CalibrationMap:
    """``c - gap`` or, for ``"sign_change"``, ``c - gap (2 (c - low) / (high - low) - 1)``."""
    if shape != "sign_change":
        return CalibrationMap("affine", (-gap, 1.0))
    width = law.high - law.low
    return CalibrationMap("affine", (gap * (1.0 + 2.0 * law.low / width), 1.0 - 2.0 * gap / width))


def _classwise(
    k: int, law: ConfidenceLaw, gap: object, class_gaps: object, concentration: float
) -> SimulationModel:
    """Each predicted class its constant gap; the distinct gaps are the maps."""
    if class_gaps is None:
        g = _GAP.check("gap", DEFAULT_GAP if gap is None else gap)
        gaps = np.where(np.arange(k) % 2 == 0, g, -g)
    else:
        gaps = np.asarray(_numbers("class_gaps", class_gaps, k, _GAP))
    values, which = np.unique(gaps, return_inverse=True)
    if (distinct := values.shape[0]) > MAX_CLASS_GAPS:
        raise InputError("class_gaps", f"at most {MAX_CLASS_GAPS} distinct gaps", f"{distinct}")
    maps = tuple(_gap_map("constant", float(g), law) for g in values)
    weights = tuple(float(w) for w in np.bincount(which, minlength=values.shape[0]) / k)
    class_maps = tuple(int(i) for i in which)
    return SimulationModel(
        k, law, maps, weights, class_maps=class_maps, concentration=concentration
    )


__all__ = ["Simulation", "SimulationTruth", "simulate", "simulation_model"]
