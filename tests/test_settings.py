"""Every settings class of calibkit (demo, shift study, study, training, Neural Clamping's
SGD, resampling, binning) is a :class:`~calibkit.core.params.Settings`: each field declared
once with ``param()`` (its default, its check and its sentence), listed in the class's
docstring, and a wrong value refused by an error naming the field."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest

from calibkit.calibrators.model.clamping.settings import SGDSettings
from calibkit.core.errors import InputError
from calibkit.core.options import Binning, Resampling
from calibkit.core.params import PARAM, Settings
from calibkit.core.validation import Constraint
from calibkit.study.definition.config import DataConfig, ModelSpec, Resources, StudyConfig
from calibkit.training.config import TrainConfig
from calibkit.workflows.demo import DemoSettings
from calibkit.workflows.shift_study import ShiftSettings

#: Each settings class, with the fewest values that make one (its required fields).
REQUIRED: dict[type, dict[str, Any]] = {
    TrainConfig: {},
    DemoSettings: {},
    ShiftSettings: {"model": "resnet20", "weights": __file__},
    DataConfig: {"dataset": "digits"},
    Resources: {},
    ModelSpec: {"name": "mlp"},
    StudyConfig: {"name": "s", "data": DataConfig("digits"), "models": (ModelSpec("mlp"),)},
    SGDSettings: {},
    Resampling: {},
    Binning: {},
}
CLASSES = list(REQUIRED)


def _subclasses(cls: type) -> set[type]:
    found = set(cls.__subclasses__())
    return found.union(*(_subclasses(c) for c in found)) if found else found


def test_the_list_is_every_settings_class_of_calibkit() -> None:
    ours = {c for c in _subclasses(Settings) if c.__module__.startswith("calibkit.")}
    assert ours == set(CLASSES)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_every_field_is_declared_once_and_documented(cls: type) -> None:
    assert issubclass(cls, Settings)
    doc = cls.__doc__ or ""
    assert "Attributes\n" not in doc  # no hand-written second copy of the fields' words
    listed = re.findall(r"^(\w+) : ", doc.split("Parameters\n----------\n", 1)[1], re.M)
    fields = dataclasses.fields(cls)
    assert listed[: len(fields)] == [f.name for f in fields]
    for f in fields:
        assert f.metadata[PARAM].doc in " ".join(doc.split())
    assert all(isinstance(f.metadata[PARAM].check, Constraint) for f in fields)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_the_defaults_are_valid(cls: type) -> None:
    made = cls(**REQUIRED[cls])
    assert dataclasses.replace(made) == made


@pytest.mark.parametrize(
    ("cls", "name"),
    [(cls, f.name) for cls in CLASSES for f in dataclasses.fields(cls)],
    ids=lambda x: getattr(x, "__name__", x),
)
def test_a_wrong_value_names_its_field(cls: type, name: str) -> None:
    with pytest.raises(InputError) as info:
        cls(**{**REQUIRED[cls], name: object()})
    assert info.value.argument == name
