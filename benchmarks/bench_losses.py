"""Per-step cost of the calibration penalties: LeNet-5, batch 128, 3x32x32, SGD.

    .venv/bin/python benchmarks/bench_losses.py [--repeats 30] [--threads N]

One training step is zero_grad + forward + loss + backward + SGD step. Every loss trains its
own copy of the same LeNet-5 on the same fixed random batch; the steps run interleaved
(``_bench.interleaved``) after a few untimed warm-up steps. Prints the median step time, the
overhead over plain cross-entropy, and the loss alone (forward + backward on the 128 x 10
logits) for the same contenders.
"""

from __future__ import annotations

import argparse
import copy
from collections.abc import Callable

import torch
from _bench import fmt_time, interleaved, machine, median, parse_args, table
from torch import nn

from calibkit.losses import create_loss
from calibkit.models import create_model

BATCH, CLASSES, WARMUP = 128, 10, 5


def contenders() -> dict[str, nn.Module]:
    return {
        "cross_entropy": create_loss("cross_entropy"),
        "CE + MMCE (weighted)": create_loss("mmce", beta=1.0),
        "CE + MDCA": create_loss("mdca", beta=1.0),
        "CE + soft ECE": create_loss("soft_ece", beta=1.0),
        "focal (gamma 3)": create_loss("focal", gamma=3.0),
    }


def step_fn(
    model: nn.Module, loss: nn.Module, x: torch.Tensor, y: torch.Tensor
) -> Callable[[], None]:
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        loss(model(x), y).backward()
        opt.step()

    return step


def loss_only_fn(loss: nn.Module, logits: torch.Tensor, y: torch.Tensor) -> Callable[[], None]:
    def run() -> None:
        z = logits.detach().requires_grad_(True)
        loss(z, y).backward()

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30, help="timed steps (default 30)")
    args = parse_args(parser)
    torch.manual_seed(0)
    x = torch.randn(BATCH, 3, 32, 32)
    y = torch.randint(0, CLASSES, (BATCH,))
    base = create_model("lenet5", CLASSES)
    losses = contenders()
    steps = {name: step_fn(copy.deepcopy(base), loss, x, y) for name, loss in losses.items()}
    for step in steps.values():
        for _ in range(WARMUP):
            step()
    with torch.no_grad():
        logits = base(x)
    alone = {name: loss_only_fn(loss, logits, y) for name, loss in losses.items()}
    step_times = interleaved(steps, args.repeats)
    alone_times = interleaved(alone, args.repeats)
    ce_step, ce_alone = median(step_times["cross_entropy"]), median(alone_times["cross_entropy"])
    rows = []
    for name in losses:
        t, a = median(step_times[name]), median(alone_times[name])
        over = (
            ""
            if name == "cross_entropy"
            else f"{(t - ce_step) * 1e3:+.2f} ms ({t / ce_step - 1:+.1%})"
        )
        rows.append(
            [name, fmt_time(t), over, f"{a * 1e3:.3f} ms", f"{(a - ce_alone) * 1e3:+.3f} ms"]
        )
    print(f"Machine: {machine()}\n")
    print(f"### LeNet-5 training step, batch {BATCH}, 3x32x32, SGD (median of {args.repeats})\n")
    print(table(["loss", "step", "overhead vs CE", "loss fwd+bwd alone", "alone - CE"], rows))


if __name__ == "__main__":
    main()
