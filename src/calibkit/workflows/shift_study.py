"""A shift study from its settings, as ``calibkit shift`` runs it: :class:`ShiftSettings`
(every name and number checked when made), :func:`run_shift` (load the dataset, split it,
load the model, make the logits, corrupt, fit, judge with the parts of
:mod:`calibkit.workflows.shift`) and what it found, :class:`ShiftResult`.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from calibkit.core.errors import InputError
from calibkit.core.options import Binning
from calibkit.core.outputs import as_outputs
from calibkit.core.params import Settings, param
from calibkit.core.validation import (
    DEVICE,
    MISCOVERAGE,
    N_BINS,
    POSITIVE,
    RESAMPLES,
    SEED,
    SPLIT_SIZE,
    Boolean,
    FilePath,
    Integer,
    Names,
    NoneOr,
    Real,
    Registered,
    String,
    TupleOf,
)
from calibkit.workflows.shift import (
    DEFAULT_METHODS,
    DEFAULT_SCORES,
    IMAGENET_MEAN,
    IMAGENET_STD,
    ShiftRow,
    model_logits,
    severity_summary,
    shift_table,
    shifted_logits,
)
from calibkit.workflows.shift_parts import (
    check_conformal_size,
    keeps_labels,
    split_parts,
    unknown_name,
)

__all__ = ["SMOKE", "ShiftResult", "ShiftSettings", "run_shift"]

log = logging.getLogger("calibkit.workflows.shift")  # the shift study's log: one stream

#: What a smoke run (:meth:`ShiftSettings.smoke_run`, ``calibkit shift --smoke``) keeps: the
#: whole command on a toy size, under a minute on a 2-core CPU.
SMOKE: dict[str, Any] = {
    "cal_size": 300,
    "test_size": 300,
    "corruptions": ("gaussian_noise", "fog"),
    "severities": (1, 3, 5),
    "methods": ("none", "temperature"),
    "scores": ("lac",),
    "n_floor_draws": 20,
}


def _renamed(exc: InputError, field_name: str) -> InputError:
    return InputError(field_name, exc.expected, exc.got)


def _models() -> Any:
    from calibkit.models import MODELS

    return MODELS


class _Corruptions(Names):
    """Corruption names; ``None`` or ``"all"``: every one (an unknown name is refused
    saying which corruptions are not available here, and why)."""

    def __init__(self) -> None:
        super().__init__(what="corruption names, or None for all", min_len=1)

    def check(self, name: str, value: object) -> tuple[str, ...]:
        from calibkit.data.corruptions import CORRUPTIONS

        if value is None or value == "all":
            return tuple(CORRUPTIONS.names())
        return super().check(name, value)

    def check_name(self, name: str, item: str) -> None:
        from calibkit.data.corruptions import CORRUPTIONS, UNAVAILABLE

        valid = CORRUPTIONS.names()
        if item not in valid:
            why = "; ".join(f"{k} is not available: {v}" for k, v in UNAVAILABLE.items())
            raise unknown_name(name, item, valid, f"corruptions ({why})")


class _Methods(Names):
    """Calibrators of logits, or ``none`` (the model's softmax)."""

    def __init__(self) -> None:
        super().__init__(what="calibrators of logits or none", min_len=1)

    def check_name(self, name: str, item: str) -> None:
        from calibkit.calibrators import CALIBRATORS

        if item in CALIBRATORS and CALIBRATORS.kind_of(item) != "logits":
            kind = CALIBRATORS.kind_of(item)
            got = f"{item!r}, of kind {kind!r} (the model, its images or groups)"
            raise InputError(name, "calibrators of logits (kind 'logits')", got)
        if item != "none" and item not in CALIBRATORS:
            valid = ["none", *CALIBRATORS.names("logits")]
            raise unknown_name(name, item, valid, "calibrators")


class _Scores(Names):
    """Conformity scores; ``"none"``: none."""

    def __init__(self) -> None:
        super().__init__(what="conformity scores, or none")

    def check(self, name: str, value: object) -> tuple[str, ...]:
        return () if value == "none" else super().check(name, value)

    def check_name(self, name: str, item: str) -> None:
        from calibkit.calibrators.sets.conformal_scores import SCORES

        if item not in SCORES:
            raise unknown_name(name, item, SCORES.names(), "conformity scores")


class ShiftSettings(Settings):
    """Everything a shift study needs; every name and number is checked when the settings
    are made, and an error names the field (``calibkit shift`` renames it to the option).
    Names are given as a list or as one string of comma-separated names.

    Examples
    --------
    >>> ShiftSettings("resnet20", "w.th", corruptions="fog,gaussian_noise").corruptions
    Traceback (most recent call last):
    ...
    calibkit.core.errors.InputError: weights: expected an existing checkpoint file, got 'w.th'
    """

    model: str = param(
        check=Registered("model", _models),
        doc="A registered model (:data:`calibkit.models.MODELS`).",
    )
    weights: str | os.PathLike[str] = param(
        check=FilePath("checkpoint file", exists=True),
        doc="The model's checkpoint file (:func:`calibkit.models.load_model`).",
    )
    data: str = param(
        default="cifar10-jpeg",
        check=String(),
        doc="A clean image dataset spec (:func:`calibkit.data.load_dataset`).",
    )
    data_dir: str | os.PathLike[str] | None = param(
        default=None,
        check=NoneOr(FilePath("folder")),
        doc="The dataset's folder (None: ``$CALIBKIT_DATA`` or the cache).",
    )
    split: str = param(default="test", check=String(), doc="The dataset's split used.")
    cal_size: int | float = param(
        default=5000,
        check=SPLIT_SIZE,
        doc="The clean calibration part, stratified: a count or a fraction.",
    )
    test_size: int | None = param(
        default=None,
        check=NoneOr(Integer(low=1)),
        doc="The test images kept of the rest, stratified (None: all).",
    )
    corruptions: str | Sequence[str] | None = param(
        default=None,
        check=_Corruptions(),
        doc="Corruptions (None or ``all``: every one of :data:`calibkit.data.CORRUPTIONS`).",
    )
    severities: Sequence[int] = param(
        default=(1, 2, 3, 4, 5),
        check=TupleOf(Integer(1, 5), min_len=1, order="dedupe", single=True),
        doc="The corruptions' severities.",
    )
    methods: str | Sequence[str] = param(
        default=DEFAULT_METHODS,
        check=_Methods(),
        doc="Calibrators of logits (``none``: the model's softmax).",
    )
    scores: str | Sequence[str] = param(
        default=DEFAULT_SCORES,
        check=_Scores(),
        doc="Conformity scores, each split conformal on temperature scaling.",
    )
    alpha: float = param(default=0.1, check=MISCOVERAGE, doc="The conformal methods' miscoverage.")
    mean: Sequence[float] = param(
        default=IMAGENET_MEAN,
        check=TupleOf(Real(), min_len=1),
        doc="The input normalisation's mean, one value per channel.",
    )
    std: Sequence[float] = param(
        default=IMAGENET_STD,
        check=TupleOf(POSITIVE, min_len=1),
        doc="The input normalisation's standard deviation, one value per channel.",
    )
    device: str = param(default="auto", check=DEVICE, doc="Where the model runs.")
    batch_size: int = param(default=500, check=Integer(low=1), doc="Images per forward pass.")
    n_floor_draws: int = param(
        default=100, check=RESAMPLES, doc="Draws of the ECE noise floor (0: none)."
    )
    n_bins: int = param(default=15, check=N_BINS, doc="Bins of the binned metrics.")
    seed: int = param(
        default=0,
        check=SEED,
        doc="The seed of the split, the corruptions, the floors and the conformal split.",
    )
    smoke: bool = param(
        default=False,
        check=Boolean(),
        doc="Marks a smoke run (:meth:`smoke_run`): a toy size, said in the log and report.",
    )

    def smoke_run(self) -> ShiftSettings:
        """These settings at the toy size of :data:`SMOKE` (the model, data, device and
        seed kept), marked ``smoke``: the whole study in under a minute on a CPU.

        >>> s = ShiftSettings("resnet20", __file__).smoke_run()
        >>> s.smoke, s.cal_size, s.corruptions, s.severities, s.methods
        (True, 300, ('gaussian_noise', 'fog'), (1, 3, 5), ('none', 'temperature'))
        """
        return replace(self, **SMOKE, smoke=True)

    def _check_params(self) -> None:
        if isinstance(self.cal_size, int):  # a fraction: once the split's size is known
            check_conformal_size(self.scores, self.alpha, self.cal_size, self.seed)
        if len(self.mean) != len(self.std):
            raise InputError("std", f"{len(self.mean)} values, as many as mean", repr(self.std))

    def as_dict(self) -> dict[str, Any]:
        """The settings as JSON-ready values (paths as str, tuples as lists)."""
        out = asdict(self)
        for k, v in out.items():
            if isinstance(v, os.PathLike):
                out[k] = os.fspath(v)
            elif isinstance(v, tuple):
                out[k] = list(v)
        return out


@dataclass(frozen=True)
class ShiftResult:
    """What :func:`run_shift` found: the table and what it was computed on.

    ``config`` is the resolved configuration (the settings, every name spelled out, with
    the part sizes, the device, the classes and the wall time), as ``config.json`` holds.
    """

    rows: list[ShiftRow]
    settings: ShiftSettings
    config: dict[str, Any]
    n_cal: int
    n_test: int
    device: str
    classes: tuple[str, ...]
    wall_seconds: float

    def summary(self) -> list[tuple[str, int, int, dict[str, float]]]:
        """The mean over the corruptions per method and severity (:func:`severity_summary`)."""
        return severity_summary(self.rows)


def _smoke_text() -> str:
    """What a smoke run keeps, in words.

    >>> _smoke_text()  # doctest: +ELLIPSIS
    '300 calibration and 300 test images, gaussian_noise and fog at severities 1, 3, 5, ...'
    """
    sm = SMOKE
    return (
        f"{sm['cal_size']} calibration and {sm['test_size']} test images, "
        f"{' and '.join(sm['corruptions'])} at severities {', '.join(map(str, sm['severities']))}, "
        f"{', '.join(sm['methods'])} and {', '.join(sm['scores'])}"
    )


def run_shift(settings: ShiftSettings) -> ShiftResult:
    """The shift study of ``settings``: load the dataset's split, split it into a clean
    calibration part and a test part, load the model, make its logits on both and on every
    corrupted copy of the test part, then fit each method on the clean calibration part and
    judge it on every set (:func:`shift_table`).

    Errors name the field of :class:`ShiftSettings` to change (``data``, ``split``, ...).
    """
    from calibkit.core.devices import resolve_device
    from calibkit.data import dataset_classes, load_dataset, parse_dataset_spec
    from calibkit.models import load_model, model_classes

    s = settings
    try:
        device = resolve_device(s.device)
        spec = parse_dataset_spec(s.data)
    except InputError as exc:
        raise _renamed(exc, "device" if exc.argument == "device" else "data") from None
    if spec.corruption is not None:
        raise InputError("data", "a clean dataset (corruptions: the corruptions field)", s.data)
    n_model = model_classes(s.model, s.weights)  # the model's classes against the data's,
    where = {"spec": "data", "source": "data_dir", "archive": "data_dir"}
    try:  # before any image is decoded where the data's can be known without it
        every = dataset_classes(s.data, s.data_dir)
    except InputError as exc:
        raise _renamed(exc, where[exc.argument]) if exc.argument in where else exc from None
    if every is not None:
        keeps_labels(s.data, spec.classes, every, (s.model, s.weights, n_model))
    started = time.perf_counter()
    try:
        data = load_dataset(s.data, s.data_dir, keep_labels=True)
    except InputError as exc:  # the spec is the data field; a missing file, the folder's
        raise _renamed(exc, where[exc.argument]) if exc.argument in where else exc from None
    if s.split not in data:
        raise InputError("split", f"a split among {', '.join(data)}", repr(s.split))
    arrays = data[s.split]
    kept = keeps_labels(s.data, spec.classes, arrays.classes, (s.model, s.weights, n_model))
    if kept:
        columns = ", ".join(f"{arrays.classes.index(c)} ({c})" for c in spec.classes or ())
        log.info("%s: scored on the model's columns %s of its %d", s.data, columns, n_model)
    elif spec.classes is not None:
        arrays = arrays.subset_classes(spec.classes)  # a model of these classes: 0..k-1
    channels = int(arrays.images.shape[-1])
    for name in ("mean", "std"):
        if len(getattr(s, name)) != channels:
            got = repr(getattr(s, name))
            raise InputError(name, f"{channels} values (one per channel of {s.data})", got)
    cal_idx, test_idx = split_parts(arrays.labels, s.cal_size, s.test_size, s.seed)
    check_conformal_size(s.scores, s.alpha, len(cal_idx), s.seed)
    model = load_model(s.model, s.weights, len(arrays.classes), channels)
    corruptions, severities = tuple(s.corruptions or ()), tuple(s.severities)
    if s.smoke:
        log.info("smoke run: a toy size (%s), not for conclusions", _smoke_text())
    log.info(
        "%s on %s:%s: %s clean calibration images, %s test images, %d corrupted sets, on %s",
        *(s.model, s.data, s.split, f"{len(cal_idx):,}", f"{len(test_idx):,}"),
        *(len(corruptions) * len(severities), device),
    )
    kw: dict[str, Any] = {"device": device, "batch_size": s.batch_size}
    y, x = arrays.labels, arrays.images
    cal = as_outputs(y[cal_idx], logits=model_logits(model, x[cal_idx], s.mean, s.std, **kw))
    test = as_outputs(y[test_idx], logits=model_logits(model, x[test_idx], s.mean, s.std, **kw))
    shifted = shifted_logits(
        model,
        x[test_idx],
        y[test_idx],
        corruptions,
        severities,
        mean=s.mean,
        std=s.std,
        seed=s.seed,
        key=f"{spec.name}/{s.split}",
        indices=test_idx,
        **kw,
    )
    log.info("fitting the calibrators on the clean calibration part and judging every set")
    rows = shift_table(
        cal,
        test,
        shifted,
        list(s.methods),
        scores=list(s.scores),
        alpha=s.alpha,
        n_floor_draws=s.n_floor_draws,
        binning=Binning(n_bins=s.n_bins),
        seed=s.seed,
    )
    wall = time.perf_counter() - started
    config = s.as_dict() | {
        "n_calibration": len(cal_idx),
        "n_test": len(test_idx),
        "device": str(device),
        "classes": list(arrays.classes),
        "wall_seconds": round(wall, 1),
    }
    if kept:
        config["subset"] = list(spec.classes or ())  # scored on the columns of a model of all
    return ShiftResult(
        rows=rows,
        settings=s,
        config=config,
        n_cal=len(cal_idx),
        n_test=len(test_idx),
        device=str(device),
        classes=tuple(arrays.classes),
        wall_seconds=wall,
    )
