"""The randomised conformal modules refuse the uniform draws ``predict_set`` refuses (issue
32): one check (:func:`check_uniform`) for both, eager (the same InputError), scripted (a
ValueError) and exported (a runtime assertion)."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch

from calibkit.calibrators.sets.conformal import ConformalClassifier
from calibkit.calibrators.sets.conformal_module import check_uniform
from calibkit.core.errors import InputError
from tests.calibrators.problems import random_problem

pytestmark = [
    pytest.mark.usefixtures("one_thread"),
    pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning"),
]

#: The draws of the issue: above 1, negative, NaN; and 1 itself (U lies in [0, 1)).
BAD = [1.5, -2.0, float("nan"), 1.0]


@functools.cache
def _fitted() -> tuple[ConformalClassifier, np.ndarray]:
    z, y = random_problem(300, 3, seed=0)
    return ConformalClassifier(conformity_score="aps", randomized=True).fit(z, y), z[:4]


def _u(bad: float) -> np.ndarray:
    u = np.array([0.1, 0.5, 0.9, 0.0])
    u[2] = bad
    return u


def _module(coverage: float | None, how: str) -> torch.nn.Module:
    cp, z = _fitted()
    module = cp.to_module(coverage=coverage)
    if how == "script":
        return torch.jit.script(module)  # type: ignore[no-any-return]
    if how == "export":
        args = (torch.tensor(z), torch.tensor(_u(0.5)))
        return torch.export.export(module, args).module()
    return module


@pytest.mark.parametrize("bad", BAD)
def test_predict_set_and_the_module_refuse_the_same_u_alike(bad: float) -> None:
    cp, z = _fitted()
    with pytest.raises(InputError) as by_python:
        cp.predict_set(z, _u(bad))
    for coverage in (None, 0.9):
        with pytest.raises(InputError) as by_module:
            _module(coverage, "eager")(torch.tensor(z), torch.tensor(_u(bad)))
        assert str(by_module.value) == str(by_python.value)
    assert (
        str(by_python.value)
        == f"u: expected 4 values in [0, 1), one per row, got {bad!r} at index 2"
    )


@pytest.mark.parametrize("bad", BAD)
@pytest.mark.parametrize("how", ["script", "export"])
@pytest.mark.parametrize("coverage", [None, 0.9])
def test_a_scripted_or_exported_module_refuses_them_too(
    how: str, coverage: float | None, bad: float
) -> None:
    _, z = _fitted()
    module = _module(coverage, how)
    good = module(torch.tensor(z), torch.tensor(_u(0.5)))  # a valid u still runs
    assert good is not None
    with pytest.raises(Exception, match=r"u: expected 4 values in \[0, 1\)"):
        module(torch.tensor(z), torch.tensor(_u(bad)))


def test_u_of_the_wrong_shape_is_refused_naming_it() -> None:
    with pytest.raises(
        InputError, match=r"u: expected 3 values in \[0, 1\), one per row, got shape \(3, 1\)"
    ):
        check_uniform(torch.zeros(3, 1), 3)
    cp, z = _fitted()
    with pytest.raises(InputError, match=r"got shape \(3,\)"):
        cp.to_module()(torch.tensor(z), torch.zeros(3, dtype=torch.float64))
    with pytest.raises(InputError, match="no numbers"):
        cp.predict_set(z, ["a", "b", "c", "d"])
