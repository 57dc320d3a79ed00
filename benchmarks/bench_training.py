"""Trainer overhead: calibkit's ``train`` against a bare PyTorch loop, same model and data.

    python benchmarks/bench_training.py [--device cpu|cuda] [--epochs 10] [--repeats 3]
        [--dataset cifar10-jpeg:bird,cat] [--model lenet5] [--batch-size 64] [--no-augment]
        [--data-dir D] [--json PATH] [--against REV]

Both train the same model from the same initial weights on the same tensors with Adam (lr
1e-3) at the same batch size, shuffling every epoch, with crop/flip augmentation unless
``--no-augment``. The bare loop is the one written by hand for the device: the splits
resident there (on a GPU, moved once), the permutation and the augmentation's draws made
there, forward, loss, backward, step, and nothing else; on a GPU the host waits for the
device once, at the end of each epoch, to time it. calibkit's ``train`` also sums the
epoch's loss and accuracy, evaluates the held-out parts after every epoch (accuracy, NLL,
ECE, optimal ECE over 1,000 temperatures) and writes an atomic checkpoint.

Two ratios are printed, medians over the repeats (the contenders alternate, interleaved
rounds): the **training epoch** (calibkit's ``train_seconds`` of an epoch against the bare
loop's epoch, the first epoch of every run left out as warm-up: cuDNN's autotuning, the
allocator), and the **whole run** wall time (with the held-out evaluation and checkpoints).
Targets: the training epoch within 1.1x on a GPU; the whole run within 1.2x on the CPU.
``--against REV`` adds calibkit's trainer as it was at the git revision ``REV`` (its
``trainer.py`` loaded beside today's, in the same process) as a third contender: a change
of the trainer measured against the trainer before it.

The issue's GPU case (BloodMNIST, MedMNIST's ResNet-50 for 28x28, batch 128, no
augmentation)::

    python benchmarks/bench_training.py --device cuda --dataset bloodmnist \\
        --model resnet50_28 --batch-size 128 --no-augment --epochs 4 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path
from typing import Any

import torch
from _bench import interleaved, machine, median, parse_args, table
from torch import nn

from calibkit.data.augment import apply_crop_and_flip
from calibkit.study.definition.components import build_model
from calibkit.study.definition.config import DataConfig, ModelSpec
from calibkit.study.definition.prepare import prepare_data
from calibkit.training import TrainConfig, train


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def bare_loop(model: nn.Module, x: torch.Tensor, y: torch.Tensor, cfg: TrainConfig) -> list[float]:
    """The loop one writes by hand on the model's device; the seconds of each epoch."""
    device = next(model.parameters()).device
    x, y = x.to(device), y.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    torch.manual_seed(0)
    n, seconds = x.shape[0], []
    for _ in range(cfg.epochs):
        _sync(device)
        t0 = time.perf_counter()
        model.train()
        perm = torch.randperm(n, device=device)
        for start in range(0, n, cfg.batch_size):
            idx = perm[start : start + cfg.batch_size]
            xb = x[idx]
            if cfg.augment:
                m = len(idx)
                top = torch.randint(0, 9, (m,), device=device)
                left = torch.randint(0, 9, (m,), device=device)
                flip = torch.rand(m, device=device) < 0.5
                xb = apply_crop_and_flip(xb, top, left, flip)
            loss = nn.functional.cross_entropy(model(xb), y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        _sync(device)
        seconds.append(time.perf_counter() - t0)
    return seconds


def trainer_at(rev: str) -> types.ModuleType:
    """calibkit's ``training/trainer.py`` at the git revision ``rev``, as a module of its own
    (its imports are today's calibkit)."""
    root = Path(__file__).resolve().parents[1]
    src = subprocess.run(
        ["git", "show", f"{rev}:src/calibkit/training/trainer.py"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    module = types.ModuleType(f"trainer_at_{rev}")
    sys.modules[module.__name__] = module
    exec(compile(src, f"trainer.py at {rev}", "exec"), module.__dict__)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model", default="lenet5")
    parser.add_argument("--dataset", default="cifar10-jpeg:bird,cat")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--no-augment", action="store_true")
    here = Path(__file__).resolve().parents[2]
    parser.add_argument("--data-dir", default=str(here / "shared" / "data"))
    parser.add_argument("--json", default=None, help="also write the results to this file")
    parser.add_argument("--against", default=None, help="also time the trainer at this revision")
    args = parse_args(parser)
    device = torch.device(args.device)

    data = prepare_data(DataConfig(args.dataset, args.data_dir, calibration_size=1000))
    x, y = data.splits["train"]
    augment = not args.no_augment
    cfg = TrainConfig(epochs=args.epochs, batch_size=args.batch_size, lr=1e-3, augment=augment)
    spec = ModelSpec(args.model)
    torch.manual_seed(0)
    init = build_model(spec, data).state_dict()
    epochs: dict[str, list[float]] = {"bare PyTorch loop": [], "calibkit train": []}
    last: dict[str, Any] = {}

    def fresh() -> nn.Module:
        model = build_model(spec, data)
        model.load_state_dict(init)
        return model.to(device)

    def run_bare() -> None:
        epochs["bare PyTorch loop"] += bare_loop(fresh(), x, y, cfg)[1:]

    def calibkit(name: str, trainer: Any) -> Any:
        def run() -> None:
            with tempfile.TemporaryDirectory() as tmp:
                result = trainer(
                    fresh(),
                    (x, y),
                    cfg,
                    seed=0,
                    held_out={"cal": data.splits["cal"], "test": data.splits["test"]},
                    checkpoint=Path(tmp) / "ck.pt",
                )
            last[name] = result.history
            epochs[name] += [h["train_seconds"] for h in result.history[1:]]

        return run

    contenders = {"bare PyTorch loop": run_bare}
    contenders["calibkit train"] = calibkit("calibkit train", train)
    if args.against:
        old = f"calibkit train at {args.against}"
        epochs[old] = []
        contenders[old] = calibkit(old, trainer_at(args.against).train)
    times = interleaved(contenders, args.repeats)
    for name in epochs:  # the untimed warm-up round of each contender is left out
        epochs[name] = epochs[name][-(args.epochs - 1) * args.repeats :]
    bare, ours = median(times["bare PyTorch loop"]), median(times["calibkit train"])
    bare_epoch, our_epoch = median(epochs["bare PyTorch loop"]), median(epochs["calibkit train"])
    history = last["calibkit train"]
    evaluation = median([h["eval_seconds"] for h in history[1:]])
    tracking = median([h["tracking_seconds"] for h in history[1:]])
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else machine()
    print(where)
    print(
        f"{args.model} on {args.dataset}: {len(x):,} training images, batch {args.batch_size}, "
        f"{'crop/flip' if augment else 'no augmentation'}, {args.epochs} epochs, "
        f"{args.repeats} interleaved rounds, device {device}, torch {torch.__version__}\n"
    )
    rows = [
        ["bare PyTorch loop", f"{bare_epoch:.3f} s", "1.00x", f"{bare:.2f} s", "1.00x", "–"],
        [
            "calibkit train",
            f"{our_epoch:.3f} s",
            f"{our_epoch / bare_epoch:.2f}x",
            f"{ours:.2f} s",
            f"{ours / bare:.2f}x",
            f"{evaluation:.3f} s (metrics {tracking:.3f} s)",
        ],
    ]
    if args.against:
        name = f"calibkit train at {args.against}"
        old_epoch, old_run = median(epochs[name]), median(times[name])
        evaluation_old = median([h["eval_seconds"] for h in last[name][1:]])
        rows.append(
            [
                name,
                f"{old_epoch:.3f} s",
                f"{old_epoch / bare_epoch:.2f}x",
                f"{old_run:.2f} s",
                f"{old_run / bare:.2f}x",
                f"{evaluation_old:.3f} s",
            ]
        )
    headers = [
        "contender",
        "training epoch (median)",
        "ratio",
        "whole run (median)",
        "ratio",
        "held-out evaluation per epoch",
    ]
    print(table(headers, rows))
    acc = history[-1]["test_accuracy"]
    print(
        f"\ncalibkit's last run: test accuracy {100 * acc:.1f}%, test ECE "
        f"{100 * history[-1]['test_ece']:.2f}%"
    )
    if args.json:
        summary = {
            "device": where,
            "model": args.model,
            "dataset": args.dataset,
            "batch_size": args.batch_size,
            "augment": augment,
            "bare_epoch_s": bare_epoch,
            "calibkit_epoch_s": our_epoch,
            "epoch_ratio": our_epoch / bare_epoch,
            "bare_run_s": bare,
            "calibkit_run_s": ours,
            "run_ratio": ours / bare,
            "eval_s_per_epoch": evaluation,
        }
        Path(args.json).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
