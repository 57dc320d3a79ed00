"""LeNet-5 (LeCun et al., 1998) for 28x28 or 32x32 images, with an optional dropout variant.

Three 5x5 convolutions (6, 16, 120 channels) with ReLU, a 2x2 max-pool after the first two,
then a classifier 120 -> 84 -> K with a ReLU between. On 32x32 inputs the third convolution
outputs 1x1; for 28x28 inputs (MNIST, MedMNIST) pass ``input_size=28``, which pads the first
convolution by 2 so that the shapes are the same from there on.

>>> import torch
>>> lenet5(10)(torch.zeros(2, 3, 32, 32)).shape
torch.Size([2, 10])
>>> lenet5(8, input_size=28)(torch.zeros(2, 3, 28, 28)).shape
torch.Size([2, 8])
"""

from __future__ import annotations

from torch import Tensor, nn

from calibkit.core.errors import InputError
from calibkit.models.registry import MODELS

#: Input sizes LeNet-5 supports, mapped to the padding of its first convolution.
PADDING = {28: 2, 32: 0}


class LeNet5(nn.Module):
    """LeNet-5 with ReLU and max-pooling; ``dropout > 0`` drops the classifier's inputs.

    With dropout, ``nn.Dropout(dropout)`` comes before each classifier linear layer, that is
    after the 120 (flattened third convolution) and the 84 activations.
    """

    def __init__(
        self, num_classes: int, in_channels: int = 3, input_size: int = 32, dropout: float = 0.0
    ) -> None:
        super().__init__()
        if input_size not in PADDING:
            raise InputError("input_size", "28 or 32", repr(input_size))
        if not 0.0 <= dropout < 1.0:
            raise InputError("dropout", "a probability in [0, 1)", repr(dropout))
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, 6, 5, padding=PADDING[input_size]),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(6, 16, 5),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 120, 5),
            nn.ReLU(inplace=True),
        )
        self.classifier = nn.Sequential(
            nn.Flatten(),
            nn.Dropout(dropout),
            nn.Linear(120, 84),
            nn.ReLU(inplace=True),
            nn.Dropout(dropout),
            nn.Linear(84, num_classes),
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


@MODELS.register("lenet5", family="lenet")
def lenet5(num_classes: int, in_channels: int = 3, input_size: int = 32) -> LeNet5:
    """LeNet-5 without dropout."""
    return LeNet5(num_classes, in_channels, input_size)


@MODELS.register("lenet5_dropout", family="lenet")
def lenet5_dropout(
    num_classes: int, in_channels: int = 3, input_size: int = 32, dropout: float = 0.2
) -> LeNet5:
    """LeNet-5 with dropout (default p = 0.2) before each classifier linear layer."""
    return LeNet5(num_classes, in_channels, input_size, dropout)
