"""The loss registry: create_loss (alone or with a penalty), gradients and reductions."""

from __future__ import annotations

import inspect
import math
import re
from typing import Any

import pytest
import torch

from calibkit.core.errors import InputError, UnknownNameError
from calibkit.losses import (
    LOSSES,
    PENALTIES,
    CombinedLoss,
    FocalLoss,
    create_loss,
    cross_entropy,
    focal_loss,
    l1_logit_norm,
    mdca,
    mmce,
    soft_ece,
)
from tests.losses.conftest import EXTREME, example

#: Every registered loss and penalty (a new one is tested by registering it); the losses
#: that are no penalty added to cross-entropy take ``reduction``.
NAMES = LOSSES.names()
PENALTY_NAMES = PENALTIES.names()
REDUCING = [name for name in NAMES if name not in PENALTIES]
#: Softer temperatures for gradcheck's finite differences.
GRADCHECK_PARAMS: dict[str, dict[str, float]] = {
    "soft_ece": {"temperature": 0.05},
    "dece": {"bin_temperature": 0.1, "accuracy_temperature": 0.1},
}


def test_every_penalty_is_a_loss_and_the_reducing_ones_take_reduction() -> None:
    assert set(PENALTY_NAMES) < set(NAMES)
    for name in NAMES:
        assert ("reduction" in LOSSES.info(name)["params"]) == (name in REDUCING), name


def test_unknown_loss_lists_the_valid_names() -> None:
    """Every valid name, or their count beside the nearest one (calibkit.core.errors)."""
    with pytest.raises(UnknownNameError) as info:
        create_loss("xyz")
    message = str(info.value)
    assert message.startswith("loss: expected one of ")
    assert all(name in message for name in NAMES)
    with pytest.raises(UnknownNameError) as info:
        create_loss("focall")
    message = str(info.value)
    assert (
        message == f"loss: expected one of {len(NAMES)} names, got 'focall' (did you mean 'focal'?)"
    )


def test_unknown_parameter_lists_the_accepted_ones() -> None:
    message = "loss 'mmce': expected parameters among beta, bandwidth, weighted, got 'gamma'"
    with pytest.raises(InputError, match=re.escape(message)):
        create_loss("mmce", gamma=2.0)
    with pytest.raises(InputError, match=r"^loss 'brier': .*reduction, got 'epsilon'"):
        create_loss("brier", epsilon=0.1)


@pytest.mark.parametrize(
    ("name", "params", "argument"),
    [
        ("focal", {"gamma": -1.0}, "gamma"),
        ("adaptive_focal", {"gamma": math.inf}, "gamma"),
        ("inverse_focal", {"gamma": math.nan}, "gamma"),
        ("dual_focal", {"gamma": "2"}, "gamma"),
        ("label_smoothing", {"epsilon": 1.0}, "epsilon"),
        ("l1_norm", {"alpha": -0.1}, "alpha"),
        ("mmce", {"beta": -1.0}, "beta"),
        ("mmce", {"bandwidth": 0.0}, "bandwidth"),
        ("mdca", {"beta": math.nan}, "beta"),
        ("soft_ece", {"beta": -2}, "beta"),
        ("soft_ece", {"n_bins": 0}, "n_bins"),
        ("soft_ece", {"temperature": 0.0}, "temperature"),
        ("cross_entropy", {"reduction": "avg"}, "reduction"),
    ],
)
def test_invalid_hyper_parameters_name_the_parameter(
    name: str, params: dict[str, Any], argument: str
) -> None:
    with pytest.raises(InputError, match=f"^{argument}: expected "):
        create_loss(name, **params)


def test_penalised_losses_are_cross_entropy_plus_the_penalty() -> None:
    z, y = example()
    ce = cross_entropy(z, y)
    cases = {
        "l1_norm": ({"alpha": 0.1}, 0.1 * l1_logit_norm(z, y)),
        "mmce": ({"beta": 2.0, "weighted": False}, 2.0 * mmce(z, y, weighted=False)),
        "mdca": ({"beta": 3.0}, 3.0 * mdca(z, y)),
        "soft_ece": ({"beta": 0.5, "n_bins": 5, "norm": "l2"}, 0.5 * soft_ece(z, y, 5, 1e-3, "l2")),
    }
    for name, (params, penalty) in cases.items():
        torch.testing.assert_close(create_loss(name, **params)(z, y), ce + penalty)


