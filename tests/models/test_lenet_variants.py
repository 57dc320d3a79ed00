"""LeNet-5's width, batch-norm and depth variants, and the CIFAR ResNet-8/14 (Guo et al. 2017
factor study): parameter counts by hand, the defaults unchanged, bad arguments refused."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from calibkit.core.errors import InputError
from calibkit.models import MODELS, create_model, lenet5

pytestmark = pytest.mark.usefixtures("one_thread")


def _count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def test_width_scales_every_hidden_size() -> None:
    # width 2: convs 3->12 (5x5), 12->32, 32->240, then linear 240->168->10
    conv = (12 * 3 * 25 + 12) + (32 * 12 * 25 + 32) + (240 * 32 * 25 + 240)
    linear = (240 * 168 + 168) + (168 * 10 + 10)
    assert _count(lenet5(10, width=2)) == conv + linear == 244_962
    # width 0.5: 3, 8, 60 channels and 42 hidden units
    conv = (3 * 3 * 25 + 3) + (8 * 3 * 25 + 8) + (60 * 8 * 25 + 60)
    linear = (60 * 42 + 42) + (42 * 10 + 10)
    assert _count(lenet5(10, width=0.5)) == conv + linear


def test_defaults_are_plain_lenet5() -> None:
    torch.manual_seed(0)
    plain = lenet5(10).state_dict()
    torch.manual_seed(0)
    same = lenet5(10, width=1.0, batch_norm=False, extra_convs=0).state_dict()
    assert list(plain) == list(same)
    assert list(plain)[:2] == ["features.0.weight", "features.0.bias"]
    for key in plain:
        torch.testing.assert_close(plain[key], same[key], rtol=0, atol=0)


def test_batch_norm_after_each_conv_and_the_hidden_linear() -> None:
    model = lenet5(2, batch_norm=True)
    assert sum(isinstance(m, nn.BatchNorm2d) for m in model.modules()) == 3
    assert [m.num_features for m in model.modules() if isinstance(m, nn.BatchNorm1d)] == [84]
    # 2 x (6 + 16 + 120 + 84) affine parameters more than plain LeNet-5
    assert _count(model) == _count(lenet5(2)) + 2 * (6 + 16 + 120 + 84)
    assert model(torch.randn(4, 3, 32, 32)).shape == (4, 2)


@pytest.mark.parametrize("extra", [1, 3])
def test_extra_convs_add_two_layers_each(extra: int) -> None:
    model = lenet5(2, extra_convs=extra)
    convs = [m for m in model.modules() if isinstance(m, nn.Conv2d)]
    assert len(convs) == 3 + 2 * extra
    added = extra * ((6 * 6 * 9 + 6) + (16 * 16 * 9 + 16))
    assert _count(model) == _count(lenet5(2)) + added
    assert model.features(torch.zeros(1, 3, 32, 32)).shape == (1, 120, 1, 1)
    small = create_model("lenet5", 8, input_size=28, extra_convs=extra)
    assert small(torch.zeros(2, 3, 28, 28)).shape == (2, 8)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"width": 0.0}, "width"),
        ({"width": -1.0}, "width"),
        ({"extra_convs": -1}, "extra_convs"),
        ({"extra_convs": 1.5}, "extra_convs"),
        ({"batch_norm": "yes"}, "batch_norm"),
    ],
)
def test_bad_variant_arguments(kwargs: dict[str, object], name: str) -> None:
    with pytest.raises(InputError, match=name):
        lenet5(10, **kwargs)


@pytest.mark.parametrize(("name", "count"), [("resnet8", 75_290), ("resnet14", 172_506)])
def test_shallow_cifar_resnets(name: str, count: int) -> None:
    # ResNet-8: conv1 432 + bn 32; one block per stage: 4,672 (16), 13,952 (16->32),
    # 55,552 (32->64); linear 650. ResNet-14 adds 4,672 + 18,560 + 73,984.
    model = create_model(name, num_classes=10)
    assert _count(model) == count
    assert MODELS.info(name)["depth"] == int(name.removeprefix("resnet"))
