"""Tests of the MLP classifier and its registration."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from calibkit.core.errors import InputError
from calibkit.models import MLP, MODELS, create_model, mlp


def test_output_shape_and_layers() -> None:
    torch.manual_seed(0)
    model = mlp(5, in_channels=2, input_size=4, hidden=(7, 6))
    assert isinstance(model, MLP)
    assert model(torch.zeros(3, 2, 4, 4)).shape == (3, 5)
    linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == [(32, 7), (7, 6), (6, 5)]
    assert not any(isinstance(m, nn.Dropout) for m in model.modules())


def test_no_hidden_layer_is_linear() -> None:
    torch.manual_seed(0)
    model = mlp(3, in_channels=1, input_size=2, hidden=())
    x = torch.randn(4, 1, 2, 2)
    (linear,) = [m for m in model.modules() if isinstance(m, nn.Linear)]
    torch.testing.assert_close(model(x), linear(x.reshape(4, 4)))


def test_default_is_for_cifar_images() -> None:
    model = mlp(10)
    assert model(torch.zeros(2, 3, 32, 32)).shape == (2, 10)
    first = next(m for m in model.modules() if isinstance(m, nn.Linear))
    assert first.in_features == 3 * 32 * 32
    assert first.out_features == 256


def test_dropout_layers_and_train_eval() -> None:
    torch.manual_seed(0)
    model = mlp(4, in_channels=1, input_size=4, hidden=(32, 32), dropout=0.5)
    drops = [m for m in model.modules() if isinstance(m, nn.Dropout)]
    assert len(drops) == 2
    assert all(d.p == 0.5 for d in drops)
    x = torch.randn(8, 1, 4, 4)
    model.eval()
    torch.testing.assert_close(model(x), model(x))
    model.train()
    assert not torch.equal(model(x), model(x))


@pytest.mark.parametrize("p", [-0.1, 1.0, 1.5])
def test_dropout_validation(p: float) -> None:
    with pytest.raises(
        InputError, match=rf"^dropout: expected a finite number in \[0, 1\), got {p}"
    ):
        mlp(3, dropout=p)


@pytest.mark.parametrize("hidden", [(0,), (16, -2), (8.0,), (True,), ("8",)])
def test_hidden_widths_validation(hidden: tuple[object, ...]) -> None:
    with pytest.raises(InputError, match=r"^hidden: expected positive integer widths, got \["):
        mlp(3, in_channels=1, input_size=8, hidden=hidden)  # type: ignore[arg-type]


@pytest.mark.parametrize(("channels", "size"), [(1, 0), (0, 8)])
def test_input_size_validation(channels: int, size: int) -> None:
    with pytest.raises(InputError, match=r"^n_inputs: expected a positive integer.*, got 0$"):
        mlp(3, in_channels=channels, input_size=size)
    with pytest.raises(InputError, match=r"^n_inputs: "):
        MLP(3, 0, (4,))


def test_registry() -> None:
    assert "mlp" in MODELS.names()
    torch.manual_seed(0)
    model = create_model("mlp", 3, in_channels=1, input_size=8)
    assert isinstance(model, MLP)
    assert model(torch.zeros(2, 1, 8, 8)).shape == (2, 3)
    model = create_model("mlp", 2, in_channels=1, input_size=8, hidden=[4], dropout=0.1)
    assert model(torch.zeros(1, 1, 8, 8)).shape == (1, 2)
    with pytest.raises(InputError, match=r"^num_classes: "):
        create_model("mlp", 0)


def test_gradients_reach_every_parameter() -> None:
    torch.manual_seed(0)
    model = mlp(3, in_channels=1, input_size=4, hidden=(8,), dropout=0.2)
    loss = nn.functional.cross_entropy(model(torch.randn(6, 1, 4, 4)), torch.tensor([0, 1, 2] * 2))
    loss.backward()
    for p in model.parameters():
        assert p.grad is not None
        assert torch.isfinite(p.grad).all()
