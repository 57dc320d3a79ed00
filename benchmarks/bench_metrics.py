"""ECE (15 bins) from float32 logits: calibkit against one torch.softmax, torchmetrics, netcal.

    .venv/bin/python benchmarks/bench_metrics.py [--repeats 7] [--quick] [--threads N]

Prints a Markdown table per shape: median wall time, the ratio to one ``torch.softmax`` over
the same array (the target is at most 1.5), and how many times faster calibkit is than
torchmetrics on the same logits (target at least 2). ``calibkit ece(logits)`` includes the
input validation; its two parts are also timed alone.
"""

from __future__ import annotations

import argparse
import warnings

import torch
from _bench import fmt_time, interleaved, machine, median, parse_args, synthetic, table

from calibkit.core.outputs import check_scores, top_label_from_logits
from calibkit.metrics import ece

SHAPES = [(50_000, 1_000), (1_000_000, 10)]
QUICK_SHAPES = [(5_000, 1_000), (100_000, 10)]


def run_shape(n: int, k: int, repeats: int) -> str:
    from netcal.metrics import ECE
    from torchmetrics.functional.classification import multiclass_calibration_error

    z, y = synthetic(n, k, temperature=1.5)
    zt, yt = torch.from_numpy(z), torch.from_numpy(y)
    probs_t = torch.softmax(zt, dim=1)
    probs = probs_t.numpy()

    def tm(scores: torch.Tensor) -> float:
        return float(multiclass_calibration_error(scores, yt, num_classes=k, n_bins=15))

    contenders = {
        "torch.softmax (the unit)": lambda: torch.softmax(zt, dim=1),
        "calibkit ece(logits=)": lambda: ece(y, logits=z),
        "- its check_scores": lambda: check_scores(z, "logits"),
        "- its top_label_from_logits": lambda: top_label_from_logits(z),
        "torchmetrics (logits)": lambda: tm(zt),
        "torchmetrics (probs)": lambda: tm(probs_t),
        "netcal ECE (probs)": lambda: ECE(bins=15).measure(probs, y),
        "calibkit ece(probs=)": lambda: ece(y, probs=probs),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        times = interleaved(contenders, repeats)
        values = {
            "calibkit ece(logits=)": ece(y, logits=z),
            "torchmetrics (logits)": tm(zt),
            "torchmetrics (probs)": tm(probs_t),
            "netcal ECE (probs)": float(ECE(bins=15).measure(probs, y)),
            "calibkit ece(probs=)": ece(y, probs=probs),
        }
    unit = median(times["torch.softmax (the unit)"])
    ours = median(times["calibkit ece(logits=)"])
    rows = []
    for name, ts in times.items():
        t = median(ts)
        faster = f"{t / ours:.2f}x" if name.startswith(("torchmetrics", "netcal")) else ""
        value = f"{values[name]:.6f}" if name in values else ""
        rows.append([name, fmt_time(t), f"{t / unit:.2f}", faster, value])
    head = f"### ECE from logits, {n:,} x {k:,} float32 (median of {repeats})\n\n"
    return head + table(
        ["contender", "median", "/ torch.softmax", "time / calibkit ece(logits=)", "ECE"], rows
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7, help="timed rounds (default 7)")
    parser.add_argument("--quick", action="store_true", help="10x smaller shapes, 3 rounds")
    args = parse_args(parser)
    repeats = 3 if args.quick and args.repeats == 7 else args.repeats
    print(f"Machine: {machine()}\n")
    for n, k in QUICK_SHAPES if args.quick else SHAPES:
        print(run_shape(n, k, repeats), end="\n\n", flush=True)


if __name__ == "__main__":
    main()
