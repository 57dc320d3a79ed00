"""CIFAR ResNet-8/14/20/32/44/56/110 (He et al., 2016, section 4.2) with option-A shortcuts.

conv3x3(16) + BN + ReLU, three stages of n BasicBlocks (16, 32, 64 channels, the last two
starting with stride 2), global average pooling and linear(64, K); depth = 6n + 2. Where a
block changes shape, the shortcut is the identity subsampled by 2 and zero-padded in channels
(option A, no parameters). Module names match the widely used pretrained checkpoints
(``conv1``, ``bn1``, ``layer1.0.conv1``, ..., ``linear``), which
:func:`load_pretrained_cifar_resnet` loads.

>>> import torch
>>> sum(p.numel() for p in resnet20(10).parameters())
269722
>>> resnet20(10)(torch.zeros(2, 3, 32, 32)).shape
torch.Size([2, 10])
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from calibkit.core.catalog import CIFAR_DEPTHS
from calibkit.core.errors import InputError
from calibkit.core.validation import Choice
from calibkit.models.checkpoint import check_finite


class PadShortcut(nn.Module):
    """Option-A shortcut: take every other pixel and zero-pad the channels to ``out_planes``."""

    def __init__(self, in_planes: int, out_planes: int) -> None:
        super().__init__()
        self.pad = out_planes - in_planes

    def forward(self, x: Tensor) -> Tensor:
        """Subsample by 2 and pad channels equally on both sides."""
        half = self.pad // 2
        return F.pad(x[:, :, ::2, ::2], (0, 0, 0, 0, half, self.pad - half))


class BasicBlock(nn.Module):
    """Two 3x3 conv + BN layers with a ReLU between, added to the shortcut, then ReLU.

    Where the shape changes, the shortcut is option A (``PadShortcut``: no parameters, the
    CIFAR ResNets) or option B (1x1 conv + BN projection, ResNet-18).
    """

    def __init__(self, in_planes: int, planes: int, stride: int = 1, option: str = "A") -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or in_planes != planes:
            if option == "A":
                self.shortcut = PadShortcut(in_planes, planes)
            else:
                self.shortcut = nn.Sequential(
                    nn.Conv2d(in_planes, planes, 1, stride, bias=False), nn.BatchNorm2d(planes)
                )

    def forward(self, x: Tensor) -> Tensor:
        """Residual block output."""
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class CifarResNet(nn.Module):
    """ResNet-(6n+2) for 32x32 images with option-A shortcuts."""

    def __init__(self, depth: int, num_classes: int, in_channels: int = 3) -> None:
        super().__init__()
        depth = Choice(*CIFAR_DEPTHS).check("depth", depth)
        n = (depth - 2) // 6
        self.conv1 = nn.Conv2d(in_channels, 16, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.layer1 = self._stage(16, 16, n, 1)
        self.layer2 = self._stage(16, 32, n, 2)
        self.layer3 = self._stage(32, 64, n, 2)
        self.linear = nn.Linear(64, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d | nn.Linear):
                nn.init.kaiming_normal_(m.weight)

    @staticmethod
    def _stage(in_planes: int, planes: int, n: int, stride: int) -> nn.Sequential:
        blocks = [BasicBlock(in_planes, planes, stride)]
        blocks += [BasicBlock(planes, planes) for _ in range(n - 1)]
        return nn.Sequential(*blocks)

    def forward(self, x: Tensor) -> Tensor:
        """Logits of shape (N, K) for images of shape (N, C, H, W)."""
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layer3(self.layer2(self.layer1(out)))
        logits: Tensor = self.linear(F.adaptive_avg_pool2d(out, 1).flatten(1))
        return logits


def resnet8(num_classes: int, in_channels: int = 3) -> CifarResNet:
    """ResNet-8 (n = 1), the shallowest of the family: for depth studies."""
    return CifarResNet(8, num_classes, in_channels)


def resnet14(num_classes: int, in_channels: int = 3) -> CifarResNet:
    """ResNet-14 (n = 2): for depth studies."""
    return CifarResNet(14, num_classes, in_channels)


def resnet20(num_classes: int, in_channels: int = 3) -> CifarResNet:
    """ResNet-20 (n = 3, 0.27M parameters for K = 10)."""
    return CifarResNet(20, num_classes, in_channels)


def resnet32(num_classes: int, in_channels: int = 3) -> CifarResNet:
    """ResNet-32 (n = 5, 0.46M parameters for K = 10)."""
    return CifarResNet(32, num_classes, in_channels)


def resnet44(num_classes: int, in_channels: int = 3) -> CifarResNet:
    """ResNet-44 (n = 7)."""
    return CifarResNet(44, num_classes, in_channels)


def resnet56(num_classes: int, in_channels: int = 3) -> CifarResNet:
    """ResNet-56 (n = 9)."""
    return CifarResNet(56, num_classes, in_channels)


def resnet110(num_classes: int, in_channels: int = 3) -> CifarResNet:
    """ResNet-110 (n = 18)."""
    return CifarResNet(110, num_classes, in_channels)


def load_pretrained_cifar_resnet(path: str | Path, depth: int) -> CifarResNet:
    """A CIFAR ResNet of ``depth`` with the weights of checkpoint ``path``, in eval mode.

    The checkpoint is either a state dict or a dict holding one under ``state_dict``; a
    ``module.`` prefix (from ``nn.DataParallel``) is stripped, the number of classes is read
    from ``linear.weight``, and the weights load strictly. A missing, unreadable or
    mismatched file raises :class:`~calibkit.core.errors.InputError`.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError("path", "an existing checkpoint file", repr(str(path)))
    try:
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:
        reason = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
        raise InputError(
            "path", "a checkpoint readable by torch.load", f"{path} ({reason})"
        ) from exc
    state = checkpoint.get("state_dict", checkpoint) if isinstance(checkpoint, dict) else None
    if not isinstance(state, dict) or not all(isinstance(v, Tensor) for v in state.values()):
        raise InputError("path", "a checkpoint holding a state dict", str(path))
    state = {k.removeprefix("module."): v for k, v in state.items()}
    check_finite(state, path)
    weight = state.get("linear.weight")
    if weight is None or weight.ndim != 2:
        raise InputError("path", "a CIFAR ResNet checkpoint with linear.weight", str(path))
    model = CifarResNet(depth, int(weight.shape[0]))
    expected = f"a ResNet-{depth} checkpoint"
    # Checkpoints saved before PyTorch 0.4.1 lack BN's num_batches_tracked, which loads fine.
    missing = sorted(set(model.state_dict()) - set(state))
    missing = [k for k in missing if not k.endswith("num_batches_tracked")]
    unexpected = sorted(set(state) - set(model.state_dict()))
    if missing or unexpected:
        got = f"{path} ({len(missing)} missing keys {missing[:2]}, "
        raise InputError("path", expected, got + f"{len(unexpected)} unexpected {unexpected[:2]})")
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as exc:  # shape mismatches
        reason = " ".join(str(exc).split())[:200]
        raise InputError("path", expected, f"{path} ({reason})") from exc
    return model.eval()


def keep_classes(model: CifarResNet, rows: Sequence[int]) -> CifarResNet:
    """Shrink the classifier to the given ``rows`` (source classes), in that order.

    E.g. ``rows=(2, 3)`` turns a CIFAR-10 model into a bird-vs-cat model whose logits are
    exactly the bird and cat logits of the original: a start for fine-tuning.
    """
    k = model.linear.out_features
    idx = list(rows)
    if not idx or len(set(idx)) != len(idx) or not all(0 <= r < k for r in idx):
        raise InputError("rows", f"distinct class indices in 0..{k - 1}", repr(idx))
    head = nn.Linear(model.linear.in_features, len(idx))
    with torch.no_grad():
        head.weight.copy_(model.linear.weight[idx])
        head.bias.copy_(model.linear.bias[idx])
    model.linear = head
    return model
