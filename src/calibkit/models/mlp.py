"""A multi-layer perceptron on flattened images (small inputs such as 8x8 digits).

>>> import torch
>>> mlp(10, in_channels=1, input_size=8, hidden=(32,))(torch.zeros(2, 1, 8, 8)).shape
torch.Size([2, 10])
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from torch import Tensor, nn

from calibkit.core.errors import InputError
from calibkit.core.validation import check_fraction, is_integer


class MLP(nn.Module):
    """Flatten, then ``Linear -> ReLU (-> Dropout)`` per hidden width, then ``Linear`` to K."""

    def __init__(
        self, num_classes: int, n_inputs: int, hidden: Sequence[int], dropout: float = 0.0
    ) -> None:
        super().__init__()
        dropout = check_fraction("dropout", dropout)
        if not is_integer(n_inputs) or n_inputs < 1:
            raise InputError(
                "n_inputs", "a positive integer (channels x size x size)", repr(n_inputs)
            )
        widths = [n_inputs, *hidden]
        if not all(is_integer(w) and w >= 1 for w in widths):
            raise InputError("hidden", "positive integer widths", repr(list(hidden)))
        layers: list[nn.Module] = [nn.Flatten()]
        for a, b in itertools.pairwise(widths):
            layers += [nn.Linear(a, b), nn.ReLU(inplace=True)]
            if dropout:
                layers.append(nn.Dropout(dropout))
        layers.append(nn.Linear(widths[-1], num_classes))
        self.net = nn.Sequential(*layers)

    def forward(self, x: Tensor) -> Tensor:
        """Logits ``(N, K)`` of images ``(N, C, S, S)``."""
        out: Tensor = self.net(x)
        return out


def mlp(
    num_classes: int,
    in_channels: int = 3,
    input_size: int = 32,
    hidden: Sequence[int] = (256,),
    dropout: float = 0.0,
) -> MLP:
    """An MLP for ``in_channels x input_size x input_size`` images."""
    return MLP(num_classes, in_channels * input_size * input_size, tuple(hidden), dropout)
