"""Tests for calibkit.data.image_folder (synthetic PNG/JPEG datasets made with Pillow)."""

from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from calibkit.core.errors import InputError
from calibkit.data import image_folder
from calibkit.data.image_folder import load_image_folder, read_image_folder
from tests.conftest import shared_path

CLASSES = ("cat", "ant", "bee")  # sorted: ant, bee, cat


def _encode(value: int, fmt: str) -> bytes:
    arr = np.full((6, 5, 3), value, dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format=fmt)
    return buf.getvalue()


def _members() -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for split, n in (("train", 3), ("test", 2)):
        for c, cls in enumerate(CLASSES):
            for i in range(n):
                fmt, ext = ("PNG", "png") if i % 2 == 0 else ("JPEG", "jpg")
                out[f"{split}/{cls}/{i:04d}.{ext}"] = _encode(40 * c + 10 * i, fmt)
    return out


def _make_zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def _make_folder(root: Path, members: dict[str, bytes]) -> Path:
    for name, data in members.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root


def _check(data: dict[str, image_folder.ImageArrays]) -> None:
    assert sorted(data) == ["test", "train"]
    train = data["train"]
    assert train.classes == ("ant", "bee", "cat")
    assert train.images.shape == (9, 6, 5, 3)
    assert train.images.dtype == np.uint8
    np.testing.assert_array_equal(np.bincount(train.labels), [3, 3, 3])
    np.testing.assert_array_equal(np.bincount(data["test"].labels), [2, 2, 2])
    # ant is class 1 of CLASSES (value 40 + 10 i); PNG members are lossless
    assert train.labels[0] == 0
    assert np.all(train.images[0] == 40)


def test_zip_and_folder_agree(tmp_path: Path) -> None:
    members = _members()
    from_zip = read_image_folder(_make_zip(tmp_path / "d.zip", members), workers=2)
    from_dir = read_image_folder(_make_folder(tmp_path / "d", members))
    _check(from_zip)
    for split in ("train", "test"):
        np.testing.assert_array_equal(from_zip[split].images, from_dir[split].images)
        np.testing.assert_array_equal(from_zip[split].labels, from_dir[split].labels)


def test_worker_processes_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = _make_zip(tmp_path / "d.zip", _members())
    serial = read_image_folder(src, workers=1)
    monkeypatch.setattr(image_folder, "_PARALLEL_MIN", 1)
    parallel = read_image_folder(src, workers=2)
    for split in ("train", "test"):
        np.testing.assert_array_equal(serial[split].images, parallel[split].images)
        np.testing.assert_array_equal(serial[split].labels, parallel[split].labels)


def test_worker_error_names_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    members = _members()
    members["train/cat/0002.png"] = b"\x89PNG broken"
    monkeypatch.setattr(image_folder, "_PARALLEL_MIN", 1)
    with pytest.raises(InputError, match=r"train/cat/0002\.png"):
        read_image_folder(_make_zip(tmp_path / "d.zip", members), workers=2)


def test_cache_hit_does_not_decode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = _make_zip(tmp_path / "d.zip", _members())
    cache = tmp_path / "cache"
    first = load_image_folder(src, cache_dir=cache)
    assert len(list(cache.glob("*.npz"))) == 1

    def fail(data: bytes, name: str) -> np.ndarray:
        raise AssertionError("decoded on a cache hit")

    monkeypatch.setattr(image_folder, "_decode", fail)
    second = load_image_folder(src, cache_dir=cache)
    _check(second)
    np.testing.assert_array_equal(first["train"].images, second["train"].images)


def test_cache_dir_from_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CALIBKIT_CACHE", str(tmp_path / "envcache"))
    load_image_folder(_make_zip(tmp_path / "d.zip", _members()))
    assert len(list((tmp_path / "envcache").glob("*.npz"))) == 1


def test_checksum_key_changes(tmp_path: Path) -> None:
    members = _members()
    src = _make_zip(tmp_path / "d.zip", members)
    key = image_folder._source_key(src)
    members["train/ant/0000.png"] = _encode(7, "PNG")
    assert image_folder._source_key(_make_zip(src, members)) != key
    folder = _make_folder(tmp_path / "f", _members())
    fkey = image_folder._source_key(folder)
    target = folder / "train/bee/0001.jpg"
    target.write_bytes(_encode(99, "JPEG") + b"\0")
    os.utime(target, ns=(1, 1))
    assert image_folder._source_key(folder) != fkey


def test_changed_source_is_decoded_again(tmp_path: Path) -> None:
    members = _members()
    src = _make_zip(tmp_path / "d.zip", members)
    cache = tmp_path / "cache"
    load_image_folder(src, cache_dir=cache)
    members["train/ant/0000.png"] = _encode(7, "PNG")
    data = load_image_folder(_make_zip(src, members), cache_dir=cache)
    assert np.all(data["train"].images[0] == 7)
    assert len(list(cache.glob("*.npz"))) == 2


def test_corrupt_zip(tmp_path: Path) -> None:
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"PK\x03\x04 this is not a zip archive")
    with pytest.raises(InputError, match=r"bad\.zip"):
        load_image_folder(bad, cache_dir=tmp_path / "c")


def test_missing_split(tmp_path: Path) -> None:
    members = {k: v for k, v in _members().items() if k.startswith("train/")}
    with pytest.raises(InputError, match="test/"):
        read_image_folder(_make_zip(tmp_path / "d.zip", members))


def test_undecodable_image_named(tmp_path: Path) -> None:
    members = _members()
    members["test/bee/0001.jpg"] = b"not an image"
    with pytest.raises(InputError, match=r"test/bee/0001\.jpg"):
        read_image_folder(_make_zip(tmp_path / "d.zip", members))


def test_real_cifar_handful() -> None:
    """Read a few members of the real zip without decoding all 60,000."""
    path = shared_path("cifar10-jpeg.zip")
    with zipfile.ZipFile(path) as zf:
        names = [n for n in zf.namelist() if n.endswith("/0000.jpg")]
        assert len(names) == 20
        images = [image_folder._decode(zf.read(n), n) for n in names[:5]]
    assert all(img.shape == (32, 32, 3) and img.dtype == np.uint8 for img in images)


@pytest.mark.slow
def test_real_cifar_full_decode(tmp_path: Path) -> None:
    data = load_image_folder(shared_path("cifar10-jpeg.zip"), cache_dir=tmp_path)
    assert data["train"].images.shape == (50000, 32, 32, 3)
    assert data["test"].images.shape == (10000, 32, 32, 3)
    assert data["train"].classes[:3] == ("airplane", "automobile", "bird")
    np.testing.assert_array_equal(np.bincount(data["test"].labels), [1000] * 10)
