"""Which calibrators a comparison runs, and what their rows say about each other.

The rules are described in :mod:`calibkit.workflows.compare`'s module docstring:
:func:`applicable_methods` (the default list), :func:`resolve_methods` (a requested list),
:func:`summarize_params` and :func:`chosen_method` (a fitted row's parameters) and
:func:`same_maps` (rows that are the same map by construction).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from calibkit.calibrators import CALIBRATORS, Calibrator
from calibkit.core.errors import InputError
from calibkit.core.validation import Integer

#: Name of the uncalibrated row (``--methods none``, ``--method none``).
UNCALIBRATED = "none"
#: What :data:`UNCALIBRATED` is, as ``calibkit methods`` says it.
UNCALIBRATED_SUMMARY = (
    "No calibrator: the model's own softmax probabilities (compare's first row; with conformal "
    "and labelshift, the sets or the prior adaptation computed on them)."
)
#: Unregularised matrix scaling is left out of the defaults from this many classes on ...
MATRIX_MAX_CLASSES = 50
#: ... and when the calibration part has fewer than this many samples per fitted parameter.
MATRIX_SAMPLES_PER_PARAMETER = 2


def _applies_to(method: str, n_classes: int) -> bool:
    """Whether the registered ``method`` can calibrate a ``n_classes``-class problem."""
    return n_classes == 2 or not CALIBRATORS.get(method).binary_only


def matrix_fits(n_classes: int, n_cal: int | None = None) -> bool:
    """Whether unregularised matrix scaling (``K * (K + 1)`` parameters) can be fitted well:
    fewer than :data:`MATRIX_MAX_CLASSES` classes and, when ``n_cal`` is given, at least
    :data:`MATRIX_SAMPLES_PER_PARAMETER` calibration samples per parameter.

    >>> matrix_fits(10, 5000), matrix_fits(10, 200), matrix_fits(100)
    (True, False, False)
    """
    if n_classes >= MATRIX_MAX_CLASSES:
        return False
    return n_cal is None or n_cal >= MATRIX_SAMPLES_PER_PARAMETER * n_classes * (n_classes + 1)


def applicable_methods(
    n_classes: int, n_cal: int | None = None, every_class: bool = True
) -> list[str]:
    """Default methods for ``n_classes`` classes and ``n_cal`` calibration samples (None:
    not known) in the registry's order: the entries registered without ``default=False``
    (:meth:`~calibkit.core.registry.Registry.defaults`; ``"auto"`` and the methods run
    only when named are left out), ``"matrix"`` left out unless
    :func:`matrix_fits`, and with ``every_class`` False (a class absent from the calibration
    labels) the methods that fit each class from its own rows and so refuse such data
    (``needs_every_class``).

    >>> "temperature" in applicable_methods(10), "auto" in applicable_methods(10)
    (True, False)
    >>> "matrix" in applicable_methods(10, 5000), "matrix" in applicable_methods(100, 5000)
    (True, False)
    """
    n_classes = Integer(low=2).check("n_classes", n_classes)
    left_out = [] if matrix_fits(n_classes, n_cal) else ["matrix"]
    return [
        name
        for name in CALIBRATORS.defaults(kind="logits")
        if name not in left_out
        and _applies_to(name, n_classes)
        and (every_class or not CALIBRATORS.get(name).needs_every_class)
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
    """
    rules = ((("ms_odir", "dirichlet"), kind == "probs"),)
    order = list(methods)
    marks: dict[str, str] = {}
    for pair, applies in rules:
        if applies and all(m in order for m in pair):
            first, later = sorted(pair, key=order.index)
            marks[later] = first
    return marks
