"""Compare post-hoc calibrators on held-out data: fit on one part, judge on the other.

:func:`split_outputs` makes a seeded, stratified calibration / test split of one set of
classifier outputs; :func:`compare` fits every requested calibrator on the calibration
part and evaluates it on the test part with :func:`calibkit.metrics.evaluate` (every
metric, bootstrap intervals and noise floors). The uncalibrated model is the first row,
named ``"none"``.

Every row is evaluated with the same ``seed``, so all methods are judged on the same
bootstrap resamples of the test part (a paired comparison).

Default methods (:func:`applicable_methods`)
    Every registered calibrator that applies to the number of classes (binary-only ones
    such as Platt or beta scaling only when K = 2), in registration order, except
    ``"auto"``: it selects one of the other methods by itself, so its row would repeat one
    of theirs at the price of another full model selection. Ask for it by name to include
    it. ``"temperature_ece"`` (temperature chosen by calibration-set ECE) is included.

>>> rng = np.random.default_rng(0)
>>> z = rng.normal(size=(600, 3)) * 3
>>> y = np.argmax(z + rng.gumbel(size=z.shape) * 3, axis=1)
>>> cal, test = split_outputs(as_outputs(y, logits=z), 0.5, seed=0)
>>> cal.n_samples, test.n_samples
(300, 300)
>>> comp = compare(cal, test, ["temperature"], n_boot=20)
>>> [row.method for row in comp.rows]
['none', 'temperature']
>>> comp.rows[1].evaluation.values["ece"] < comp.rows[0].evaluation.values["ece"]
True
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from calibkit.calibrators import CALIBRATORS, Calibrator, ece_temperature_curve, get_calibrator
from calibkit.core.binning import BinStats
from calibkit.core.errors import InputError
from calibkit.core.outputs import ClassifierOutputs, as_outputs, check_labels
from calibkit.core.splits import stratified_split
from calibkit.metrics import Evaluation, evaluate, reliability_stats
from calibkit.metrics.samples import Mode

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

#: Name of the uncalibrated row.
UNCALIBRATED = "none"
#: Registered methods left out of the default list (see the module docstring).
EXCLUDED_BY_DEFAULT: tuple[str, ...] = ("auto",)
#: Temperatures of the ECE-versus-temperature curve: 0.05, 0.075, ..., 5.
TEMPERATURE_GRID: F64 = np.round(np.arange(2, 201) * 0.025, 3)


@dataclass(frozen=True)
class MethodResult:
    """One row of a comparison: a calibrator judged on the test part."""

    method: str
    evaluation: Evaluation
    params: dict[str, float]
    fit_seconds: float
    reliability: BinStats


@dataclass(frozen=True)
class Comparison:
    """Every method's result on the same test part, the uncalibrated row first."""

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

    def row(self, method: str) -> MethodResult:
        """The result of ``method``."""
        for r in self.rows:
            if r.method == method:
                return r
        raise InputError("method", "one of " + ", ".join(r.method for r in self.rows), repr(method))

    @property
    def fitted_temperatures(self) -> dict[str, float]:
        """Temperature of every method that fitted one (temperature scaling variants)."""
        return {r.method: r.params["temperature"] for r in self.rows if "temperature" in r.params}


