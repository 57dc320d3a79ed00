"""Run the shift study: ``calibkit shift`` for each pretrained CIFAR-10 ResNet.

From the repository root (calibkit importable: the venv, or ``PYTHONPATH=src``)::

    OMP_NUM_THREADS=2 python experiments/shift/run.py --data-dir ../shared/data

Each model's report goes to ``experiments/shift/<model>/`` (``--out-root`` elsewhere):
5,000 stratified test images (seed 0) as the clean calibration part, ``--test-size`` of the
other 5,000 (stratified) as the test part, every available corruption at ``--severities``.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: Model name and checkpoint file (in DATA_DIR/pretrained) of each model of the study.
MODELS = {
    "resnet20": "resnet20-12fca82f.th",
    "resnet32": "resnet32-d509ac18.th",
}


def commands(data_dir: str, out_root: Path, test_size: int, severities: str) -> list[list[str]]:
    """The ``calibkit shift`` argument lists, one per model.

    >>> commands("D", Path("O"), 2500, "1-5")[0][:4]
    ['shift', '--model', 'resnet20', '--weights']
    """
    return [
        [
            "shift",
            "--model",
            model,
            "--weights",
            str(Path(data_dir) / "pretrained" / weights),
            "--data",
            "cifar10-jpeg",
            "--data-dir",
            data_dir,
            "--cal-size",
            "5000",
            "--test-size",
            str(test_size),
            "--corruptions",
            "all",
            "--severities",
            severities,
            "--device",
            "auto",
            "--seed",
            "0",
            "--out",
            str(out_root / model),
        ]
        for model, weights in MODELS.items()
    ]


def main(argv: list[str] | None = None) -> int:
    """Run every model's ``calibkit shift`` in turn; stop at the first failure."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", default=str(HERE.parents[1].parent / "shared" / "data"))
    p.add_argument("--out-root", type=Path, default=HERE)
    p.add_argument("--test-size", type=int, default=5000)
    p.add_argument("--severities", default="1-5")
    args = p.parse_args(argv)
    from calibkit.cli import main as calibkit

    for cmd in commands(args.data_dir, args.out_root, args.test_size, args.severities):
        print("$ calibkit " + shlex.join(cmd), flush=True)
        start = time.perf_counter()
        status = calibkit(cmd)
        print(f"exit {status} after {time.perf_counter() - start:.0f}s", flush=True)
        if status:
            return status
    return 0


if __name__ == "__main__":
    sys.exit(main())
