"""Bottleneck ResNets (He et al., 2016): ResNet-101 for 224x224 ImageNet images and a
ResNet-50 for 28x28 images.

A bottleneck block is 1x1 conv (``width``) - 3x3 conv (``width``, carrying the stride) -
1x1 conv (``4 * width``), each followed by batch norm, ReLU after the first two and after
the sum with the shortcut; the shortcut is a 1x1 conv + BN projection (``downsample``)
where the shape changes. Four stages of 64, 128, 256 and 512 widths; the last three start
with stride 2. Parameter names and shapes are those of timm's (and torchvision's)
``resnet101`` (``conv1``, ``bn1``, ``layer1.0.conv1``, ..., ``layer1.0.downsample.0``,
``fc``), so such a checkpoint loads strictly (:mod:`calibkit.models.checkpoint`).

``stem="imagenet"``: 7x7 stride-2 conv and 3x3 stride-2 max-pool (224x224 inputs).
``stem="small"``: 3x3 stride-1 conv, no max-pool, as MedMNIST's experiments build their
ResNet-50 for 28x28 images.

>>> import torch
>>> model = resnet50_28(8)
>>> model(torch.zeros(2, 3, 28, 28)).shape
torch.Size([2, 8])
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from calibkit.core.validation import Choice


class Bottleneck(nn.Module):
    """1x1 - 3x3 - 1x1 convolutions with BN, plus the (projected) shortcut, then ReLU."""

    expansion = 4

    def __init__(self, in_planes: int, width: int, stride: int = 1) -> None:
        super().__init__()
        out = width * self.expansion
        self.conv1 = nn.Conv2d(in_planes, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, out, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out)
        self.downsample: nn.Module = nn.Identity()
        if stride != 1 or in_planes != out:
            self.downsample = nn.Sequential(
                nn.Conv2d(in_planes, out, 1, stride, bias=False), nn.BatchNorm2d(out)
            )

    def forward(self, x: Tensor) -> Tensor:
        """Residual block output."""
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return F.relu(out + self.downsample(x))


class BottleneckResNet(nn.Module):
    """A ResNet of bottleneck blocks, ``blocks`` per stage (e.g. (3, 4, 23, 3): ResNet-101)."""

    def __init__(
        self,
        blocks: tuple[int, int, int, int],
        num_classes: int,
        in_channels: int = 3,
        stem: str = "imagenet",
    ) -> None:
        super().__init__()
        self.stem = Choice("imagenet", "small").check("stem", stem)
        if self.stem == "imagenet":
            self.conv1 = nn.Conv2d(in_channels, 64, 7, 2, 3, bias=False)
        else:
            self.conv1 = nn.Conv2d(in_channels, 64, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        in_planes, stages = 64, []
        for i, (width, n) in enumerate(zip((64, 128, 256, 512), blocks, strict=True)):
            stride = 1 if i == 0 else 2
            layers = [Bottleneck(in_planes, width, stride)]
            in_planes = width * Bottleneck.expansion
            layers += [Bottleneck(in_planes, width) for _ in range(n - 1)]
            stages.append(nn.Sequential(*layers))
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.fc = nn.Linear(in_planes, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x: Tensor) -> Tensor:
        """Logits of shape (N, K)."""
        out = F.relu(self.bn1(self.conv1(x)))
        if self.stem == "imagenet":
            out = F.max_pool2d(out, 3, 2, 1)
        out = self.layer4(self.layer3(self.layer2(self.layer1(out))))
        logits: Tensor = self.fc(F.adaptive_avg_pool2d(out, 1).flatten(1))
        return logits


def resnet50_28(num_classes: int, in_channels: int = 3) -> BottleneckResNet:
    """ResNet-50 for 28x28 images (3x3 stem, no max-pool; 23.5M parameters for K = 8)."""
    return BottleneckResNet((3, 4, 6, 3), num_classes, in_channels, stem="small")


def resnet101(num_classes: int = 1000, in_channels: int = 3) -> BottleneckResNet:
    """ImageNet ResNet-101 with timm's names (44.55M parameters for K = 1000)."""
    return BottleneckResNet((3, 4, 23, 3), num_classes, in_channels)
