"""Run the shift study: ``calibkit shift`` for each pretrained CIFAR-10 ResNet.

From the repository root (calibkit importable: the venv, or ``PYTHONPATH=src``)::

    OMP_NUM_THREADS=2 python experiments/shift/run.py --data-dir ../shared/data

Each model's report goes to ``experiments/shift/<model>/`` (``--out-root`` elsewhere):
5,000 stratified test images (seed 0) as the clean calibration part, ``--test-size`` of the
other 5,000 (stratified) as the test part, every available corruption at ``--severities``.
Without arguments it runs the whole study with these defaults. Every model's checkpoint and
report folder are checked before the first model runs (a report folder as ``calibkit
shift --out`` takes it: new, empty, or one calibkit wrote and nobody changed since): a
missing checkpoint or a folder of the user's is refused in one line (exit status 2).
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a file: the repository root makes `experiments` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from calibkit.io.atomic import check_replaceable_folder
from experiments._driver import driver_parser, input_file, run_driver

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
    p = driver_parser(__file__, __doc__)
    p.add_argument("--data-dir", default=str(HERE.parents[1].parent / "shared" / "data"))
    p.add_argument("--out-root", type=Path, default=HERE)
    p.add_argument("--test-size", type=int, default=5000)
    p.add_argument("--severities", default="1-5")

    def work(args: argparse.Namespace) -> int:
        cmds = commands(args.data_dir, args.out_root, args.test_size, args.severities)
        for cmd in cmds:  # every model's, before the first runs
            check_replaceable_folder(Path(cmd[cmd.index("--out") + 1]), "--out-root")
            input_file(cmd[cmd.index("--weights") + 1], "--data-dir")
        from calibkit.cli import main as calibkit

        for cmd in cmds:
            print("$ calibkit " + shlex.join(cmd), flush=True)
            start = time.perf_counter()
            status = calibkit(cmd)
            print(f"exit {status} after {time.perf_counter() - start:.0f}s", flush=True)
            if status:
                return status
        return 0

    return run_driver(p, work, argv)


if __name__ == "__main__":
    sys.exit(main())
