"""Neural Clamping: fit time on JPEG CIFAR-10 with the pretrained ResNet-20, split into
forward and backward passes.

    .venv/bin/python benchmarks/bench_clamping.py [--n 5000] [--epochs 100] [--batch-size 512]
        [--threads N] [--scale-to-n 5000 --scale-to-epochs 100]

Needs ``../shared/data`` (``cifar10-jpeg.zip``, ``pretrained/resnet20-12fca82f.th``). The
first ``n / 10`` test images of each class are the calibration set. Timed: the joint fit
(``epochs`` epochs of SGD on delta and log T) and the fast variant (data-driven delta, then
T alone). One extra, instrumented epoch times the forward pass (model and focal loss, with
the autograd graph) and the backward pass separately, and the same for the data-driven
initialisation (entropy and its input gradient). Fit times scale linearly in n and in the
number of epochs; the last column extrapolates to ``--scale-to-n`` images and
``--scale-to-epochs`` epochs (for the joint fit: init + 2 plain forward passes + epochs x the
instrumented epoch), so the quick mode, ``--n 1000 --epochs 2``, gives the full-size estimate.
"""

from __future__ import annotations

import argparse
import io
import time
import zipfile
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from _bench import fmt_time, machine, table

from calibkit.calibrators.clamping import NeuralClamping
from calibkit.calibrators.clamping_init import focal_loss
from calibkit.models import load_pretrained_cifar_resnet

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
CLASSES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def read_jpeg_cifar10(n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The first ``n // 10`` test images of each class, normalised (N, 3, 32, 32), and labels."""
    from PIL import Image

    images, labels = [], []
    with zipfile.ZipFile(DATA / "cifar10-jpeg.zip") as archive:
        names = sorted(archive.namelist())
        for label, cls in enumerate(CLASSES):
            files = [f for f in names if f.startswith(f"test/{cls}/") and f.endswith(".jpg")]
            for name in files[: n // 10]:
                rgb = Image.open(io.BytesIO(archive.read(name))).convert("RGB")
                images.append(np.asarray(rgb, dtype=np.float32) / 255.0)
                labels.append(label)
    x = torch.from_numpy(np.stack(images)).permute(0, 3, 1, 2)
    x = (x - torch.tensor(MEAN).view(1, 3, 1, 1)) / torch.tensor(STD).view(1, 3, 1, 1)
    return x.contiguous(), torch.tensor(labels)


def timed_epoch(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, bs: int) -> list[float]:
    """[forward, backward] seconds of one SGD epoch on (delta, log T)."""
    delta = torch.zeros(x.shape[1:], requires_grad=True)
    log_t = torch.zeros((), requires_grad=True)
    fwd = bwd = 0.0
    for start in range(0, x.shape[0], bs):
        t0 = time.perf_counter()
        logits = model(x[start : start + bs] + delta) / log_t.exp()
        loss = focal_loss(logits, y[start : start + bs], 1.0) + 0.1 * delta.pow(2).sum()
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        fwd, bwd = fwd + t1 - t0, bwd + t2 - t1
    return [fwd, bwd]


def timed_init(model: torch.nn.Module, x: torch.Tensor, bs: int) -> list[float]:
    """[forward, backward] seconds of the entropy-gradient pass of the data-driven init."""
    fwd = bwd = 0.0
    for start in range(0, x.shape[0], bs):
        d = torch.zeros(x.shape[1:], requires_grad=True)
        t0 = time.perf_counter()
        logp = F.log_softmax(model(x[start : start + bs] + d), dim=1)
        entropy = -(logp.exp() * logp).sum()
        t1 = time.perf_counter()
        torch.autograd.grad(entropy, d)
        t2 = time.perf_counter()
        fwd, bwd = fwd + t1 - t0, bwd + t2 - t1
    return [fwd, bwd]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=5000, help="calibration images (default 5000)")
    parser.add_argument("--epochs", type=int, default=100, help="joint-fit epochs (default 100)")
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    parser.add_argument("--scale-to-n", type=int, default=5000)
    parser.add_argument("--scale-to-epochs", type=int, default=100)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"Machine: {machine()}\n")
    t0 = time.perf_counter()
    x, y = read_jpeg_cifar10(args.n)
    model = load_pretrained_cifar_resnet(DATA / "pretrained" / "resnet20-12fca82f.th", 20)
    print(f"Decoded {len(y):,} JPEGs in {fmt_time(time.perf_counter() - t0)}\n")
    for p in model.parameters():
        p.requires_grad_(False)
    bs = args.batch_size

    def fit(nc: NeuralClamping) -> float:
        t = time.perf_counter()
        nc.fit(x, y)
        return time.perf_counter() - t

    joint = fit(NeuralClamping(model, epochs=args.epochs, batch_size=bs, progress=False))
    fast = fit(NeuralClamping.fast(model, batch_size=bs, progress=False))
    epoch = timed_epoch(model, x, y, bs)
    init = timed_init(model, x, bs)
    with torch.no_grad():
        t = time.perf_counter()
        for start in range(0, len(y), bs):
            model(x[start : start + bs])
        plain = time.perf_counter() - t

    scale_n = args.scale_to_n / len(y)
    # joint = data-driven init + 2 no-grad passes (initial and final logits) + epochs of SGD
    joint_scaled = scale_n * (sum(init) + 2 * plain + args.scale_to_epochs * sum(epoch))
    target = f"{args.scale_to_n:,} images"
    rows = [
        [f"joint, {args.epochs} epochs", fmt_time(joint), "", "", fmt_time(joint_scaled)],
        ["fast variant (Appendix F)", fmt_time(fast), "", "", fmt_time(fast * scale_n)],
        ["one SGD epoch", fmt_time(sum(epoch)), fmt_time(epoch[0]), fmt_time(epoch[1]),
         fmt_time(sum(epoch) * scale_n)],
        ["data-driven init (entropy gradient)", fmt_time(sum(init)), fmt_time(init[0]),
         fmt_time(init[1]), fmt_time(sum(init) * scale_n)],
        ["plain forward pass (no grad)", fmt_time(plain), fmt_time(plain), "",
         fmt_time(plain * scale_n)],
    ]  # fmt: skip
    head = (
        f"### Neural Clamping fit, ResNet-20, {len(y):,} JPEG CIFAR-10 images, "
        f"batch {bs} (one run each)\n\n"
    )
    last = f"scaled to {target}" + (
        f", {args.scale_to_epochs} epochs" if args.scale_to_epochs != args.epochs else ""
    )
    print(head + table(["what", "measured", "forward", "backward", last], rows))


if __name__ == "__main__":
    main()
