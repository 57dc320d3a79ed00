"""One training step of each full-scale model on this CPU (experiments/fullscale/configs/).

    .venv/bin/python benchmarks/bench_step.py [--repeats 5] [--models a,b] [--threads N]

A step is zero_grad + forward + cross-entropy + backward + optimizer step on a fixed random
batch, with the batch size and optimizer of the model's recipe (the trained models), after
one untimed warm-up step; the median of ``--repeats`` steps is printed with the images per
second and the forward FLOPs per image (torch's FlopCounterMode, multiply-adds counted as
2). The ImageNet models are not trained in their config; their step (batch 32, SGD) stands
for Neural Clamping's SGD passes, which back-propagate through the whole network to its
input (batch 512 in the paper's setting: about 16x this step).
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F
from _bench import fmt_time, machine, median, parse_args, table
from torch.utils.flop_counter import FlopCounterMode

from calibkit.models import create_model

#: name, classes, input side, batch size, optimizer (the recipe of its full-scale config).
MODELS = [
    ("resnet50_28", 8, 28, 128, "adam"),
    ("resnet110", 100, 32, 128, "sgd"),
    ("wrn40_10", 100, 32, 128, "sgd"),
    ("resnet32", 100, 32, 128, "sgd"),
    ("resnet18", 2, 32, 128, "sgd"),
    ("resnet101", 1000, 224, 32, "sgd"),
    ("vit_small_patch16_224", 1000, 224, 32, "sgd"),
    ("mixer_b16_224", 1000, 224, 32, "sgd"),
]


def forward_flops(model: torch.nn.Module, side: int) -> int:
    """FLOPs of one forward pass on one image."""
    model.eval()
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model(torch.randn(1, 3, side, side))
    model.train()
    return int(counter.get_total_flops())


def step_times(name: str, k: int, side: int, batch: int, opt: str, repeats: int) -> list[float]:
    torch.manual_seed(0)
    model = create_model(name, k).train()
    if opt == "adam":
        optimizer: torch.optim.Optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    x, y = torch.randn(batch, 3, side, side), torch.randint(0, k, (batch,))
    times = []
    for i in range(repeats + 1):
        t0 = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
        if i:  # the first step warms up
            times.append(time.perf_counter() - t0)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--models", default="", help="comma-separated subset")
    text = "batch size instead of the recipe's (a smaller one on a busy CPU; the table says so)"
    parser.add_argument("--batch", type=int, default=None, help=text)
    args = parse_args(parser)
    chosen = [m for m in MODELS if not args.models or m[0] in args.models.split(",")]
    print(machine())
    rows = []
    for name, k, side, recipe, opt in chosen:
        batch = args.batch or recipe
        flops = forward_flops(create_model(name, k), side)
        step = median(step_times(name, k, side, batch, opt, args.repeats))
        rows.append(
            [
                name,
                f"{side}x{side}",
                str(batch) if batch == recipe else f"{batch} (recipe {recipe})",
                f"{flops / 1e9:.2f}",
                fmt_time(step),
                f"{batch / step:.1f}",
            ]
        )
        print(f"{name}: {fmt_time(step)}", flush=True)
    headers = ["model", "input", "batch", "fwd GFLOPs/img", "median step", "images/s"]
    print(table(headers, rows))


if __name__ == "__main__":
    main()
