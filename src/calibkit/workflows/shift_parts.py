"""The inputs of a shift study checked against each other before any work: the model's
classes against the dataset's (:func:`keeps_labels`), the clean calibration and test parts
(:func:`split_parts`), and the calibration count against the conformal miscoverage
(:func:`check_conformal_size`). Each error names a field of
:class:`~calibkit.workflows.shift_study.ShiftSettings` (``calibkit shift`` names its option).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from calibkit.calibrators.sets.conformal import ConformalClassifier
from calibkit.calibrators.sets.conformal_scores import SCORES
from calibkit.core.errors import InputError, nearest_name

__all__ = [
    "check_conformal_size",
    "conformal_method",
    "keeps_labels",
    "split_parts",
    "unknown_name",
]


def unknown_name(field_name: str, name: str, valid: Sequence[str], what: str) -> InputError:
    """The error of ``name``, not among ``valid``, naming ``field_name`` (with the nearest
    valid name when one is near).

    >>> str(unknown_name("data", "kat", ["cat", "dog"], "classes"))
    "data: expected classes among cat, dog, got 'kat' (did you mean 'cat'?)"
    """
    near = nearest_name(name, valid)
    got = repr(name) + (f" (did you mean {near!r}?)" if near else "")
    return InputError(field_name, f"{what} among {', '.join(valid)}", got)


def conformal_method(score: str, alpha: float, seed: int) -> ConformalClassifier:
    """The conformal method of the table: ``score`` split conformal on temperature scaling."""
    return ConformalClassifier(
        conformity_score=SCORES.create(score), alpha=alpha, calibrator="temperature", seed=seed
    )


def check_conformal_size(
    scores: Sequence[str], alpha: float, n_cal: int, seed: int = 0, argument: str = "cal_size"
) -> None:
    """Refuse, naming ``argument``, ``n_cal`` calibration rows too few for the conformal
    quantile at ``alpha`` once temperature scaling has taken its half: the rule
    :meth:`ConformalClassifier.fit` applies (``rows_needed(alpha)`` rows for the quantile,
    :func:`~calibkit.calibrators.sets.conformal.rows_needed`), checked before any work.

    Parameters
    ----------
    scores
        The conformity scores (none: nothing to check).
    alpha, n_cal, seed
        The miscoverage, the calibration rows and the seed of the conformal methods.
    argument
        What an error names.

    Examples
    --------
    >>> check_conformal_size(["lac"], 0.1, 18)  # 9 rows for the quantile: enough
    >>> check_conformal_size(["lac"], 0.001, 200)
    Traceback (most recent call last):
    ...
    calibkit.core.errors.InputError: cal_size: expected at least 1,997 calibration images for \
alpha=0.001 (split conformal needs 999 rows for its quantile, ceil((n + 1)(1 - alpha)) <= n, \
after temperature scaling takes its half), or a larger alpha, got 200 (100 for the quantile)
    """
    from calibkit.calibrators.sets.conformal import rows_needed

    if not scores:
        return
    method = conformal_method(scores[0], alpha, seed)
    need, got = rows_needed(alpha), method.quantile_rows(n_cal)
    if got >= need:
        return
    least = max(need, 2 * need - 3)  # temperature scaling takes half: about 2 x need rows
    while method.quantile_rows(least) < need:
        least += 1
    expected = (
        f"at least {least:,} calibration images for alpha={alpha:g} (split conformal needs "
        f"{need:,} rows for its quantile, ceil((n + 1)(1 - alpha)) <= n, after temperature "
        "scaling takes its half), or a larger alpha"
    )
    raise InputError(argument, expected, f"{n_cal:,} ({got:,} for the quantile)")


def split_parts(
    labels: npt.ArrayLike, cal_size: int | float, test_size: int | None, seed: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The shift study's ``(calibration, test)`` indices: the package's split
    (:func:`~calibkit.core.splits.split_indices`, every class in both parts, the test part
    cut to ``test_size``), its errors said in images and naming ``cal_size`` or
    ``test_size``.

    >>> cal, test = split_parts(np.repeat(np.arange(2), 10), 4, 6, seed=0)
    >>> len(cal), len(test), sorted(set(cal) & set(test))
    (4, 6, [])
    """
    from calibkit.core.splits import split_indices

    y = np.asarray(labels)
    n, k = len(y), len(np.unique(y))
    try:
        return split_indices(y, cal_size, seed, test_size=test_size, every_class=True)
    except InputError as exc:
        if exc.argument == "labels":  # a class with no image in one of the two parts
            expected = (
                f"a calibration part holding images of each of the {k} classes and leaving "
                "images of each for the test part (the split is stratified)"
            )
            got = f"{cal_size!r} ({exc.got} would have none in one part)"
            raise InputError("cal_size", expected, got) from None
        if exc.argument == "test_size":
            expected = f"at least {k} test images: one of each class (the test part is stratified)"
            raise InputError("test_size", expected, repr(test_size)) from None
        what = f"a count in 1..{n - 1} or a fraction of the {n:,} images"
        got = repr(cal_size)
        if isinstance(cal_size, float):
            got += f" ({round(cal_size * n):,} of the {n:,} images)"
        raise InputError("cal_size", f"{what} leaving images for both parts", got) from None


def keeps_labels(
    data: str,
    subset: Sequence[str] | None,
    every: Sequence[str],
    model: tuple[str, str | os.PathLike[str], int],
) -> bool:
    """Whether a class ``subset`` of the dataset (``every`` class) keeps its labels among
    all the classes (the model has a column for each: ``n_model == len(every)``, preferred)
    rather than being relabelled ``0..k-1`` (a model of the subset's ``k`` classes). Any
    other class count of the model, and a class the dataset lacks, are refused naming the
    ``data`` field: never a label scored against another class's column.

    Parameters
    ----------
    data
        The dataset spec (in messages).
    subset
        The classes of its subset (None: the whole dataset).
    every
        Every class of the dataset, in label order.
    model
        The model's name, its checkpoint and its number of classes.

    Returns
    -------
    bool
        True: the labels stay the indices among ``every``; False: the subset (if any) is
        relabelled ``0..k-1`` in its order.

    Examples
    --------
    >>> every, model = tuple("abcdefghij"), ("lenet5", "w.pt", 10)
    >>> keeps_labels("d:b,c", ("b", "c"), every, model), keeps_labels("d", None, every, model)
    (True, False)
    >>> keeps_labels("d:b,c", ("b", "c"), every, ("lenet5", "w.pt", 2))
    False
    >>> keeps_labels("d:b,c", ("b", "c"), every, ("lenet5", "w.pt", 3))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calibkit.core.errors.InputError: data: expected as many classes as the lenet5 checkpoint ...
    """
    name, weights, n_model = model
    if subset is not None:
        for cls in subset:
            if cls not in every:
                raise unknown_name("data", cls, list(every), "class names of the dataset")
    if n_model == len(every):
        return subset is not None
    if subset is not None and n_model == len(subset):
        return False
    checkpoint = f"the {name} checkpoint {os.fspath(weights)!r}, of {n_model} classes"
    if subset is None:
        expected = f"a dataset of as many classes as {checkpoint}, or {n_model} of its classes"
        got = f"{data!r}, of {len(every)} classes"
    else:
        expected = (
            f"as many classes as {checkpoint}: all {len(every)} of the dataset (labels kept "
            f"as its classes' columns), or a subset of {n_model} (labelled in the order given)"
        )
        got = f"{data!r}, {len(subset)} of its {len(every)} classes"
    raise InputError("data", expected, got)
