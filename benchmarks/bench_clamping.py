"""Neural Clamping: fit time on JPEG CIFAR-10 with the pretrained ResNet-20, split into
forward and backward passes.

    .venv/bin/python benchmarks/bench_clamping.py [--n 5000] [--epochs 100] [--batch-size 512]
        [--repeats 3] [--threads N] [--scale-to-n 5000 --scale-to-epochs 100]

Needs ``../shared/data`` (``cifar10-jpeg.zip``, ``pretrained/resnet20-12fca82f.th``). The
first ``n / 10`` test images of each class are the calibration set. Timed: the joint fit
(``epochs`` epochs of SGD on delta and log T), in float32 and with the model's passes in
bfloat16 (``precision="bfloat16"``), and the fast variant (data-driven delta, then T
alone). Instrumented epochs, through the same batch-norm-folded channels-last copy the fit
uses, time the forward pass (model and focal loss, with the autograd graph) and the
backward pass separately, and the same for the data-driven initialisation (entropy and its
input gradient). Everything runs ``--repeats`` times, interleaved; medians. Fit times
scale linearly in n and in the number of epochs; the last column extrapolates to
``--scale-to-n`` images and ``--scale-to-epochs`` epochs (for the joint fit: init + 2 plain
forward passes + epochs x the instrumented epoch), so the quick mode, ``--n 1000 --epochs
2``, gives the full-size estimate.
"""

from __future__ import annotations

import argparse
import io
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from _bench import fmt_time, interleaved, machine, median, parse_args, table

from calibkit.calibrators.model.clamping import NeuralClamping, SGDSettings
from calibkit.calibrators.model.clamping.objective import objective
from calibkit.calibrators.model.clamping.passes import fused_copy, layout
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


def timed_epoch(
    model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, bs: int, bf16: bool
) -> list[float]:
    """[forward, backward] seconds of one SGD epoch on (delta, log T), as the fit runs it."""
    delta = torch.zeros(x.shape[1:], requires_grad=True)
    log_t = torch.zeros((), requires_grad=True)
    fwd = bwd = 0.0
    for start in range(0, x.shape[0], bs):
        t0 = time.perf_counter()
        xb = layout(x[start : start + bs])
        with torch.autocast("cpu", torch.bfloat16, enabled=bf16):
            out = model(xb + delta)
        logits = out.float() / log_t.exp()
        loss = objective(logits, y[start : start + bs], delta, 1.0, 0.1)
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
        logp = F.log_softmax(model(layout(x[start : start + bs]) + d), dim=1)
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
    parser.add_argument("--repeats", type=int, default=3, help="interleaved rounds (median)")
    parser.add_argument("--scale-to-n", type=int, default=5000)
    parser.add_argument("--scale-to-epochs", type=int, default=100)
    args = parse_args(parser)
    print(f"Machine: {machine()}\n")
    t0 = time.perf_counter()
    x, y = read_jpeg_cifar10(args.n)
    model = load_pretrained_cifar_resnet(DATA / "pretrained" / "resnet20-12fca82f.th", 20)
    print(f"Decoded {len(y):,} JPEGs in {fmt_time(time.perf_counter() - t0)}\n")
    for p in model.parameters():
        p.requires_grad_(False)
    fast_model = fused_copy(model)  # what the fit runs: batch norm folded, channels-last
    bs = args.batch_size
    parts: dict[str, list[float]] = {}

    def keep(name: str, value: list[float]) -> list[float]:
        parts.setdefault(name, []).append(value[0])
        parts.setdefault(name + " backward", []).append(value[1])
        return value

    def plain_pass() -> None:
        with torch.no_grad():
            for start in range(0, len(y), bs):
                fast_model(layout(x[start : start + bs]))

    sgd = SGDSettings(epochs=args.epochs, batch_size=bs, progress=False)
    bf16 = SGDSettings(epochs=args.epochs, batch_size=bs, progress=False, precision="bfloat16")
    contenders: dict[str, Callable[[], object]] = {
        "joint float32": lambda: NeuralClamping(model, sgd=sgd).fit(x, y),
        "joint bfloat16": lambda: NeuralClamping(model, sgd=bf16).fit(x, y),
        "fast": lambda: NeuralClamping.fast(model, sgd=sgd).fit(x, y),
        "epoch float32": lambda: keep("epoch float32", timed_epoch(fast_model, x, y, bs, False)),
        "epoch bfloat16": lambda: keep("epoch bfloat16", timed_epoch(fast_model, x, y, bs, True)),
        "init": lambda: keep("init", timed_init(fast_model, x, bs)),
        "plain": plain_pass,
    }
    warm = [k for k in contenders if not k.startswith("joint")]  # the joint fits are long
    times = {k: median(v) for k, v in interleaved(contenders, args.repeats, warm=warm).items()}
    split = {k: median(v[1:]) for k, v in parts.items()}  # v[0]: the warm-up run
    scale_n = args.scale_to_n / len(y)
    init_s = times["init"]

    def scaled_joint(precision: str) -> float:
        # init + 2 no-grad passes (initial and final logits) + epochs of SGD
        epoch = times[f"epoch {precision}"]
        return scale_n * (init_s + 2 * times["plain"] + args.scale_to_epochs * epoch)

    def row(what: str, key: str, split_key: str | None, scaled: float) -> list[str]:
        fwd = bwd = ""
        if split_key is not None:
            fwd, bwd = fmt_time(split[split_key]), fmt_time(split[split_key + " backward"])
        return [what, fmt_time(times[key]), fwd, bwd, fmt_time(scaled)]

    rows = [
        row(f"joint, {args.epochs} epochs, float32", "joint float32", None,
            scaled_joint("float32")),
        row(f"joint, {args.epochs} epochs, bfloat16 passes", "joint bfloat16", None,
            scaled_joint("bfloat16")),
        row("fast variant (Appendix F)", "fast", None, times["fast"] * scale_n),
        row("one SGD epoch, float32", "epoch float32", "epoch float32",
            times["epoch float32"] * scale_n),
        row("one SGD epoch, bfloat16 passes", "epoch bfloat16", "epoch bfloat16",
            times["epoch bfloat16"] * scale_n),
        row("data-driven init (entropy gradient)", "init", "init", init_s * scale_n),
        row("plain forward pass (no grad)", "plain", None, times["plain"] * scale_n),
    ]  # fmt: skip
    head = (
        f"### Neural Clamping fit, ResNet-20 (batch norm folded, channels-last), {len(y):,} "
        f"JPEG CIFAR-10 images, batch {bs}, median of {args.repeats} interleaved rounds\n\n"
    )
    last = f"scaled to {args.scale_to_n:,} images" + (
        f", {args.scale_to_epochs} epochs" if args.scale_to_epochs != args.epochs else ""
    )
    print(head + table(["what", "measured", "forward", "backward", last], rows))
    ratio = times["epoch float32"] / times["epoch bfloat16"]
    print(f"\nbfloat16 passes: {ratio:.2f}x faster per SGD epoch (same run)")


if __name__ == "__main__":
    main()
