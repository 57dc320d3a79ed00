"""Hostile .npy / .npz files, as a family: each is refused with one InputError naming the
file, quickly and without allocating what its header promises."""

from __future__ import annotations

import resource
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from calibkit.core.errors import InputError
from calibkit.io.numpy_files import load_npy, load_npz


def _header(f: object, shape: tuple[int, ...], descr: str = "<f8") -> None:
    header = {"descr": descr, "fortran_order": False, "shape": shape}
    np.lib.format.write_array_header_1_0(f, header)  # type: ignore[arg-type]


def forged_npy(path: Path) -> Path:
    with path.open("wb") as f:
        _header(f, (10**12, 10))
        f.write(b"\0" * 80)
    return path


def short_npy(path: Path) -> Path:
    with path.open("wb") as f:
        _header(f, (1000,))
        f.write(b"\0" * 80)
    return path


def object_npy(path: Path) -> Path:
    np.save(path, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    return path


def bomb_npz(path: Path) -> Path:
    """A small archive whose member's header claims 16 TB of float64."""
    with (
        zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z,
        z.open("logits.npy", "w", force_zip64=True) as f,
    ):
        _header(f, (2 * 10**11, 10))
        f.write(b"\0" * 4096)
    return path


def lying_npz(path: Path) -> Path:
    """A member whose header promises more data than the member holds."""
    with zipfile.ZipFile(path, "w") as z, z.open("logits.npy", "w") as f:
        _header(f, (10**6,))
        f.write(b"\0" * 64)
    return path


def truncated_npz(path: Path) -> Path:
    np.savez(path, logits=np.zeros((50, 3)), labels=np.zeros(50, dtype=np.int64))
    path.write_bytes(path.read_bytes()[:300])
    return path


def object_npz(path: Path) -> Path:
    np.savez(path, logits=np.array([object()], dtype=object))
    return path


CASES: list[tuple[Callable[[Path], Path], Callable[[Path], object], str]] = [
    (forged_npy, load_npy, "fits in memory"),
    (short_npy, load_npy, "truncated or forged"),
    (object_npy, load_npy, "pickle"),
    (bomb_npz, load_npz, "fits in memory"),
    (lying_npz, load_npz, "truncated or forged"),
    (truncated_npz, load_npz, "truncated or corrupt"),
    (object_npz, load_npz, "pickle"),
]


@pytest.mark.parametrize(("make", "load", "why"), CASES, ids=[c[0].__name__ for c in CASES])
def test_hostile_files_are_refused_by_name(
    tmp_path: Path, make: Callable[[Path], Path], load: Callable[[Path], object], why: str
) -> None:
    path = make(tmp_path / ("f.npz" if load is load_npz else "f.npy"))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    with pytest.raises(InputError, match=rf"^{path}: expected .*{why}"):
        load(path)
    assert time.perf_counter() - start < 5.0
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak < 200_000  # KB: no 2 TB


def test_good_files_round_trip_exactly(tmp_path: Path) -> None:
    z = np.random.default_rng(0).normal(size=(7, 3)).astype(np.float32)
    np.save(tmp_path / "z.npy", np.asfortranarray(z))
    np.savez_compressed(tmp_path / "p.npz", logits=z, labels=np.arange(7))
    assert np.array_equal(load_npy(tmp_path / "z.npy"), z)
    loaded = load_npz(tmp_path / "p.npz")
    assert sorted(loaded) == ["labels", "logits"]
    assert loaded["logits"].dtype == np.float32
    assert np.array_equal(loaded["logits"], z)