def test_create_loss_focal_plus_mdca() -> None:
    z, y = example()
    loss = create_loss("focal", gamma=3, penalty={"name": "mdca", "beta": 1.0})
    assert isinstance(loss, CombinedLoss)
    assert isinstance(loss.base, FocalLoss)
    torch.testing.assert_close(loss(z, y), focal_loss(z, y, 3.0) + mdca(z, y))
    l1 = create_loss("brier", penalty={"name": "l1_norm", "alpha": 0.5})
    assert isinstance(l1, CombinedLoss)
    assert l1.weight == 0.5
    assert isinstance(create_loss("dual_focal", gamma=1), torch.nn.Module)


@pytest.mark.parametrize(
    ("spec", "pattern"),
    [
        ({"name": "focal", "penalty": "mdca"}, "^penalty: expected a mapping"),
        ({"name": "focal", "penalty": {"beta": 1.0}}, "^penalty: expected a mapping with a str"),
        (
            {"name": "focal", "penalty": {"name": "ece"}},
            "^penalty: expected one of confidence_penalty, dca, dece, l1_norm, mdca",
        ),
        ({"name": "focal", "penalty": {"name": "mdca", "gamma": 1}}, "^penalty 'mdca': .*'gamma'"),
        ({"name": "focal", "penalty": {"name": "mdca", "base": None}}, "^penalty 'mdca': .*'base'"),
        ({"name": "focal", "reduction": "none", "penalty": {"name": "mdca"}}, "^base: "),
        ({"name": "focall"}, "^loss: expected one of"),
    ],
)
def test_create_loss_rejects_bad_penalties(spec: Any, pattern: str) -> None:
    params = dict(spec)
    with pytest.raises(InputError, match=pattern):
        create_loss(params.pop("name"), **params)


@pytest.mark.parametrize("name", NAMES)
def test_every_loss_has_finite_float32_gradients_at_p_zero_and_one(name: str) -> None:
    loss = create_loss(name)
    for target in (0, 1):
        z = torch.tensor(EXTREME, requires_grad=True)
        value = loss(z, torch.full((len(EXTREME),), target))
        value.backward()
        assert value.shape == ()
        assert torch.isfinite(value)
        assert z.grad is not None
        assert torch.isfinite(z.grad).all(), (target, z.grad)


@pytest.mark.parametrize("name", REDUCING)
def test_reduction_none_gives_the_samples_of_mean_and_sum(name: str) -> None:
    z, y = torch.randn(9, 5), torch.randint(0, 5, (9,))
    per_sample = create_loss(name, reduction="none")(z, y)
    assert per_sample.shape == (9,)
    torch.testing.assert_close(create_loss(name)(z, y), per_sample.mean())
    torch.testing.assert_close(create_loss(name, reduction="sum")(z, y), per_sample.sum())
    one = torch.stack(
        [create_loss(name, reduction="sum")(z[i : i + 1], y[i : i + 1]) for i in range(9)]
    )
    torch.testing.assert_close(one, per_sample)


@pytest.mark.parametrize("name", NAMES)
def test_gradcheck_every_loss(name: str) -> None:
    z = torch.randn(6, 4, dtype=torch.float64, requires_grad=True)
    y = torch.randint(0, 4, (6,))
    loss = create_loss(name, **GRADCHECK_PARAMS.get(name, {}))
    assert torch.autograd.gradcheck(lambda x: loss(x, y), (z,))


@pytest.mark.parametrize("name", LOSSES.names())
def test_declared_parameters_match_the_factory(name: str) -> None:
    declared = list(LOSSES.info(name)["params"])
    accepted = [p for p in inspect.signature(LOSSES.get(name)).parameters if p != "base"]
    assert accepted == declared


@pytest.mark.parametrize(
    ("name", "param"), [(n, p) for n in LOSSES.names() for p in LOSSES.info(n)["params"]]
)
def test_every_declared_constraint_refuses_a_bad_value_by_name(name: str, param: str) -> None:
    expected = re.escape(LOSSES.info(name)["params"][param].describe())
    with pytest.raises(InputError, match=rf"^{param}: expected {expected}, got 'nope'"):
        create_loss(name, **{param: "nope"})
    with pytest.raises(InputError, match=rf"^{param}: expected {expected}, got 'nope'"):
        LOSSES.get(name)(**{param: "nope"})  # the factory checks the same declaration


def test_penalties_are_registered_with_their_parameters() -> None:
    for name in PENALTIES.names():
        penalty_params = list(PENALTIES.info(name)["params"])
        assert list(LOSSES.info(name)["params"])[1:] == penalty_params  # after the weight
