"""Copy what the GPU checks read from a data folder into a small one, for a GPU machine
whose upload is limited (64 MiB): BloodMNIST, the pretrained checkpoints, and a copy of the
CIFAR-10 JPEG archive that keeps only some classes (default bird and cat: 12,000 images,
about 12 MB of the 62 MB).

    python3 scripts/gpu_data.py ../shared/data .gpu-data [--classes bird,cat]

Then on the GPU machine: ``bash scripts/gpu_check.sh .gpu-data``. Standard library only;
it refuses to write into a folder that exists.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import zipfile
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("source", type=Path, help="the data folder (e.g. ../shared/data)")
    parser.add_argument("dest", type=Path, help="a new folder to write")
    parser.add_argument("--classes", default="bird,cat", help="CIFAR-10 classes to keep")
    args = parser.parse_args()
    if args.dest.exists():
        print(
            f"gpu_data: dest: expected a new folder, got {args.dest} (it exists)", file=sys.stderr
        )
        return 2
    zip_path = args.source / "cifar10-jpeg.zip"
    for needed in (args.source / "bloodmnist.npz", zip_path):
        if not needed.is_file():
            print(f"gpu_data: source: expected {needed.name} in it, got none", file=sys.stderr)
            return 2
    keep = {c.strip() for c in args.classes.split(",") if c.strip()}
    args.dest.mkdir(parents=True)
    shutil.copy(args.source / "bloodmnist.npz", args.dest)
    if (args.source / "pretrained").is_dir():
        shutil.copytree(args.source / "pretrained", args.dest / "pretrained")
    with zipfile.ZipFile(zip_path) as src, zipfile.ZipFile(args.dest / zip_path.name, "w") as dst:
        for info in src.infolist():
            parts = info.filename.split("/")
            if len(parts) >= 3 and parts[1] in keep:
                dst.writestr(info, src.read(info))
    total = sum(p.stat().st_size for p in args.dest.rglob("*") if p.is_file())
    print(f"gpu_data: {args.dest}: {total / 2**20:.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
