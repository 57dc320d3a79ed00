"""A shift study from its settings, as ``calibkit shift`` runs it: :class:`ShiftSettings`
(every name and number checked when made), :func:`run_shift` (load the dataset, split it,
load the model, make the logits, corrupt, fit, judge with the parts of
:mod:`calibkit.workflows.shift`) and what it found, :class:`ShiftResult`.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from calibkit.core.errors import InputError
from calibkit.core.options import Binning
from calibkit.core.outputs import as_outputs
from calibkit.core.validation import MISCOVERAGE, N_BINS, RESAMPLES, SEED, SPLIT_SIZE, Integer
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


def _names(value: str | Sequence[str] | None, name: str) -> tuple[str, ...] | None:
    """A list of names as a tuple without repeats (a str: comma-separated)."""
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else list(value)
    if not all(isinstance(v, str) for v in items):
        raise InputError(name, "names (str)", repr(value))
    return tuple(dict.fromkeys(v.strip() for v in items if v.strip()))


def _renamed(exc: InputError, field_name: str) -> InputError:
    return InputError(field_name, exc.expected, exc.got)


@dataclass(frozen=True)
class ShiftSettings:
    """Everything a shift study needs; every name and number is checked when the settings
    are made, and an error names the field (``calibkit shift`` renames it to the option).

    Attributes
    ----------
    model, weights
        A registered model (:data:`calibkit.models.MODELS`) and its checkpoint file
        (:func:`calibkit.models.load_model`).
    data, data_dir, split
        A clean image dataset spec (:func:`calibkit.data.load_dataset`), its folder
        (``None``: ``$CALIBKIT_DATA`` or the cache) and the split used.
    cal_size, test_size
        The clean calibration part (a count or a fraction, stratified) and the test images
        kept of the rest (stratified; ``None``: all).
    corruptions, severities
        Corruption names (``None``: every one of :data:`calibkit.data.CORRUPTIONS`) and
        severities in 1..5.
    methods, scores, alpha
        Calibrators of logits (``"none"``: the model's softmax), conformity scores (each
        split conformal on temperature scaling; empty: none) and their miscoverage.
    mean, std
        The input normalisation, one value per channel.
    device, batch_size
        ``auto``, ``cpu``, ``cuda`` or ``cuda:N``, and images per forward pass.
    n_floor_draws, n_bins, seed
        Draws of the ECE noise floor (0: none), bins of the binned metrics, and the seed of
        the split, the corruptions, the floors and the conformal split.
    smoke
        Marks a smoke run (:meth:`smoke_run`): a toy size, said in the log and the report.

    >>> ShiftSettings("resnet20", "w.th", corruptions="fog,gaussian_noise").corruptions
    Traceback (most recent call last):
    ...
    calibkit.core.errors.InputError: weights: expected an existing checkpoint file, got 'w.th'
    """

    model: str
    weights: str | os.PathLike[str]
    data: str = "cifar10-jpeg"
    data_dir: str | os.PathLike[str] | None = None
    split: str = "test"
    cal_size: int | float = 5000
    test_size: int | None = None
    corruptions: str | Sequence[str] | None = None
    severities: Sequence[int] = (1, 2, 3, 4, 5)
    methods: str | Sequence[str] = DEFAULT_METHODS
    scores: str | Sequence[str] = DEFAULT_SCORES
    alpha: float = 0.1
    mean: Sequence[float] = IMAGENET_MEAN
    std: Sequence[float] = IMAGENET_STD
    device: str = "auto"
    batch_size: int = 500
    n_floor_draws: int = 100
    n_bins: int = 15
    seed: int = 0
    smoke: bool = False

    def smoke_run(self) -> ShiftSettings:
        """These settings at the toy size of :data:`SMOKE` (the model, data, device and
        seed kept), marked ``smoke``: the whole study in under a minute on a CPU.

        >>> s = ShiftSettings("resnet20", __file__).smoke_run()
        >>> s.smoke, s.cal_size, s.corruptions, s.severities, s.methods
        (True, 300, ('gaussian_noise', 'fog'), (1, 3, 5), ('none', 'temperature'))
        """
        return replace(self, **SMOKE, smoke=True)

    def __post_init__(self) -> None:
        def put(name: str, value: object) -> None:
            object.__setattr__(self, name, value)

        put("corruptions", self._corruptions())
        put("severities", self._severities())
        put("methods", self._methods())
        put("scores", self._scores())
        self._model()
        put("cal_size", SPLIT_SIZE.check("cal_size", self.cal_size))
        if self.test_size is not None:
            put("test_size", Integer(low=1).check("test_size", self.test_size))
        put("alpha", MISCOVERAGE.check("alpha", self.alpha))
        put("seed", SEED.check("seed", self.seed))
        if isinstance(self.cal_size, int):  # a fraction: once the split's size is known
            check_conformal_size(self.scores, self.alpha, self.cal_size, self.seed)
        for name in ("mean", "std"):
            values = getattr(self, name)
            try:
                values = tuple(float(v) for v in values)
            except (TypeError, ValueError):
                raise InputError(name, "one number per channel", repr(values)) from None
            if not values or not all(math.isfinite(v) for v in values):
                raise InputError(name, "one finite number per channel", repr(values))
            put(name, values)
        if any(v <= 0 for v in self.std):
            raise InputError("std", "positive numbers", repr(self.std))
        if len(self.mean) != len(self.std):
            raise InputError("std", f"{len(self.mean)} values, as many as mean", repr(self.std))
        put("batch_size", Integer(low=1).check("batch_size", self.batch_size))
        put("n_floor_draws", RESAMPLES.check("n_floor_draws", self.n_floor_draws))
        put("n_bins", N_BINS.check("n_bins", self.n_bins))
        if not isinstance(self.smoke, bool):
            raise InputError("smoke", "True or False", repr(self.smoke))
        if not isinstance(self.device, str) or not self.device:
            raise InputError("device", "cpu, cuda, cuda:N or auto", repr(self.device))

    def _corruptions(self) -> tuple[str, ...]:
        from calibkit.data.corruptions import CORRUPTIONS, UNAVAILABLE

        valid = CORRUPTIONS.names()
        if self.corruptions is None or self.corruptions == "all":
            return tuple(valid)
        names = _names(self.corruptions, "corruptions")
        if not names:
            raise InputError("corruptions", "corruption names, or None for all", "none")
        for name in names:
            if name not in valid:
                why = "; ".join(f"{k} is not available: {v}" for k, v in UNAVAILABLE.items())
                raise unknown_name("corruptions", name, valid, f"corruptions ({why})")
        return names

    def _severities(self) -> tuple[int, ...]:
        values = [self.severities] if isinstance(self.severities, int) else self.severities
        try:
            found = tuple(dict.fromkeys(Integer(1, 5).check("severities", v) for v in values))
        except TypeError:
            raise InputError("severities", "integers in 1..5", repr(self.severities)) from None
        if not found:
            raise InputError("severities", "at least one severity in 1..5", "none")
        return found

    def _methods(self) -> tuple[str, ...]:
        from calibkit.calibrators import CALIBRATORS

        names = _names(self.methods, "methods")
        if not names:
            raise InputError("methods", "at least one calibrator (or none)", repr(self.methods))
        valid = ["none", *CALIBRATORS.names("logits")]
        for name in names:
            if name in CALIBRATORS and CALIBRATORS.kind_of(name) != "logits":
                kind = CALIBRATORS.kind_of(name)
                got = f"{name!r}, of kind {kind!r} (the model, its images or groups)"
                raise InputError("methods", "calibrators of logits (kind 'logits')", got)
            if name != "none" and name not in CALIBRATORS:
                raise unknown_name("methods", name, valid, "calibrators")
        return names

    def _scores(self) -> tuple[str, ...]:
        from calibkit.calibrators.sets.conformal_scores import SCORES

        names = _names("" if self.scores == "none" else self.scores, "scores") or ()
        for name in names:
            if name not in SCORES:
                raise unknown_name("scores", name, SCORES.names(), "conformity scores")
        return names

    def _model(self) -> None:
        from calibkit.core.errors import UnknownNameError
        from calibkit.models import MODELS

        try:
            MODELS.get(self.model)
        except UnknownNameError as exc:
            raise _renamed(exc, "model") from None
        if not Path(self.weights).is_file():
            raise InputError("weights", "an existing checkpoint file", repr(str(self.weights)))

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