# ----- splitting ---------------------------------------------------------------------------
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

    >>> cal, test = split_indices([0, 0, 0, 0, 1, 1, 1, 1], 4, seed=1)
    >>> len(cal), len(test), sorted(np.array([0, 0, 0, 0, 1, 1, 1, 1])[cal].tolist())
    (4, 4, [0, 0, 1, 1])
    """
    y = check_labels(labels)
    test, cal = stratified_split(y, _cal_count(n_cal, y.shape[0]), seed, every_class_in_both=False)
    return cal, test


def subset(out: ClassifierOutputs, idx: I64) -> ClassifierOutputs:
    """The samples ``idx`` of ``out``."""
    return ClassifierOutputs(labels=out.labels[idx], scores=out.scores[idx], kind=out.kind)


def split_outputs(
    out: ClassifierOutputs, n_cal: int | float, seed: int
) -> tuple[ClassifierOutputs, ClassifierOutputs]:
    """Seeded stratified ``(calibration, test)`` split (see :func:`split_indices`)."""
    if not isinstance(out, ClassifierOutputs):
        raise InputError("out", "ClassifierOutputs (from as_outputs)", type(out).__name__)
    cal_idx, test_idx = split_indices(out.labels, n_cal, seed)
    return subset(out, cal_idx), subset(out, test_idx)


# ----- methods -----------------------------------------------------------------------------
def applies_to(method: str, n_classes: int) -> bool:
    """Whether the registered ``method`` can calibrate a ``n_classes``-class problem."""
    return n_classes == 2 or not CALIBRATORS.get(method).binary_only


def applicable_methods(n_classes: int) -> list[str]:
    """Default methods for ``n_classes`` classes (see the module docstring)."""
    if isinstance(n_classes, bool) or not isinstance(n_classes, int) or n_classes < 2:
        raise InputError("n_classes", "an integer >= 2", repr(n_classes))
    return [
        name
        for name in CALIBRATORS.names()
        if name not in EXCLUDED_BY_DEFAULT and applies_to(name, n_classes)
    ]


def resolve_methods(methods: Sequence[str] | None, n_classes: int) -> list[str]:
    """Validated, de-duplicated method names (``"none"`` dropped: it is always the first row)."""
    if methods is None:
        return applicable_methods(n_classes)
    if isinstance(methods, str):
        raise InputError("methods", "a list of method names", repr(methods))
    names: list[str] = []
    for name in methods:
        if name == UNCALIBRATED or name in names:
            continue
        if not applies_to(name, n_classes):  # unknown names raise UnknownNameError here
            raise InputError(
                "methods",
                f"methods for {n_classes} classes",
                f"{name!r}, which is defined for 2 classes only",
            )
        names.append(name)
    return names


def summarize_params(calibrator: Calibrator) -> dict[str, float]:
    """Scalar fitted parameters, trailing ``_`` removed (``log_t`` dropped beside ``t``).

    Arrays (weight matrices, bin tables) are left out; the class count too.
    """
    res: dict[str, float] = {}
    for key, val in calibrator.fitted_state().items():
        name = key.rstrip("_")
        if name == "n_classes" or isinstance(val, bool | np.bool_):
            continue
        if isinstance(val, int | float | np.integer | np.floating):
            res[name] = float(val)
        elif isinstance(val, np.ndarray) and val.size == 1 and val.dtype.kind in "iuf":
            res[name] = float(val.reshape(-1)[0])
    return {k: v for k, v in res.items() if not (k.startswith("log_") and k[4:] in res)}


# ----- the comparison ----------------------------------------------------------------------
def _judge(
    method: str,
    test: ClassifierOutputs,
    params: dict[str, float],
    seconds: float,
    settings: dict[str, Any],
) -> MethodResult:
    return MethodResult(
        method=method,
        evaluation=evaluate(test, **settings),
        params=params,
        fit_seconds=seconds,
        reliability=reliability_stats(test, n_bins=settings["n_bins"], mode=settings["mode"]),
    )


def compare(
    cal: ClassifierOutputs,
    test: ClassifierOutputs,
    methods: Sequence[str] | None = None,
    *,
    n_bins: int = 15,
    n_boot: int = 1000,
    seed: int = 0,
    mode: Mode = "top_label",
    source: str = "",
    progress: Callable[[str], None] | None = None,
    params: Mapping[str, Mapping[str, Any]] | None = None,
) -> Comparison:
    """Fit each method on ``cal``, evaluate it on ``test``; the ``"none"`` row comes first.

    ``methods`` defaults to :func:`applicable_methods`; ``params`` maps a method name to
    the parameters of its calibrator (e.g. ``{"temperature_ece": {"t_max": 10.0}}``).
    ``mode`` says what the calibration metrics and diagrams measure for a binary problem
    (see :mod:`calibkit.core.binning`). An error in any method propagates (nothing is returned,
    so no report is written from a partial comparison).
    """
    for arg, val in (("cal", cal), ("test", test)):
        if not isinstance(val, ClassifierOutputs):
            raise InputError(arg, "ClassifierOutputs (from as_outputs)", type(val).__name__)
    if cal.n_classes != test.n_classes:
        raise InputError(
            "test",
            f"{cal.n_classes} classes, as in the calibration part",
            f"{test.n_classes} classes",
        )
    names = resolve_methods(methods, cal.n_classes)
    say = progress or (lambda _msg: None)
    settings: dict[str, Any] = {"n_bins": n_bins, "n_boot": n_boot, "seed": seed, "mode": mode}
    say(f"evaluating the uncalibrated model on {test.n_samples:,} test samples")
    rows = [_judge(UNCALIBRATED, test, {}, 0.0, settings)]
    cal_logits, test_logits = cal.as_logits(), test.as_logits()
    for i, name in enumerate(names, start=1):
        say(f"[{i}/{len(names)}] fitting {name} on {cal.n_samples:,} calibration samples")
        start = time.perf_counter()
        calibrator = get_calibrator(name, **(params or {}).get(name, {}))
        calibrator.fit(cal_logits, cal.labels)
        seconds = time.perf_counter() - start
        calibrated = as_outputs(test.labels, probs=calibrator.predict_proba(test_logits))
        rows.append(_judge(name, calibrated, summarize_params(calibrator), seconds, settings))
    curve = ece_temperature_curve(test_logits, test.labels, TEMPERATURE_GRID, n_bins)
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
    )
