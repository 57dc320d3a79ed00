"""Trainer overhead: calibkit's ``train`` against a bare PyTorch loop, same model and data.

    .venv/bin/python benchmarks/bench_training.py [--epochs 10] [--repeats 3] [--data-dir D]
        [--dataset cifar10-jpeg:bird,cat] [--model lenet5]

Both train the same model from the same initial weights on the same tensors (bird vs cat
from the CIFAR-10 JPEGs: 9,000 training images; 1,000 calibration and 2,000 test images
held out), with Adam, batch 64, the same per-epoch shuffling and crop/flip augmentation.
The bare loop does nothing else. calibkit's ``train`` also tracks, after every epoch, the
accuracy, NLL, ECE and optimal ECE (1,000-temperature search) of the calibration and test
parts and writes an atomic checkpoint; its time is split into training and tracking.
The two contenders alternate (interleaved rounds); the medians and their ratio are
printed. Target: calibkit within 1.2x the bare loop.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import torch
from _bench import interleaved, machine, median, parse_args, table
from torch import nn

from calibkit.data.augment import crop_and_flip
from calibkit.models import create_model
from calibkit.study.config import DataConfig
from calibkit.study.prepare import prepare_data
from calibkit.training import TrainConfig, train


def bare_loop(model: nn.Module, x: torch.Tensor, y: torch.Tensor, cfg: TrainConfig) -> None:
    """The loop one writes by hand: shuffle, augment, forward, loss, backward, step."""
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    gen = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    n = x.shape[0]
    for _ in range(cfg.epochs):
        model.train()
        perm = torch.randperm(n, generator=gen)
        for start in range(0, n, cfg.batch_size):
            idx = perm[start : start + cfg.batch_size]
            xb = crop_and_flip(x[idx], generator=gen)
            loss = nn.functional.cross_entropy(model(xb), y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model", default="lenet5")
    parser.add_argument("--dataset", default="cifar10-jpeg:bird,cat")
    here = Path(__file__).resolve().parents[2]
    parser.add_argument("--data-dir", default=str(here / "shared" / "data"))
    args = parse_args(parser)

    data = prepare_data(DataConfig(args.dataset, args.data_dir, calibration_size=1000))
    x, y = data.splits["train"]
    k = data.n_classes
    cfg = TrainConfig(epochs=args.epochs, batch_size=64, lr=1e-3, augment=True)
    torch.manual_seed(0)
    init = create_model(args.model, k).state_dict()
    last: dict[str, list[dict[str, float]]] = {}

    def fresh() -> nn.Module:
        model = create_model(args.model, k)
        model.load_state_dict(init)
        return model

    def run_bare() -> None:
        bare_loop(fresh(), x, y, cfg)

    def run_calibkit() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            result = train(
                fresh(),
                (x, y),
                cfg,
                seed=0,
                held_out={"cal": data.splits["cal"], "test": data.splits["test"]},
                checkpoint=Path(tmp) / "ck.pt",
            )
        last["history"] = result.history

    times = interleaved(
        {"bare PyTorch loop": run_bare, "calibkit train": run_calibkit}, args.repeats
    )
    bare, ours = median(times["bare PyTorch loop"]), median(times["calibkit train"])
    history = last["history"]
    evaluation = sum(h["eval_seconds"] for h in history)
    tracking = sum(h["tracking_seconds"] for h in history)
    training = sum(h["train_seconds"] for h in history)
    print(machine())
    print(
        f"{args.model} on {args.dataset}: {len(x):,} training images, {args.epochs} epochs, "
        f"{args.repeats} interleaved rounds, {torch.get_num_threads()} threads\n"
    )
    rows = [
        ["bare PyTorch loop", f"{bare:.2f} s", "1.00x", "–", "–"],
        [
            "calibkit train",
            f"{ours:.2f} s",
            f"{ours / bare:.2f}x",
            f"{100 * evaluation / training:.1f}%",
            f"{100 * tracking / training:.1f}%",
        ],
    ]
    headers = ["contender", "median wall time", "ratio", "held-out evaluation", "of it metrics"]
    print(table(headers, rows))
    print("\n(shares of the training time: evaluation = forward passes + metrics of the held-out")
    print("parts; metrics = accuracy, NLL, ECE and the optimal-ECE search over 1,000 T)")
    acc = history[-1]["test_accuracy"]
    print(
        f"\ncalibkit's last run: test accuracy {100 * acc:.1f}%, test ECE "
        f"{100 * history[-1]['test_ece']:.2f}%"
    )


if __name__ == "__main__":
    main()
