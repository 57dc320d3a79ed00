"""Which calibrators a comparison runs, and what their rows say about each other.

The rules are described in :mod:`calibkit.workflows.compare`'s module docstring:
:func:`applicable_methods` (the default list), :func:`resolve_methods` (a requested list),
:func:`summarize_params` and :func:`chosen_method` (a fitted row's parameters),
:func:`same_maps` (rows that are the same map by construction) and :func:`same_fit` (rows
whose fits solved the same problem, as ``matrix`` and ``ms_odir`` do whenever they choose
the same strength: see :func:`matrix_as_odir`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from calibkit.calibrators import CALIBRATORS, Calibrator
from calibkit.calibrators.logit.auto import same_maps as auto_same_maps
from calibkit.calibrators.scope import declined, scope_of
from calibkit.core.errors import InputError
from calibkit.core.validation import Integer

#: Name of the uncalibrated row (``--methods none``, ``--method none``).
UNCALIBRATED = "none"
#: What :data:`UNCALIBRATED` is, as ``calibkit methods`` says it.
UNCALIBRATED_SUMMARY = (
    "No calibrator: the model's own softmax probabilities (compare's first row; with conformal "
    "and labelshift, the sets or the prior adaptation computed on them)."
)


def _applies_to(method: str, n_classes: int) -> bool:
    """Whether the registered ``method`` can calibrate a ``n_classes``-class problem."""
    return n_classes == 2 or not CALIBRATORS.get(method).binary_only


def matrix_fits(n_classes: int, n_cal: int | None = None) -> bool:
    """Whether unregularised matrix scaling is among the defaults for ``n_classes`` classes
    and ``n_cal`` calibration samples: its declared scope
    (:func:`~calibkit.calibrators.scope.scope_of`) does not decline it.

    >>> matrix_fits(10, 5000), matrix_fits(10, 200), matrix_fits(100)
    (True, False, False)
    """
    return scope_of("matrix").declines(n_classes, n_cal) is None


def declined_methods(n_classes: int, n_cal: int | None = None) -> dict[str, str]:
    """The default entries that apply to ``n_classes`` classes but whose declared scope
    (:class:`~calibkit.calibrators.scope.Scope`) excludes ``n_classes`` classes and ``n_cal``
    calibration samples, each with its one-line reason: what the output and the report say
    about a method left out.

    >>> list(declined_methods(100, 5000)), declined_methods(10, 5000)
    (['matrix'], {})
    """
    names = [n for n in CALIBRATORS.defaults(kind="logits") if _applies_to(n, n_classes)]
    return declined(names, n_classes, n_cal)


#: Why a method that fits each class from its own rows (``needs_every_class``) is left out
#: when a class is absent from the calibration part.
MISSING_CLASS_REASON = (
    "a class is absent from the calibration part, and it fits each class from its own rows"
)


def left_out_methods(
    n_classes: int, n_cal: int | None = None, every_class: bool = True
) -> dict[str, str]:
    """Every default method that :func:`applicable_methods` leaves out for this data, with
    its one-line reason, in the registry's order: those :func:`declined_methods` declines,
    and with ``every_class`` False those that need every class (:data:`MISSING_CLASS_REASON`).
    What a comparison says about the methods it did not run (never silently dropped).

    >>> left_out_methods(100, 5000)["matrix"][:27]
    'declined from 50 classes on'
    >>> left_out_methods(10, 5000, every_class=False)["histogram_classwise"][:30]
    'a class is absent from the cal'
    """
    declined_here = declined_methods(n_classes, n_cal)
    res: dict[str, str] = {}
    for name in CALIBRATORS.defaults(kind="logits"):
        if not _applies_to(name, n_classes):
            continue
        if name in declined_here:
            res[name] = declined_here[name]
        elif not every_class and CALIBRATORS.get(name).needs_every_class:
            res[name] = MISSING_CLASS_REASON
    return res


def left_out_lines(left_out: Mapping[str, str]) -> list[str]:
    """The methods of ``left_out`` (method -> reason, as :func:`left_out_methods` gives)
    grouped by reason, one ``"a, b (reason)"`` per reason, in order of first appearance.

    >>> left_out_lines({"a": "too big", "b": "no class 3", "c": "too big"})
    ['a, c (too big)', 'b (no class 3)']
    """
    by_reason: dict[str, list[str]] = {}
    for name, why in left_out.items():
        by_reason.setdefault(why, []).append(name)
    return [f"{', '.join(names)} ({why})" for why, names in by_reason.items()]


def applicable_methods(
    n_classes: int, n_cal: int | None = None, every_class: bool = True
) -> list[str]:
    """Default methods for ``n_classes`` classes and ``n_cal`` calibration samples (None:
    not known) in the registry's order: the entries registered without ``default=False``
    (:meth:`~calibkit.core.registry.Registry.defaults`; ``"auto"`` and the methods run
    only when named are left out), without those whose declared scope declines the data
    (:func:`declined_methods`: ``"matrix"`` from 50 classes on or below 2 samples per
    parameter), and with ``every_class`` False (a class absent from the calibration
    labels) without the methods that fit each class from its own rows and so refuse such
    data (``needs_every_class``).

    >>> "temperature" in applicable_methods(10), "auto" in applicable_methods(10)
    (True, False)
    >>> "matrix" in applicable_methods(10, 5000), "matrix" in applicable_methods(100, 5000)
    (True, False)
    """
    n_classes = Integer(low=2).check("n_classes", n_classes)
    left_out = left_out_methods(n_classes, n_cal, every_class)
    return [
        name
        for name in CALIBRATORS.defaults(kind="logits")
        if name not in left_out and _applies_to(name, n_classes)
    ]


def group_methods(n_classes: int) -> list[str]:
    """The registered calibrators that take each sample's group (kind ``groups``), in the
    registry's order: run besides :func:`applicable_methods` when a comparison has groups.

    >>> group_methods(3)
    ['temperature_groupwise', 'multicalibration']
    """
    return [name for name in CALIBRATORS.names(kind="groups") if _applies_to(name, n_classes)]


def resolve_methods(
    methods: Sequence[str] | None,
    n_classes: int,
    n_cal: int | None = None,
    every_class: bool = True,
) -> list[str]:
    """Validated, de-duplicated method names (``"none"`` dropped: it is always the first row);
    None gives :func:`applicable_methods` for ``n_classes``, ``n_cal`` and ``every_class``.

    >>> resolve_methods(["none", "temperature", "temperature"], 3)
    ['temperature']
    """
    if methods is None:
        return applicable_methods(n_classes, n_cal, every_class)
    if isinstance(methods, str):
        raise InputError("methods", "a list of method names", repr(methods))
    names: list[str] = []
    for name in methods:
        if name == UNCALIBRATED or name in names:
            continue
        if not _applies_to(name, n_classes):  # unknown names raise UnknownNameError here
            raise InputError(
                "methods",
                f"methods for {n_classes} classes",
                f"{name!r}, which is defined for 2 classes only",
            )
        names.append(name)
    return names


def chosen_method(calibrator: Calibrator) -> str | None:
    """The method a selecting calibrator (``"auto"``) picked, or None for any other."""
    chosen = getattr(calibrator, "chosen_", None)
    return chosen if isinstance(chosen, str) else None


def summarize_params(calibrator: Calibrator) -> dict[str, float]:
    """Scalar fitted parameters, trailing ``_`` removed (``log_t`` dropped beside ``t``);
    for ``"auto"``, those of the calibrator it chose.

    Arrays (weight matrices, bin tables) are left out; the class count too.

    >>> from calibkit.calibrators import create_calibrator
    >>> ts = create_calibrator("temperature").fit(np.zeros((4, 2)), np.array([0, 1, 0, 1]))
    >>> sorted(summarize_params(ts))
    ['temperature']
    """
    if chosen_method(calibrator) is not None:
        calibrator = getattr(calibrator, "chosen", calibrator)
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


def same_maps(methods: Sequence[str], n_classes: int, kind: str) -> dict[str, str]:
    """Each method of ``methods`` whose fitted map equals that of an earlier one by
    construction, mapped to that earlier method.

    ``"dirichlet"`` and ``"ms_odir"`` on probabilities (``kind == "probs"``): both fit the
    same regularised matrix on ``log p``, as ``log_softmax(log p) = log p``. (``"vector"``
    and ``"matrix"`` for two classes were twins too while both were unpenalised; shrunk
    towards temperature scaling by their own penalties, the default since issue 22, they
    are not.)

    >>> same_maps(["vector", "matrix", "ms_odir", "dirichlet"], 2, "probs")
    {'dirichlet': 'ms_odir'}
    >>> same_maps(["vector", "matrix", "ms_odir", "dirichlet"], 3, "logits")
    {}

    Why, in words: :data:`SAME_MAP_REASONS`. Fitted rows can also turn out to be the same
    map, as ``"matrix"`` and ``"ms_odir"`` (:func:`same_fit`).
    """
    return auto_same_maps(methods, kind)  # the rule's one place: auto's SAME_MAPS_ON_PROBS


#: Why the later method of a :func:`same_maps` pair fits the same map as the earlier one.
SAME_MAP_REASONS = {
    ("ms_odir", "dirichlet"): (
        "Dirichlet calibration is ms_odir's regularised map on log-probabilities, and on "
        "probabilities the log-probabilities are the inputs themselves (log_softmax(log p) = "
        "log p)"
    ),
}


def matrix_as_odir(matrix: Calibrator, odir: Calibrator) -> str | None:
    """Why the fitted ``"matrix"`` and ODIR (``"ms_odir"``, or ``"dirichlet"`` on
    probabilities) calibrators are the same map, or None when they need not be.

    Shrunk towards temperature scaling (``shrink="temperature"``, both defaults) and
    without ``reg_l2``, matrix scaling's penalty at strength ``s`` is
    ``s * sum((W - I / T) ** 2) / (K (K - 1)) + s * sum(b ** 2) / K``: ODIR's penalty with
    ``lam = mu = s``, centred at the same temperature-scaling map. Both grids hold
    0.01 ... 1e4 and the strongest end (the cross-validation of each, on the same seeded
    folds, usually picks the same value); when the chosen strengths agree, both minimise
    the same strictly convex objective, so they reach the same map (to the optimiser's
    tolerance: 1e-15 on CIFAR-10's networks).
    """
    if getattr(matrix, "shrink", None) != "temperature" or getattr(matrix, "reg_l2", 1.0):
        return None
    if getattr(odir, "shrink", None) != "temperature":
        return None
    s = float(getattr(matrix, "shrink_strength_", math.nan))
    lam = float(getattr(odir, "reg_lambda_", math.nan))
    mu = float(getattr(odir, "reg_mu_", math.nan))
    centres = (getattr(c, "centre_temperature_", math.nan) for c in (matrix, odir))
    if not (s > 0 and s == lam == mu and math.isclose(*centres, rel_tol=1e-12)):
        return None
    how = "both chose" if getattr(odir, "reg_lambda", None) is None else "matrix chose"
    return (
        "shrunk towards temperature scaling, matrix scaling's penalty at strength s is "
        f"ODIR's at lam = mu = s, and {how} s = {s:g} by cross-validation, so they "
        "solved the same problem"
    )


#: ``(earlier, later)`` -> a rule telling whether the two fitted calibrators are the same
#: map (its reason) or not (None); ``"dirichlet"`` stands for ``"ms_odir"`` on probabilities.
_FIT_RULES: dict[tuple[str, str], Callable[[Calibrator, Calibrator], str | None]] = {
    ("matrix", "ms_odir"): matrix_as_odir,
    ("ms_odir", "matrix"): lambda odir, matrix: matrix_as_odir(matrix, odir),
}


def same_fit(
    fitted: Mapping[str, Calibrator], name: str, calibrator: Calibrator, kind: str = "logits"
) -> tuple[str, str] | None:
    """The first method of ``fitted`` (earlier rows, in order) whose fit ``calibrator``
    (method ``name``) repeats, with why, or None; ``kind`` is what the calibrators were
    given (on ``"probs"``, ``"dirichlet"`` is ``"ms_odir"``: :data:`SAME_MAP_REASONS`).

    >>> from calibkit.calibrators import create_calibrator
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(600, 3)) * 3
    >>> y = np.argmax(z / 2 + rng.gumbel(size=z.shape), axis=1)
    >>> fits = {m: create_calibrator(m).fit(z, y) for m in ("temperature", "matrix")}
    >>> twin = same_fit(fits, "ms_odir", create_calibrator("ms_odir").fit(z, y))
    >>> twin[0], twin[1][:40]
    ('matrix', 'shrunk towards temperature scaling, matr')
    >>> same_fit(fits, "ms_odir", create_calibrator("ms_odir", reg_lambda=0.5).fit(z, y))
    """

    def as_rule_name(method: str) -> str:
        return "ms_odir" if method == "dirichlet" and kind == "probs" else method

    for earlier, fit in fitted.items():
        rule = _FIT_RULES.get((as_rule_name(earlier), as_rule_name(name)))
        why = None if rule is None else rule(fit, calibrator)
        if why is not None:
            return earlier, why
    return None
