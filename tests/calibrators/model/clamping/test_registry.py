"""Tests of the Neural Clamping variants by name (the input calibrators of a study)."""

from __future__ import annotations

import pytest
from torch import nn

from calibkit.calibrators import CALIBRATORS, create_calibrator
from calibkit.calibrators.model.clamping import (
    NeuralClamping,
    SGDSettings,
    create_input_calibrator,
    input_calibrator_names,
)
from calibkit.calibrators.model.clamping.registry import base_name
from calibkit.core.errors import InputError, UnknownNameError

MODEL = nn.Linear(2, 3)


def test_the_input_calibrators_are_the_neural_clamping_entries() -> None:
    names = input_calibrator_names()
    assert names
    assert all(issubclass(CALIBRATORS.get(n), NeuralClamping) for n in names)
    assert set(names) == {n for n in CALIBRATORS.names() if CALIBRATORS.kind_of(n) == "model"}


def test_one_registry_with_a_flag() -> None:
    """The variants are entries of the one calibrator registry, flagged ``needs_model``."""
    for name in input_calibrator_names():
        assert CALIBRATORS.get(name).needs_model
        assert isinstance(create_calibrator(name, model=MODEL), NeuralClamping)
    assert not CALIBRATORS.get("temperature").needs_model
    with pytest.raises(InputError, match=r"^model: expected the model"):
        create_calibrator("nc_ce")
    with pytest.raises(InputError, match=r"^model: expected no model"):
        create_calibrator("temperature", model=MODEL)


@pytest.mark.parametrize(
    ("name", "gamma", "init", "train"),
    [
        ("nc_ce", (0.0,), "data", "joint"),
        ("nc_fl", (1.0,), "data", "joint"),
        ("nc_fast", (1.0,), "data", "temperature"),
        ("ts_focal", (1.0,), "zero", "temperature"),
    ],
)
def test_each_variant(name: str, gamma: tuple[float, ...], init: str, train: str) -> None:
    nc = create_input_calibrator(name, MODEL)
    assert isinstance(nc, NeuralClamping)
    assert (nc.gamma, nc.init, nc.train) == (gamma, init, train)


def test_flat_params_as_in_a_config() -> None:
    nc = create_input_calibrator(
        "nc_fl@tuned", MODEL, gamma=[0.0, 1.0], gamma_select="fast", precision="bfloat16"
    )
    assert nc.gamma == (0.0, 1.0)
    assert nc.gamma_select == "fast"
    assert nc.sgd == SGDSettings(precision="bfloat16")
    assert create_input_calibrator("nc_ce", MODEL, gamma=2.0).gamma == (0.0,)  # always CE
    assert create_input_calibrator("nc_fast", MODEL, train="joint").train == "temperature"


def test_unknown_names_and_parameters() -> None:
    with pytest.raises(UnknownNameError, match="nc_ce, nc_fast, nc_fl, ts_focal"):
        create_input_calibrator("nc_xx", MODEL)
    with pytest.raises(InputError, match=r"^nc_ce: expected parameters among gamma, .*'wrong'"):
        create_input_calibrator("nc_ce", MODEL, wrong=1)


def test_base_name() -> None:
    assert base_name("nc_ce@holdout") == "nc_ce"
    assert base_name("nc_ce") == "nc_ce"
