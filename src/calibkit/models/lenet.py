"""LeNet-5 (LeCun et al., 1998) for 28x28 or 32x32 images, with optional dropout, width,
batch normalisation and depth (for studies of what makes a network miscalibrated).

Three 5x5 convolutions (6, 16, 120 channels) with ReLU, a 2x2 max-pool after the first two,
then a classifier 120 -> 84 -> K with a ReLU between. On 32x32 inputs the third convolution
outputs 1x1; for 28x28 inputs (MNIST, MedMNIST) pass ``input_size=28``, which pads the first
convolution by 2 so that the shapes are the same from there on.

The variants change one thing each (Guo et al. 2017, Figure 2): ``width`` multiplies every
hidden size (6, 16, 120, 84, rounded, at least 1); ``batch_norm`` puts a batch
normalisation after each convolution and the hidden linear layer, before its ReLU;
``extra_convs`` adds that many 3x3 convolutions (same padding, ReLU) to each of the first
two stages, before its pool: 5 + 2 * ``extra_convs`` weight layers. With the defaults the
network, its parameter names and its initialisation are those of plain LeNet-5.

>>> import torch
>>> lenet5(10)(torch.zeros(2, 3, 32, 32)).shape
torch.Size([2, 10])
>>> lenet5(8, input_size=28)(torch.zeros(2, 3, 28, 28)).shape
torch.Size([2, 8])
>>> model = lenet5(2, width=2, batch_norm=True, extra_convs=1)
>>> model(torch.zeros(2, 3, 32, 32)).shape, model.features[0].out_channels
(torch.Size([2, 2]), 12)
"""

from __future__ import annotations

from torch import Tensor, nn

from calibkit.core.errors import InputError
from calibkit.core.validation import POSITIVE, Boolean, Integer

#: Input sizes LeNet-5 supports, mapped to the padding of its first convolution.
PADDING = {28: 2, 32: 0}

#: LeNet-5's hidden sizes: the three convolutions' channels and the hidden linear layer.
SIZES = (6, 16, 120, 84)


def _conv_block(c_in: int, c_out: int, kernel: int, padding: int, bn: bool) -> list[nn.Module]:
    """A convolution, its batch normalisation when ``bn``, and a ReLU."""
    norm: list[nn.Module] = [nn.BatchNorm2d(c_out)] if bn else []
    return [nn.Conv2d(c_in, c_out, kernel, padding=padding), *norm, nn.ReLU(inplace=True)]


def _features(
    in_channels: int, padding: int, sizes: list[int], bn: bool, extra: int
) -> nn.Sequential:
    """The convolutional part: two stages (5x5 conv, ``extra`` 3x3 convs, pool), then a
    5x5 convolution to ``sizes[2]`` channels."""
    c1, c2, c3 = sizes[:3]
    layers = _conv_block(in_channels, c1, 5, padding, bn)
    layers += [m for _ in range(extra) for m in _conv_block(c1, c1, 3, 1, bn)]
    layers += [nn.MaxPool2d(2), *_conv_block(c1, c2, 5, 0, bn)]
    layers += [m for _ in range(extra) for m in _conv_block(c2, c2, 3, 1, bn)]
    layers += [nn.MaxPool2d(2), *_conv_block(c2, c3, 5, 0, bn)]
    return nn.Sequential(*layers)


class LeNet5(nn.Module):
    """LeNet-5 with ReLU and max-pooling; ``dropout > 0`` drops the classifier's inputs.

    With dropout, ``nn.Dropout(dropout)`` comes before each classifier linear layer, that is
    after the 120 (flattened third convolution) and the 84 activations. ``width``,
    ``batch_norm`` and ``extra_convs``: see the module docstring.
    """

    def __init__(
        self,
        num_classes: int,
        in_channels: int = 3,
        input_size: int = 32,
        dropout: float = 0.0,
        *,
        width: float = 1.0,
        batch_norm: bool = False,
        extra_convs: int = 0,
    ) -> None:
        super().__init__()
        if input_size not in PADDING:
            raise InputError("input_size", "28 or 32", repr(input_size))
        if not 0.0 <= dropout < 1.0:
            raise InputError("dropout", "a probability in [0, 1)", repr(dropout))
        width = POSITIVE.check("width", width)
        extra_convs = Integer(0, 16).check("extra_convs", extra_convs)
        batch_norm = Boolean().check("batch_norm", batch_norm)
        sizes = [max(1, round(s * width)) for s in SIZES]
        self.features = _features(in_channels, PADDING[input_size], sizes, batch_norm, extra_convs)
        norm: list[nn.Module] = [nn.BatchNorm1d(sizes[3])] if batch_norm else []
        self.classifier = nn.Sequential(
            nn.Flatten(),
            nn.Dropout(dropout),
            nn.Linear(sizes[2], sizes[3]),
            *norm,
            nn.ReLU(inplace=True),
            nn.Dropout(dropout),
            nn.Linear(sizes[3], num_classes),
        )
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0.0, 0.01)
            if isinstance(m, nn.Conv2d | nn.Linear) and m.bias is not None:
                nn.init.zeros_(m.bias)

    def forward(self, x: Tensor) -> Tensor:
        """Logits of shape (N, K) for images of shape (N, C, S, S), S = ``input_size``."""
        out: Tensor = self.classifier(self.features(x))
        return out


def lenet5(
    num_classes: int,
    in_channels: int = 3,
    input_size: int = 32,
    width: float = 1.0,
    batch_norm: bool = False,
    extra_convs: int = 0,
) -> LeNet5:
    """LeNet-5 without dropout; ``width``, ``batch_norm``, ``extra_convs`` as in
    :class:`LeNet5` (the defaults: plain LeNet-5)."""
    return LeNet5(
        num_classes,
        in_channels,
        input_size,
        width=width,
        batch_norm=batch_norm,
        extra_convs=extra_convs,
    )


def lenet5_dropout(
    num_classes: int, in_channels: int = 3, input_size: int = 32, dropout: float = 0.2
) -> LeNet5:
    """LeNet-5 with dropout (default p = 0.2) before each classifier linear layer."""
    return LeNet5(num_classes, in_channels, input_size, dropout)
