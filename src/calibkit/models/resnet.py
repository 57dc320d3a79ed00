"""ResNet-18 with a CIFAR stem and Wide ResNets (Zagoruyko & Komodakis, 2016) for 32x32 images.

``resnet18``: a 3x3 stride-1 stem convolution without max-pooling, BasicBlocks [2, 2, 2, 2]
(64, 128, 256, 512 channels) with 1x1 conv + BN projection shortcuts, global average
pooling, linear(512, K). ``wide_resnet(depth, widen)``: WRN-depth-widen with pre-activation
blocks, (depth - 4) / 6 blocks per stage, channels 16, 16k, 32k, 64k and optional dropout
between the two convolutions of each block.

>>> import torch
>>> wide_resnet(16, 4, 10)(torch.zeros(2, 3, 32, 32)).shape
torch.Size([2, 10])
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from calibkit.core.errors import InputError
from calibkit.models.resnet_cifar import BasicBlock


class ResNet18(nn.Module):
    """ResNet-18 for 32x32 images (CIFAR stem: 3x3 stride-1 conv, no max-pool)."""

    def __init__(self, num_classes: int, in_channels: int = 3) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, 64, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        stages, in_planes = [], 64
        for planes, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
            stages.append(
                nn.Sequential(
                    BasicBlock(in_planes, planes, stride, option="B"), BasicBlock(planes, planes)
                )
            )
            in_planes = planes
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.linear = nn.Linear(512, num_classes)

    def forward(self, x: Tensor) -> Tensor:
        """Logits of shape (N, K)."""
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layer4(self.layer3(self.layer2(self.layer1(out))))
        logits: Tensor = self.linear(F.adaptive_avg_pool2d(out, 1).flatten(1))
        return logits


class WideBlock(nn.Module):
    """Pre-activation block: BN-ReLU-conv3x3, dropout, BN-ReLU-conv3x3, plus the shortcut."""

    def __init__(self, in_planes: int, planes: int, stride: int, dropout: float) -> None:
        super().__init__()
        self.bn1 = nn.BatchNorm2d(in_planes)
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.dropout = nn.Dropout(dropout)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Conv2d(in_planes, planes, 1, stride, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        """Residual block output (the shortcut taps the pre-activated input)."""
        act = F.relu(self.bn1(x))
        shortcut = x if isinstance(self.shortcut, nn.Identity) else self.shortcut(act)
        out: Tensor = self.conv2(F.relu(self.bn2(self.dropout(self.conv1(act)))))
        return out + shortcut


class WideResNet(nn.Module):
    """WRN-depth-widen for 32x32 images; depth = 6n + 4."""

    def __init__(
        self,
        depth: int,
        widen: int,
        num_classes: int,
        in_channels: int = 3,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        if depth < 10 or (depth - 4) % 6:
            raise InputError("depth", "6n + 4 with n >= 1 (10, 16, 22, 28, ...)", repr(depth))
        if widen < 1:
            raise InputError("widen", "a positive integer", repr(widen))
        if not 0.0 <= dropout < 1.0:
            raise InputError("dropout", "a probability in [0, 1)", repr(dropout))
        n = (depth - 4) // 6
        widths = [16 * widen, 32 * widen, 64 * widen]
        self.conv1 = nn.Conv2d(in_channels, 16, 3, 1, 1, bias=False)
        blocks, in_planes = [], 16
        for i, planes in enumerate(widths):
            for j in range(n):
                stride = 2 if i > 0 and j == 0 else 1
                blocks.append(WideBlock(in_planes, planes, stride, dropout))
                in_planes = planes
        self.blocks = nn.Sequential(*blocks)
        self.bn = nn.BatchNorm2d(in_planes)
        self.linear = nn.Linear(in_planes, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.Linear):
                nn.init.zeros_(m.bias)

    def forward(self, x: Tensor) -> Tensor:
        """Logits of shape (N, K)."""
        out = F.relu(self.bn(self.blocks(self.conv1(x))))
        logits: Tensor = self.linear(F.adaptive_avg_pool2d(out, 1).flatten(1))
        return logits


def resnet18(num_classes: int, in_channels: int = 3) -> ResNet18:
    """ResNet-18 with a CIFAR stem (11.2M parameters for K = 10)."""
    return ResNet18(num_classes, in_channels)


def wide_resnet(
    depth: int, widen: int, num_classes: int, in_channels: int = 3, dropout: float = 0.0
) -> WideResNet:
    """WRN-``depth``-``widen`` (e.g. 28, 10) with dropout ``dropout`` inside each block."""
    return WideResNet(depth, widen, num_classes, in_channels, dropout)


def wrn16_4(num_classes: int, in_channels: int = 3, dropout: float = 0.0) -> WideResNet:
    """WRN-16-4."""
    return wide_resnet(16, 4, num_classes, in_channels, dropout)


def wrn28_10(num_classes: int, in_channels: int = 3, dropout: float = 0.0) -> WideResNet:
    """WRN-28-10."""
    return wide_resnet(28, 10, num_classes, in_channels, dropout)


def wrn40_10(num_classes: int, in_channels: int = 3, dropout: float = 0.0) -> WideResNet:
    """WRN-40-10 (55.9M parameters for K = 100)."""
    return wide_resnet(40, 10, num_classes, in_channels, dropout)
