"""The configuration of a study: data, models, training, calibrators, seeds.

A study is a TOML file (see ``experiments/*/configs/`` and the README)::

    name = "bird-vs-cat"
    seeds = [0, 1, 2, 3, 4]
    calibrators = []            # empty: every calibrator that applies
    calibrator_params = { temperature_ece = { t_min = 0.01, t_max = 10.0, t_step = 0.01 } }

    [data]
    dataset = "cifar10-jpeg:bird,cat"
    data_dir = "../../shared/data"   # relative to this file
    calibration_size = 1000

    [training]                  # defaults for every model
    epochs = 30
    lr = 0.001

    [[models]]
    name = "lenet5"

    [[models]]
    name = "resnet20"
    training = { optimizer = "sgd", lr = 0.1, schedule = "onecycle", augment = true }

Every key is checked (an unknown or mistyped one is named with its file), and so are the
names of models and calibrators. :meth:`StudyConfig.select` narrows a study to some models,
seeds or epochs without editing the file; :meth:`StudyConfig.smoke` shrinks it to a toy size
that runs the same code paths in seconds.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from torch import nn

from calibkit.calibrators import CALIBRATORS
from calibkit.calibrators.model.clamping.registry import create_input_calibrator
from calibkit.core.errors import InputError, UnknownNameError
from calibkit.core.params import Settings, param
from calibkit.core.validation import (
    DEVICE,
    N_BINS,
    NON_NEGATIVE,
    POSITIVE,
    RESAMPLES,
    SEED,
    SPLIT_SIZE,
    Boolean,
    Choice,
    Constraint,
    FilePath,
    InstanceOf,
    Integer,
    Names,
    NoneOr,
    Real,
    Registered,
    String,
    Table,
    TupleOf,
    check_params,
)
from calibkit.data import parse_dataset_spec
from calibkit.io.toml import from_mapping, load_toml
from calibkit.metrics import FLOOR_METRICS, METRIC_NAMES
from calibkit.models import MODELS
from calibkit.training import TrainConfig


class _DatasetSpec(Constraint):
    """A dataset spec (:func:`~calibkit.data.parse_dataset_spec`: the names, a corruption
    and its severity); an error names the part of the spec that is wrong (``dataset``,
    ``classes``, ``severity``, ...)."""

    def check(self, name: str, value: object) -> str:
        if not isinstance(value, str):
            self.fail(name, value)
        parse_dataset_spec(value)
        return value

    def describe(self) -> str:
        return "a dataset spec, name[:class,class][@corruption:severity[:split]]"


#: What a smoke run keeps of each part (``DataConfig.smoke``): ``(random samples, at least
#: this many of each class)``; calibrators that cross-validate need 5 of each class. And its
#: batch size: one epoch of two batches.
SMOKE_SIZES = {"train": (16, 0), "cal": (16, 5), "test": (32, 0)}
SMOKE_BATCH_SIZE = 8


class DataConfig(Settings):
    """Where the data comes from and how it is split.

    The calibration part is the dataset's ``val`` split when it has one (MedMNIST), else
    ``calibration_size`` samples carved from the split named by ``calibration_from``:
    ``train`` (the default), or ``test`` for a model that may have seen the training images
    before (one initialised from a checkpoint trained on them), so that calibration and
    test images are both unseen. The carve is stratified and seeded by ``split_seed``: the
    same for every model and seed, so that the seeds measure training noise
    (``split_by_seed``: for models that are not trained, ``epochs = 0``, the seeds then
    measure the split's noise instead). ``train_size`` fits a study into a CPU budget.
    ``mean`` and ``std``, when given, replace the training part's statistics (e.g. those a
    pretrained model was trained with). ``smoke`` is part of every run's identity, so a
    smoke folder and a real one never mix.
    """

    dataset: str = param(
        check=_DatasetSpec(),
        doc="A :data:`~calibkit.data.DATASETS` spec (:func:`~calibkit.data.load_dataset`).",
    )
    data_dir: str | None = param(
        default=None,
        check=NoneOr(FilePath("folder")),
        doc="The dataset's folder (relative to the study file; None: the default).",
    )
    calibration_size: int | float = param(
        default=0.1, check=SPLIT_SIZE, doc="The calibration part: a count, or a fraction."
    )
    calibration_from: str = param(
        default="train",
        check=Choice("train", "test"),
        doc="The split the calibration part is carved from.",
    )
    train_size: int | float | None = param(
        default=None,
        check=NoneOr(SPLIT_SIZE),
        doc="The training subset: a count, or a fraction (None: all that remains).",
    )
    split_seed: int = param(default=0, check=SEED, doc="The seed of the carve.")
    split_by_seed: bool = param(
        default=False, check=Boolean(), doc="Carve per run, with ``split_seed + seed``."
    )
    normalize: bool = param(
        default=True,
        check=Boolean(),
        doc="Normalise inputs by the training part's per-channel mean and std.",
    )
    mean: tuple[float, ...] = param(
        default=(), check=TupleOf(Real()), doc="Per-channel means to normalise by."
    )
    std: tuple[float, ...] = param(
        default=(), check=TupleOf(POSITIVE), doc="Per-channel stds to normalise by."
    )
    smoke: bool = param(
        default=False,
        check=Boolean(),
        doc="Marks a toy run (:meth:`StudyConfig.smoke`, :data:`SMOKE_SIZES`).",
    )

    def _check_params(self) -> None:
        if len(self.mean) != len(self.std):
            raise InputError("mean/std", "as many means as stds", f"{self.mean} / {self.std}")


def check_input_calibrators(
    names: tuple[str, ...], params: dict[str, Any], model: nn.Module | None = None
) -> None:
    """Fail early on unknown names or parameters (with ``model``, or a stand-in model)."""
    stand_in = nn.Linear(1, 2) if model is None else model
    for i, name in enumerate(names):
        if name.endswith("@") or name in names[:i]:
            raise InputError("input_calibrators", "distinct names, NAME or NAME@LABEL", repr(name))
        options = {k: v for k, v in params.get(name, {}).items() if k != "ablation"}
        try:
            create_input_calibrator(name, stand_in, **options)
        except InputError as exc:  # an undeclared parameter is blamed on the method's name
            if exc.argument != name.split("@", 1)[0]:
                raise
            raise InputError(f"input_calibrator_params.{name}", exc.expected, exc.got) from None
    for key in params:
        if key not in names:
            raise InputError(
                f"input_calibrator_params.{key}",
                "parameters of a method listed in input_calibrators (" + ", ".join(names) + ")",
                repr(key),
            )


class _GpuShare(Constraint):
    """GPUs >= 0 (a fraction shares one), as an int when whole."""

    def check(self, name: str, value: object) -> int | float:
        gpus = NON_NEGATIVE.check(name, value)
        return int(gpus) if gpus.is_integer() else gpus

    def describe(self) -> str:
        return NON_NEGATIVE.describe()


class Resources(Settings):
    """What one unit of work of a model asks of a Ray cluster (``resources`` of a
    ``[[models]]`` table); ``device = "auto"`` uses the GPU the task was given."""

    cpus: int = param(
        default=1, check=Integer(1, 1024), doc="CPUs (also the worker's torch and BLAS threads)."
    )
    gpus: int | float = param(default=0, check=_GpuShare(), doc="GPUs (a fraction shares one GPU).")


class _Label(Constraint):
    """A model's label: letters, digits, ``_``, ``-`` or ``.`` (empty: the model's name)."""

    def check(self, name: str, value: object) -> str:
        if not isinstance(value, str):
            self.fail(name, value)
        if value and not value.replace("_", "").replace("-", "").replace(".", "").isalnum():
            raise InputError(name, "letters, digits, '_', '-' or '.'", repr(value))
        return value

    def describe(self) -> str:
        return "letters, digits, '_', '-' or '.'"


class ModelSpec(Settings):
    """One model of the study, so one architecture can appear twice with different
    settings. ``data`` overrides keys of the study's ``[data]`` table; the dataset itself
    must stay the same.

    With ``init``, a CIFAR ResNet keeps the checkpoint's classifier rows ``init_rows``, one
    per class of the study (e.g. ``[2, 3]`` for bird and cat of a CIFAR-10 model); without
    them its classifier starts at random. Any other model loads a checkpoint of itself for
    the study's classes strictly (e.g. timm's ImageNet weights for ``resnet101``,
    ``vit_small_patch16_224``, ``mixer_b16_224``: see
    :func:`~calibkit.models.load_checkpoint`)."""

    name: str = param(
        check=Registered("model", lambda: MODELS),
        doc="A registered model (:data:`calibkit.models.MODELS`).",
    )
    label: str = param(
        default="", check=_Label(), doc="Its name in results (empty: the model's name)."
    )
    params: dict[str, Any] = param(
        factory=dict, check=Table("parameters"), doc="The model factory's parameters."
    )
    training: dict[str, Any] = param(
        factory=dict,
        check=Table("training settings"),
        doc="Overrides of the study's ``[training]`` table for this model.",
    )
    data: dict[str, Any] = param(
        factory=dict,
        check=Table("data settings"),
        doc="Overrides of the study's ``[data]`` table for this model.",
    )
    init: str | None = param(
        default=None,
        check=NoneOr(FilePath("checkpoint file")),
        doc="A checkpoint to start from (relative to the study file; None: random weights).",
    )
    init_rows: tuple[int, ...] = param(
        default=(),
        check=TupleOf(Integer(low=0)),
        doc="The rows of the checkpoint's classifier a CIFAR ResNet keeps.",
    )
    resources: Resources | None = param(
        default=None,
        check=NoneOr(InstanceOf(Resources)),
        doc="What each of its units of work asks of the executor (None: one CPU).",
    )

    def _check_params(self) -> None:
        if not self.label:
            object.__setattr__(self, "label", self.name)
        cifar_resnet = MODELS.info(self.name).get("family") == "cifar_resnet"
        if self.init_rows and not cifar_resnet:
            raise InputError("init_rows", "a CIFAR ResNet (resnet20..resnet110)", repr(self.name))
        if self.init_rows and self.init is None:
            raise InputError("init_rows", "an init checkpoint to take rows from", "no init")


class _LogitCalibrators(Names):
    """Names of calibrators of logits."""

    def __init__(self) -> None:
        super().__init__(what="calibrators of logits")

    def check_name(self, name: str, item: str) -> None:
        try:
            kind = CALIBRATORS.kind_of(item)
        except UnknownNameError as exc:
            raise UnknownNameError(name, exc.name, exc.valid) from None
        if kind != "logits":
            raise InputError(name, "calibrators of logits", f"{item!r}")


class _CalibratorParams(Table):
    """Parameters of calibrators of logits, by name (each checked by its calibrator)."""

    def __init__(self) -> None:
        super().__init__("parameters of calibrators of logits, by name")

    def check(self, name: str, value: object) -> dict[str, Any]:
        table = super().check(name, value)
        for method, params in table.items():
            where = f"{name}.{method}"
            if not isinstance(params, dict):
                raise InputError(where, "a table of parameters", repr(params))
            klass = CALIBRATORS.get(method)
            if klass.kind != "logits":
                raise InputError(where, "parameters of a calibrator of logits", f"{method!r}")
            values = check_params(klass.param_constraints, params, where, prefix=where + ".")
            try:
                klass(**values)
            except InputError as exc:  # a relation between parameters
                raise InputError(f"{where}.{exc.argument}", exc.expected, exc.got) from None
        return table


def _report_metrics() -> list[str]:
    from calibkit.reporting.tables import ROW_QUANTITIES

    return [*METRIC_NAMES, *(f"{m}_floor" for m in FLOOR_METRICS), *ROW_QUANTITIES]


class StudyConfig(Settings):
    """A whole study (see the module docstring); :func:`load_study_config` reads one.

    Examples
    --------
    The study ``calibkit study`` runs by default, embedded in the package:

    >>> cfg = load_study_config(DEFAULT_CONFIG)
    >>> cfg.data.dataset, [model.label for model in cfg.models], cfg.seeds
    ('digits', ['mlp', 'mlp_dropout'], (0, 1, 2))
    """

    name: str = param(check=String(), doc="The study's name, the title of its report.")
    data: DataConfig = param(
        check=InstanceOf(DataConfig), doc="The ``[data]`` table: the data and its split."
    )
    models: tuple[ModelSpec, ...] = param(
        check=TupleOf(InstanceOf(ModelSpec), min_len=1),
        doc="The ``[[models]]`` tables: the models compared.",
    )
    training: TrainConfig = param(
        factory=TrainConfig,
        check=InstanceOf(TrainConfig),
        doc="The ``[training]`` table: the training of every model.",
    )
    seeds: tuple[int, ...] = param(
        default=(0,),
        check=TupleOf(SEED, min_len=1, order="distinct"),
        doc="The seeds: one run of each model per seed.",
    )
    calibrators: tuple[str, ...] = param(
        default=(),
        check=_LogitCalibrators(),
        doc="The calibrators fitted (empty: every calibrator that applies).",
    )
    calibrator_params: dict[str, Any] = param(
        factory=dict, check=_CalibratorParams(), doc="The calibrators' parameters, by name."
    )
    input_calibrators: tuple[str, ...] = param(
        default=(),
        check=TupleOf(String()),
        doc="Calibrators of the model and its inputs (``NAME`` or ``NAME@LABEL``).",
    )
    input_calibrator_params: dict[str, Any] = param(
        factory=dict,
        check=Table("parameters of input calibrators, by name"),
        doc="The input calibrators' parameters, by name.",
    )
    n_bins: int = param(default=15, check=N_BINS, doc="Bins of the binned metrics.")
    n_floor_draws: int = param(
        default=200, check=RESAMPLES, doc="Draws of the noise floors (0: none)."
    )
    report_metrics: tuple[str, ...] = param(
        default=(),
        check=Names(_report_metrics, what="names"),
        doc="The metrics the report shows (empty: its default ones).",
    )
    device: str = param(default="auto", check=DEVICE, doc="Where models train and run.")

    def _check_params(self) -> None:
        labels = [m.label for m in self.models]
        if len(set(labels)) != len(labels):
            raise InputError("models", "distinct labels", ", ".join(labels))
        check_input_calibrators(self.input_calibrators, self.input_calibrator_params)
        for i, spec in enumerate(self.models):
            self.model_training(spec, where=f"models[{i}].training")
            if "dataset" in spec.data or "data_dir" in spec.data:
                raise InputError(f"models[{i}].data", "no dataset or data_dir", str(spec.data))
            self.model_data(spec, where=f"models[{i}].data")

    def model_training(self, spec: ModelSpec, where: str = "training") -> TrainConfig:
        """The training settings of ``spec``: ``[training]`` with its overrides applied."""
        base = {f.name: getattr(self.training, f.name) for f in dataclasses.fields(TrainConfig)}
        return from_mapping(TrainConfig, {**base, **spec.training}, where)

    def model_data(self, spec: ModelSpec, where: str = "data") -> DataConfig:
        """The data settings of ``spec``: ``[data]`` with its overrides applied."""
        base = {f.name: getattr(self.data, f.name) for f in dataclasses.fields(DataConfig)}
        return from_mapping(DataConfig, {**base, **spec.data}, where)

    def model(self, label: str) -> ModelSpec:
        """The model with ``label``."""
        for spec in self.models:
            if spec.label == label:
                return spec
        raise UnknownNameError("model", label, [m.label for m in self.models])

    def select(
        self,
        *,
        models: list[str] | None = None,
        seeds: list[int] | None = None,
        epochs: int | None = None,
        data_dir: str | None = None,
    ) -> StudyConfig:
        """This study narrowed to some model labels and seeds, with ``epochs`` or ``data_dir``
        overriding the file (for every model)."""
        cfg = self
        if models is not None:
            cfg = dataclasses.replace(cfg, models=tuple(self.model(m) for m in models))
        if seeds is not None:
            cfg = dataclasses.replace(cfg, seeds=tuple(seeds))
        if epochs is not None:
            specs = tuple(
                dataclasses.replace(m, training={**m.training, "epochs": epochs})
                for m in cfg.models
            )
            cfg = dataclasses.replace(
                cfg, training=cfg.training.replace(epochs=epochs), models=specs
            )
        if data_dir is not None:
            cfg = dataclasses.replace(cfg, data=dataclasses.replace(cfg.data, data_dir=data_dir))
        return cfg

    def smoke(self) -> StudyConfig:
        """This study at toy size, to check it end to end in seconds: every model trains
        one epoch (none if it trains none) of two batches of :data:`SMOKE_BATCH_SIZE` on
        a few samples (:data:`SMOKE_SIZES`), for the first seed only; input calibrators
        run one epoch and the noise floors take 10 draws. The same models, data,
        calibrators and code paths; ``data.smoke`` marks every run so that a real study
        refuses its folder."""
        fast = {"epochs": 1, "batch_size": 2 * SMOKE_BATCH_SIZE}
        specs = []
        for m in self.models:
            epochs = min(1, self.model_training(m).epochs)
            training = {**m.training, "epochs": epochs, "batch_size": SMOKE_BATCH_SIZE}
            specs.append(dataclasses.replace(m, training=training))
        return dataclasses.replace(
            self,
            name=self.name if self.data.smoke else f"{self.name} (smoke)",
            data=dataclasses.replace(self.data, smoke=True),
            models=tuple(specs),
            seeds=self.seeds[:1],
            input_calibrator_params={
                name: {**self.input_calibrator_params.get(name, {}), **fast}
                for name in self.input_calibrators
            },
            n_floor_draws=min(self.n_floor_draws, 10),
        )

    def smoke_overrides(self) -> list[str]:
        """What :meth:`smoke` changes of this study, one setting a line, ``before -> after``
        (issue #46, item 3: ``--smoke`` says on the terminal what it overrides); empty for
        a study already at smoke size.

        Examples
        --------
        >>> load_study_config(DEFAULT_CONFIG).smoke_overrides()[:2]
        ['seeds 0,1,2 -> 0', 'mlp: 60 epochs of batch size 64 -> 1 epoch of batch size 8']
        """
        if self.data.smoke:
            return []
        smoke = self.smoke()
        out = []
        if smoke.seeds != self.seeds:
            out.append(f"seeds {_ints(self.seeds)} -> {_ints(smoke.seeds)}")
        for spec, small in zip(self.models, smoke.models, strict=True):
            before, after = self.model_training(spec), smoke.model_training(small)
            out.append(f"{spec.label}: {_epochs(before)} -> {_epochs(after)}")
        train, cal, test = (SMOKE_SIZES[k][0] for k in ("train", "cal", "test"))
        out.append(
            f"data: {train} training, {cal} calibration (at least {SMOKE_SIZES['cal'][1]} of "
            f"each class) and {test} test samples, drawn from the configured parts"
        )
        if self.input_calibrators:
            out.append(f"input calibrators ({', '.join(self.input_calibrators)}): 1 epoch")
        if smoke.n_floor_draws != self.n_floor_draws:
            out.append(f"noise-floor draws {self.n_floor_draws} -> {smoke.n_floor_draws}")
        return out

    def smoke_summary(self) -> str:
        """What a smoke study is, for its report's summary (empty for a real study): the
        sizes it ran at, and that its numbers are not advice."""
        if not self.data.smoke:
            return ""
        epochs = sorted({self.model_training(m).epochs for m in self.models})
        ran = " or ".join(str(e) for e in epochs) + (" epoch" if epochs[-1] == 1 else " epochs")
        train, cal, test = (SMOKE_SIZES[k][0] for k in ("train", "cal", "test"))
        return (
            f"Smoke run (--smoke): the study at toy size, to check its code paths end to end: "
            f"the first seed only ({_ints(self.seeds)}), {ran} of batches of "
            f"{SMOKE_BATCH_SIZE}, {train} training, {cal} calibration and {test} test samples, "
            f"{self.n_floor_draws} noise-floor draws. Its numbers come from a few dozen "
            "samples and are not advice: run it without --smoke for a recommendation."
        )


def _ints(values: tuple[int, ...]) -> str:
    return ",".join(str(v) for v in values)


def _epochs(training: TrainConfig) -> str:
    n = training.epochs
    return f"{n} epoch{'' if n == 1 else 's'} of batch size {training.batch_size}"


#: The embedded default study (digits, offline): ``calibkit study`` with no file.
DEFAULT_CONFIG = Path(__file__).with_name("digits.toml")


def load_study_config(path: str | os.PathLike[str]) -> StudyConfig:
    """Read a study TOML file; relative ``data_dir`` and ``init`` paths are taken from the
    file's folder.

    Examples
    --------
    >>> cfg = load_study_config(DEFAULT_CONFIG)  # the embedded digits study
    >>> cfg.name, cfg.training.epochs
    ('Digits: two MLPs, three seeds', 60)
    """
    p = Path(path)
    cfg = load_toml(StudyConfig, p)

    def resolve(path: str | None) -> str | None:
        if path is None or Path(path).is_absolute():
            return path
        return str((p.parent / path).resolve())

    models = tuple(dataclasses.replace(m, init=resolve(m.init)) for m in cfg.models)
    data = dataclasses.replace(cfg.data, data_dir=resolve(cfg.data.data_dir))
    return dataclasses.replace(cfg, data=data, models=models)
