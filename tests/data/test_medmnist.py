"""Tests for calibkit.data.medmnist."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from calibkit.core.errors import InputError
from calibkit.data.medmnist import KNOWN_MD5, file_md5, load_medmnist
from tests.conftest import shared_path


def _write(path: Path) -> Path:
    rng = np.random.default_rng(0)
    arrays = {}
    for split, n in (("train", 10), ("val", 4), ("test", 6)):
        arrays[f"{split}_images"] = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
        arrays[f"{split}_labels"] = (np.arange(n) % 3).reshape(n, 1)
    np.savez(path, **arrays)
    return path


def test_synthetic_grey_file(tmp_path: Path) -> None:
    data = load_medmnist(_write(tmp_path / "tiny.npz"))
    assert sorted(data) == ["test", "train", "val"]
    assert data["train"].images.shape == (10, 28, 28, 1)
    assert data["val"].labels.shape == (4,)
    assert data["test"].labels.dtype == np.int64
    assert data["train"].classes == ("0", "1", "2")


def test_checksum_mismatch(tmp_path: Path) -> None:
    path = _write(tmp_path / "bloodmnist.npz")  # a known name with other bytes
    with pytest.raises(InputError, match="checksum mismatch"):
        load_medmnist(path)
    with pytest.raises(InputError, match="checksum mismatch"):
        load_medmnist(_write(tmp_path / "x.npz"), md5="0" * 32)


def test_missing_keys(tmp_path: Path) -> None:
    path = tmp_path / "bad.npz"
    np.savez(path, images=np.zeros((2, 2, 2), np.uint8))
    with pytest.raises(InputError, match=r"bad\.npz"):
        load_medmnist(path)


@pytest.mark.shared_data
def test_real_bloodmnist() -> None:
    path = shared_path("bloodmnist.npz")
    assert file_md5(path) == KNOWN_MD5["bloodmnist.npz"]
    data = load_medmnist(path)
    shapes = {s: data[s].images.shape for s in data}
    assert shapes == {
        "train": (11959, 28, 28, 3),
        "val": (1712, 28, 28, 3),
        "test": (3421, 28, 28, 3),
    }
    assert data["train"].classes[3] == "immature granulocytes"
    assert len(data["train"].classes) == 8
    assert data["test"].labels.max() == 7
