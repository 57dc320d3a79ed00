"""A tiny study on the bundled digits (seconds), shared by the study tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

TINY = """
name = "tiny"
seeds = [0, 1]
calibrators = ["temperature", "histogram"]
n_floor_draws = 20

[data]
dataset = "digits:0,1,2"
calibration_size = 120

[training]
epochs = 3
batch_size = 32
lr = 0.01

[[models]]
name = "mlp"
params = { hidden = [16] }

[[models]]
name = "mlp"
label = "mlp_dropout"
params = { hidden = [16], dropout = 0.3 }
"""


@pytest.fixture
def tiny_config(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.toml"
    path.write_text(TINY, encoding="utf-8")
    return path


def _content(p: Path) -> bytes | None:
    if p.is_symlink():
        return b"link to " + os.readlink(p).encode()
    if not (p.is_dir() or p.is_file()):  # a FIFO: never opened
        return b"special"
    return None if p.is_dir() else p.read_bytes()


def tree(root: Path) -> dict[str, bytes | None]:
    """Every path below ``root`` with its bytes (None for a folder, the target for a link):
    names and contents."""
    return {p.relative_to(root).as_posix(): _content(p) for p in sorted(root.rglob("*"))}
