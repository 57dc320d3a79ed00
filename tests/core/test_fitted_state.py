"""core.fitted_state: fitted values bounded by their owner's parameters (:class:`Param`).

A temperature searched in ``[t_min, t_max]`` is declared with :class:`Param` ends, and
:func:`check_state` given the loaded parameters checks it against their range (to the fit's
rounding), so a hand-edited value outside it is refused by name before anything computes
with it (``exp`` of a log temperature of 1000 overflows).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from calibkit.core.errors import InputError
from calibkit.core.fitted_state import PARAM_SLACK, Array, InRange, Param, check_state
from calibkit.core.validation import NoneOr, Real

PARAMS = {"t_min": 0.1, "t_max": 10.0}
LOG_T = InRange(Param("t_min", log=True), Param("t_max", log=True))
T = InRange(Param("t_min"), Param("t_max"), within=Real(0.0, closed="neither"))


def test_a_param_end_is_the_parameter_or_its_log() -> None:
    assert Param("t_max").value(PARAMS) == 10.0
    assert Param("t_max", log=True).value(PARAMS) == math.log(10.0)
    assert str(Param("t_min", log=True)) == "log t_min"


@pytest.mark.parametrize("value", [1000.0, 709.8, math.log(10.0) + 1e-6, math.log(0.1) - 1e-6])
def test_a_value_outside_its_parameters_range_is_refused_by_name(value: float) -> None:
    with pytest.raises(InputError) as info:
        LOG_T.bind(PARAMS).check("state.log_temperature_", value)
    assert str(info.value) == (
        "state.log_temperature_: expected a finite number in [log t_min = -2.30259, "
        f"log t_max = 2.30259], got {value!r}"
    )


def test_the_ends_hold_to_the_fits_rounding() -> None:
    bound = T.bind(PARAMS)
    assert bound.check("t", 10.0 * (1 + PARAM_SLACK / 2)) == 10.0 * (1 + PARAM_SLACK / 2)
    assert bound.check("t", 1.0 / (1.0 / 10.0)) == 10.0
    with pytest.raises(InputError, match=r"in \[t_min = 0.1, t_max = 10\]"):
        bound.check("t", 10.0 * (1 + 3 * PARAM_SLACK))
    log_t = -math.log(1 / 10.0)  # as a fit at t_max computes it: not log(10) exactly
    assert log_t != math.log(10.0)
    assert LOG_T.bind(PARAMS).check("log_t", log_t) == log_t


def test_unbound_the_param_ends_are_not_checked_but_the_rest_is() -> None:
    assert T.check("t", 1e300) == 1e300  # the parameters are not known
    assert T.describe() == "a finite number > 0 in [t_min, t_max]"
    with pytest.raises(InputError, match="> 0"):
        T.check("t", -1.0)
    with pytest.raises(InputError):
        LOG_T.check("log_t", math.inf)


def test_check_state_binds_every_declaration_to_the_params() -> None:
    declared = {
        "log_temperature_": LOG_T,
        "group_temperatures_": Array(shape=("g",), low=Param("t_min"), high=Param("t_max")),
        "sgd_": NoneOr(T),
    }
    good = {
        "log_temperature_": 0.5,
        "group_temperatures_": np.array([0.1, 10.0]),
        "sgd_": None,
    }
    assert check_state(declared, good, {}, prefix="state.", params=PARAMS)["sgd_"] is None
    for field, bad in [
        ("group_temperatures_", np.array([1.0, 1e308])),
        ("sgd_", 11.0),
        ("log_temperature_", 3.0),
    ]:
        with pytest.raises(InputError) as info:
            check_state(declared, {**good, field: bad}, {}, prefix="state.", params=PARAMS)
        assert info.value.argument == f"state.{field}"
    bad = {**good, "group_temperatures_": np.array([1.0, 1e308])}
    with pytest.raises(InputError) as info:
        check_state(declared, bad, {}, prefix="state.", params=PARAMS)
    message = str(info.value)
    assert "in [t_min = 0.1, t_max = 10], got 1e+308 at index 1" in message
    # without params (a declaration checked alone), the parameter ends are not read
    assert check_state(declared, {**good, "sgd_": 11.0}, {})["sgd_"] == 11.0


def test_a_declaration_without_param_ends_binds_to_itself() -> None:
    plain = Array(shape=("k",), low=0.0)
    assert plain.bind(PARAMS) is plain
    assert Real().bind(PARAMS).describe() == "a finite number"
    inner = InRange(0.0, 1.0)
    assert inner.bind(PARAMS) is inner
