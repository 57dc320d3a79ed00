"""Hostile or broken data files are refused by name, without a traceback (issue 12, family 4).

Each case builds a small damaged or forged file in ``tmp_path`` and checks that its loader
raises one :class:`InputError` whose message names the file, and writes nothing.
"""

from __future__ import annotations

import io
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from calibkit.cli import main
from calibkit.core.errors import InputError
from calibkit.data import read_image_folder
from calibkit.data.cifar import read_cifar
from calibkit.data.image_folder import MAX_IMAGE_PIXELS
from calibkit.data.medmnist import load_medmnist
from calibkit.io.toml import load_toml
from calibkit.study.definition.config import StudyConfig


def _png(size: tuple[int, int] = (4, 4)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size).save(buf, format="PNG")
    return buf.getvalue()


def _image_zip(path: Path, images: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for split in ("train", "test"):
            zf.writestr(f"{split}/a/ok.png", _png())
        for name, data in images.items():
            zf.writestr(name, data)
    return path


def _bomb_png() -> bytes:
    """A tiny PNG whose header promises more pixels than the loader accepts."""
    side = int(MAX_IMAGE_PIXELS**0.5) + 1
    buf = io.BytesIO()
    Image.new("1", (side, side)).save(buf, format="PNG")  # 1 bit per pixel, compresses well
    return buf.getvalue()


def _truncated(data: bytes) -> bytes:
    return data[: len(data) // 2]


# ----- the hostile files, one builder each ---------------------------------------------------
def toml_nested(tmp: Path) -> tuple[Callable[[], object], Path]:
    path = tmp / "deep.toml"
    path.write_text("a = " + "[" * 100_000 + "]" * 100_000 + "\n")
    return lambda: load_toml(StudyConfig, path), path


def toml_binary(tmp: Path) -> tuple[Callable[[], object], Path]:
    path = tmp / "binary.toml"
    path.write_bytes(b"\xff\xfe\x00name = 1")
    return lambda: load_toml(StudyConfig, path), path


def zip_bomb_image(tmp: Path) -> tuple[Callable[[], object], Path]:
    path = _image_zip(tmp / "bomb.zip", {"train/a/bomb.png": _bomb_png()})
    return lambda: read_image_folder(path, workers=1), path


def zip_corrupt_image(tmp: Path) -> tuple[Callable[[], object], Path]:
    path = _image_zip(tmp / "broken.zip", {"train/a/cut.png": _truncated(_png((16, 16)))})
    return lambda: read_image_folder(path, workers=1), path


def zip_truncated(tmp: Path) -> tuple[Callable[[], object], Path]:
    whole = _image_zip(tmp / "whole.zip", {}).read_bytes()
    path = tmp / "truncated.zip"
    path.write_bytes(_truncated(whole))
    return lambda: read_image_folder(path, workers=1), path


def zip_crc(tmp: Path) -> tuple[Callable[[], object], Path]:
    data = bytearray(_image_zip(tmp / "crc.zip", {}).read_bytes())
    start = data.index(b"train/a/ok.png") + len(b"train/a/ok.png")
    data[start + 2] ^= 0xFF  # one byte of the first member's compressed data
    path = tmp / "crc.zip"
    path.write_bytes(bytes(data))
    return lambda: read_image_folder(path, workers=1), path


def folder_bomb_image(tmp: Path) -> tuple[Callable[[], object], Path]:
    for split in ("train", "test"):
        (tmp / "imgs" / split / "a").mkdir(parents=True)
        (tmp / "imgs" / split / "a" / "ok.png").write_bytes(_png())
    (tmp / "imgs" / "test" / "a" / "bomb.png").write_bytes(_bomb_png())
    return lambda: read_image_folder(tmp / "imgs", workers=1), tmp / "imgs"


def _tar(path: Path, members: list[tarfile.TarInfo], data: bytes = b"") -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for info in members:
            tar.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return path


def tar_truncated(tmp: Path) -> tuple[Callable[[], object], Path]:
    info = tarfile.TarInfo("cifar-10-batches-py/batches.meta")
    info.size = 4096
    whole = _tar(tmp / "whole.tar.gz", [info], bytes(4096)).read_bytes()
    path = tmp / "cut.tar.gz"
    path.write_bytes(_truncated(whole))
    return lambda: read_cifar("cifar10", path), path


def tar_not_gzip(tmp: Path) -> tuple[Callable[[], object], Path]:
    path = tmp / "plain.tar.gz"
    path.write_bytes(b"not a tar archive at all" * 40)
    return lambda: read_cifar("cifar10", path), path


def tar_escaping_member(tmp: Path) -> tuple[Callable[[], object], Path]:
    info = tarfile.TarInfo("../../etc/evil")
    path = _tar(tmp / "escape.tar.gz", [info])
    return lambda: read_cifar("cifar10", path), path


def tar_absolute_member(tmp: Path) -> tuple[Callable[[], object], Path]:
    path = _tar(tmp / "absolute.tar.gz", [tarfile.TarInfo("/tmp/evil")])
    return lambda: read_cifar("cifar10", path), path


def tar_link_member(tmp: Path) -> tuple[Callable[[], object], Path]:
    info = tarfile.TarInfo("cifar-10-batches-py/batches.meta")
    info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
    path = _tar(tmp / "link.tar.gz", [info])
    return lambda: read_cifar("cifar10", path), path


def _medmnist(tmp: Path, name: str, **changes: object) -> Path:
    arrays: dict[str, object] = {}
    for split in ("train", "val", "test"):
        arrays[f"{split}_images"] = np.zeros((2, 4, 4, 3), dtype=np.uint8)
        arrays[f"{split}_labels"] = np.array([[0], [1]])
    arrays.update(changes)
    np.savez(tmp / name, **{k: v for k, v in arrays.items() if v is not None})  # type: ignore[arg-type]
    return tmp / name


def npz_missing_split(tmp: Path) -> tuple[Callable[[], object], Path]:
    path = _medmnist(tmp, "missing.npz", val_labels=None)
    return lambda: load_medmnist(path), path


def npz_huge_label(tmp: Path) -> tuple[Callable[[], object], Path]:
    path = _medmnist(tmp, "huge.npz", train_labels=np.array([0, 2**64 - 1], dtype=np.uint64))
    return lambda: load_medmnist(path), path


def npz_float_labels(tmp: Path) -> tuple[Callable[[], object], Path]:
    path = _medmnist(tmp, "float.npz", test_labels=np.array([0.5, 1.0]))
    return lambda: load_medmnist(path), path


def npz_bad_images(tmp: Path) -> tuple[Callable[[], object], Path]:
    path = _medmnist(tmp, "images.npz", val_images=np.zeros((2, 4, 4, 3), dtype=np.float64))
    return lambda: load_medmnist(path), path


def npz_pickle(tmp: Path) -> tuple[Callable[[], object], Path]:
    path = _medmnist(tmp, "pickle.npz", val_images=np.array([{"a": 1}, None], dtype=object))
    return lambda: load_medmnist(path), path


def npz_truncated(tmp: Path) -> tuple[Callable[[], object], Path]:
    whole = _medmnist(tmp, "whole.npz").read_bytes()
    path = tmp / "cut.npz"
    path.write_bytes(_truncated(whole))
    return lambda: load_medmnist(path), path


HOSTILE = [
    toml_nested,
    toml_binary,
    zip_bomb_image,
    zip_corrupt_image,
    zip_truncated,
    zip_crc,
    folder_bomb_image,
    tar_truncated,
    tar_not_gzip,
    tar_escaping_member,
    tar_absolute_member,
    tar_link_member,
    npz_missing_split,
    npz_huge_label,
    npz_float_labels,
    npz_bad_images,
    npz_pickle,
    npz_truncated,
]


def _tree(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else b"")
        for p in sorted(folder.rglob("*"))
    }


@pytest.mark.parametrize("build", HOSTILE, ids=lambda f: f.__name__)
def test_a_hostile_file_is_refused_by_name(
    tmp_path: Path, build: Callable[[Path], tuple[Callable[[], object], Path]]
) -> None:
    load, path = build(tmp_path)
    before = _tree(tmp_path)
    with pytest.raises(InputError) as info:
        load()
    assert str(path) in str(info.value)
    assert "\n" not in str(info.value)
    assert _tree(tmp_path) == before


def test_a_huge_label_is_shown_as_it_is(tmp_path: Path) -> None:
    load, _ = npz_huge_label(tmp_path)
    with pytest.raises(InputError, match=str(2**64 - 1)):
        load()


def test_the_cli_refuses_a_deeply_nested_study(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    _, path = toml_nested(tmp_path)
    before = _tree(tmp_path)
    assert main(["study", str(path), "--out", "out"]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [
        f"calibkit: error: {path}: expected valid TOML, got arrays or tables nested too deeply"
    ]
    assert _tree(tmp_path) == before
