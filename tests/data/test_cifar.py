"""Tests for calibkit.data.cifar, on tiny synthetic archives with the official layout."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import logging
import os
import pickle
import tarfile
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from calibkit.core.errors import InputError
from calibkit.data import DATASETS, load_cifar, load_dataset
from calibkit.data import cifar as cifar_mod
from calibkit.data.cifar import ARCHIVES, read_cifar

C10_NAMES = "airplane automobile bird cat deer dog frog horse ship truck".split()  # noqa: SIM905


def _pixels(n: int, seed: int) -> np.ndarray:
    """``(n, 3072)`` uint8 rows: pixel (r, c) of channel k is ``(k * 64 + r + 2 * c + seed) % 256``,
    plus the image index, laid out channel-major like the official files."""
    k, r, c = np.meshgrid(np.arange(3), np.arange(32), np.arange(32), indexing="ij")
    base = (k * 64 + r + 2 * c + seed)[None] + np.arange(n)[:, None, None, None]
    return (base % 256).astype(np.uint8).reshape(n, 3072)


def _expected(rows: np.ndarray) -> np.ndarray:
    """The NHWC images the rows of :func:`_pixels` stand for, built pixel by pixel."""
    n = rows.shape[0]
    out = np.zeros((n, 32, 32, 3), dtype=np.uint8)
    for i in range(n):
        for k in range(3):
            out[i, :, :, k] = rows[i, k * 1024 : (k + 1) * 1024].reshape(32, 32)
    return out


def _pickle(obj: Any, old_numpy: bool = False) -> bytes:
    blob = pickle.dumps(obj, protocol=2)
    if old_numpy:  # the official files name numpy 1's module
        blob = blob.replace(b"numpy._core.multiarray", b"numpy.core.multiarray")
    return blob


def _py2_pickle(labels: list[int], data: np.ndarray) -> bytes:
    """A batch pickled the way Python 2 / numpy 1 wrote the official files (protocol 0,
    ``str`` keys and raw array bytes, ``numpy.core.multiarray._reconstruct``)."""
    raw = "".join(f"\\x{b:02x}" for b in data.tobytes()).encode()
    rows, cols = data.shape
    return (
        b"(dp0\nS'labels'\np1\n(lp2\n"
        + b"".join(b"I%d\na" % v for v in labels)
        + b"sS'data'\np3\ncnumpy.core.multiarray\n_reconstruct\np4\n(cnumpy\nndarray\np5\n"
        + b"(I0\ntp6\nS'b'\np7\ntp8\nRp9\n(I1\n(I%d\nI%d\ntp10\n" % (rows, cols)
        + b"cnumpy\ndtype\np11\n(S'u1'\np12\nI0\nI1\ntp13\nRp14\n"
        + b"(I3\nS'|'\np15\nNNNI-1\nI-1\nI0\ntp16\nbI00\nS'"
        + raw
        + b"'\np17\ntp18\nbs."
    )


def _tar(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, blob in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
    return path


def _cifar10_members(per_batch: int = 3) -> dict[str, bytes]:
    p = "cifar-10-batches-py/"
    members = {f"{p}readme.html": b"<html></html>"}
    for i, member in enumerate([*(f"data_batch_{j}" for j in range(1, 6)), "test_batch"]):
        batch = {
            b"batch_label": b"batch",
            b"labels": [(i + j) % 10 for j in range(per_batch)],
            b"data": _pixels(per_batch, seed=10 * i),
            b"filenames": [b"x.png"] * per_batch,
        }
        members[f"{p}{member}"] = _pickle(batch, old_numpy=True)
    meta = {b"num_cases_per_batch": per_batch, b"label_names": [n.encode() for n in C10_NAMES]}
    members[f"{p}batches.meta"] = _pickle(meta)
    return members


def _cifar100_members() -> dict[str, bytes]:
    p = "cifar-100-python/"
    members = {}
    for split, n in (("train", 7), ("test", 4)):
        fine = [(5 * j + 99) % 100 for j in range(n)]
        batch = {
            b"filenames": [b"x.png"] * n,
            b"batch_label": split.encode(),
            b"fine_labels": fine,
            b"coarse_labels": [f // 5 for f in fine],
            b"data": _pixels(n, seed=3),
        }
        members[f"{p}{split}"] = _pickle(batch)
    meta = {
        b"fine_label_names": [f"fine{i}".encode() for i in range(100)],
        b"coarse_label_names": [f"coarse{i}".encode() for i in range(20)],
    }
    members[f"{p}meta"] = _pickle(meta)
    members[f"{p}file.txt~"] = b""
    return members


def _md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def _official(monkeypatch: pytest.MonkeyPatch, name: str, path: Path, **changes: str) -> None:
    """Make the archive at ``path`` the "official" one for ``name`` (its MD5, a file URL)."""
    fields = {"md5": _md5(path), "url": path.as_uri(), **changes}
    monkeypatch.setitem(ARCHIVES, name, dataclasses.replace(ARCHIVES[name], **fields))


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only ``file://`` URLs may be opened: no test touches the network."""
    real = urllib.request.urlopen

    def local_only(url: str, *args: Any, **kwargs: Any) -> Any:
        assert url.startswith("file://"), f"a test tried to open {url}"
        return real(url, *args, **kwargs)

    monkeypatch.setattr(urllib.request, "urlopen", local_only)


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Cache and data folders inside tmp_path (never the user's); returns the data folder."""
    monkeypatch.setenv("CALIBKIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("CALIBKIT_DATA", raising=False)
    data = tmp_path / "data"
    data.mkdir()
    return data


@pytest.fixture
def cifar10(env: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = _tar(env / "cifar-10-python.tar.gz", _cifar10_members())
    _official(monkeypatch, "cifar10", path)
    return path


def test_cifar10_layout_labels_and_names(cifar10: Path) -> None:
    data = load_cifar("cifar10", cifar10.parent, download=False)
    train, test = data["train"], data["test"]
    assert train.images.shape == (15, 32, 32, 3)
    assert test.images.shape == (3, 32, 32, 3)
    assert train.images.dtype == np.uint8
    assert train.images.flags.c_contiguous
    assert train.classes == tuple(C10_NAMES)
    rows = np.concatenate([_pixels(3, seed=10 * i) for i in range(5)])
    np.testing.assert_array_equal(train.images, _expected(rows))
    np.testing.assert_array_equal(test.images, _expected(_pixels(3, seed=50)))
    # pixel (row 1, column 2) of image 0: red 0+1+4, green 64+1+4, blue 128+1+4
    assert train.images[0, 1, 2].tolist() == [5, 69, 133]
    assert train.labels.tolist() == [(i + j) % 10 for i in range(5) for j in range(3)]
    assert test.labels.tolist() == [5, 6, 7]


def test_cifar100_fine_labels(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _tar(env / "cifar-100-python.tar.gz", _cifar100_members())
    _official(monkeypatch, "cifar100", path)
    data = load_cifar("cifar100", env)
    assert data["train"].labels.tolist() == [(5 * j + 99) % 100 for j in range(7)]
    assert data["test"].classes[99] == "fine99"
    assert len(data["test"].classes) == 100
    np.testing.assert_array_equal(data["test"].images, _expected(_pixels(4, seed=3)))


def test_registry_and_class_subset(cifar10: Path) -> None:
    assert {"cifar10", "cifar100"} <= set(DATASETS.names())
    data = load_dataset("cifar10:cat, bird", cifar10.parent)
    assert data["train"].classes == ("cat", "bird")
    full = load_cifar("cifar10", cifar10.parent)["train"]
    keep = np.isin(full.labels, [2, 3])
    assert data["train"].labels.tolist() == [1 - (x == 3) for x in full.labels[keep]]
    np.testing.assert_array_equal(data["train"].images, full.images[keep])


def test_cache_hit_skips_the_archive(cifar10: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = load_cifar("cifar10", cifar10.parent)
    assert len(list((cifar10.parent.parent / "cache").glob("cifar10-*.npz"))) == 1

    def fail(*args: object, **kwargs: object) -> None:
        raise AssertionError("the tar was opened on a cache hit")

    monkeypatch.setattr(tarfile, "open", fail)
    second = load_cifar("cifar10", cifar10.parent)
    np.testing.assert_array_equal(first["train"].images, second["train"].images)
    np.testing.assert_array_equal(first["test"].labels, second["test"].labels)
    assert second["train"].classes == tuple(C10_NAMES)


def test_explicit_cache_dir(cifar10: Path, tmp_path: Path) -> None:
    load_cifar("cifar10", cifar10.parent, cache_dir=tmp_path / "elsewhere")
    assert len(list((tmp_path / "elsewhere").glob("*.npz"))) == 1


def test_md5_mismatch_names_file_and_both_sums(
    cifar10: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _official(monkeypatch, "cifar10", cifar10, md5="0" * 32)
    with pytest.raises(InputError, match="checksum mismatch") as info:
        load_cifar("cifar10", cifar10.parent)
    message = str(info.value)
    assert "0" * 32 in message
    assert _md5(cifar10) in message
    assert str(cifar10) in message


@pytest.mark.parametrize(
    "damage",
    [
        lambda blob: blob[: len(blob) // 2],  # truncated gzip
        lambda blob: b"not a tar at all",
    ],
)
def test_corrupt_archive(
    env: Path, monkeypatch: pytest.MonkeyPatch, damage: Callable[[bytes], bytes]
) -> None:
    good = _tar(env / "good.tar.gz", _cifar10_members())
    path = env / "cifar-10-python.tar.gz"
    path.write_bytes(damage(good.read_bytes()))
    _official(monkeypatch, "cifar10", path)
    with pytest.raises(InputError, match=r"cifar-10-python\.tar\.gz"):
        load_cifar("cifar10", env)


@pytest.mark.parametrize(
    ("member", "content", "message"),
    [
        ("data_batch_3", None, "lacks"),
        ("data_batch_2", {b"labels": [0, 1], b"data": np.zeros((3, 3072), np.uint8)}, "labels"),
        ("test_batch", {b"labels": [0], b"data": np.zeros((1, 3000), np.uint8)}, "3072"),
        ("test_batch", {b"labels": [0], b"data": np.zeros((1, 3072), np.int32)}, "uint8"),
        ("test_batch", {b"labels": [10], b"data": np.zeros((1, 3072), np.uint8)}, "0..9"),
        ("test_batch", {b"data": np.zeros((1, 3072), np.uint8)}, "contents"),
        ("batches.meta", [1, 2], "dicts"),
    ],
)
def test_bad_contents(
    env: Path, monkeypatch: pytest.MonkeyPatch, member: str, content: Any, message: str
) -> None:
    members = _cifar10_members()
    key = f"cifar-10-batches-py/{member}"
    if content is None:
        del members[key]
    else:
        members[key] = _pickle(content)
    path = _tar(env / "cifar-10-python.tar.gz", members)
    _official(monkeypatch, "cifar10", path)
    with pytest.raises(InputError, match=message) as info:
        load_cifar("cifar10", env)
    assert str(path) in str(info.value)


def test_malicious_pickle_is_refused(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    marker = env / "pwned"
    # protocol 0: GLOBAL os.system, MARK, UNICODE command, TUPLE, REDUCE, STOP
    evil = b"cos\nsystem\n(V" + f"touch {marker}".encode() + b"\ntR."
    members = _cifar10_members()
    members["cifar-10-batches-py/data_batch_1"] = evil
    path = _tar(env / "cifar-10-python.tar.gz", members)
    _official(monkeypatch, "cifar10", path)
    with pytest.raises(InputError, match=r"os\.system") as info:
        load_cifar("cifar10", env)
    assert "data_batch_1" in str(info.value)
    assert not marker.exists()


def test_python2_pickles(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    members = _cifar10_members()
    rows = _pixels(2, seed=7)
    members["cifar-10-batches-py/test_batch"] = _py2_pickle([9, 4], rows)
    path = _tar(env / "cifar-10-python.tar.gz", members)
    _official(monkeypatch, "cifar10", path)
    test = load_cifar("cifar10", env)["test"]
    assert test.labels.tolist() == [9, 4]
    np.testing.assert_array_equal(test.images, _expected(rows))


def test_read_cifar_without_checksum(env: Path) -> None:
    path = _tar(env / "any-name.tar.gz", _cifar10_members(per_batch=2))
    assert len(read_cifar("cifar10", path)["train"]) == 10


def test_unknown_name(env: Path) -> None:
    with pytest.raises(InputError, match="cifar10, cifar100"):
        load_cifar("cifar1000", env)


def test_download_success(
    env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    source = _tar(tmp_path / "server.tar.gz", _cifar10_members())
    _official(monkeypatch, "cifar10", source)
    target = env / "new" / "folder"
    with caplog.at_level(logging.INFO, logger="calibkit"):
        data = load_cifar("cifar10", target)
    assert len(data["test"]) == 3
    assert sorted(os.listdir(target)) == ["cifar-10-python.tar.gz"]
    assert (target / "cifar-10-python.tar.gz").read_bytes() == source.read_bytes()
    assert caplog.records[-1].getMessage().endswith("100%")  # progress is logged, not printed


def test_download_checksum_mismatch_leaves_nothing(
    env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = _tar(tmp_path / "server.tar.gz", _cifar10_members())
    _official(monkeypatch, "cifar10", source, md5="f" * 32)
    with pytest.raises(InputError, match="checksum mismatch") as info:
        load_cifar("cifar10", env)
    assert "f" * 32 in str(info.value)
    assert _md5(source) in str(info.value)
    assert os.listdir(env) == []


def test_download_failure(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def offline(*args: object, **kwargs: object) -> None:
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(cifar_mod.urllib.request, "urlopen", offline)
    with pytest.raises(InputError, match="no network") as info:
        load_cifar("cifar10", env)
    assert ARCHIVES["cifar10"].url in str(info.value)
    assert os.listdir(env) == []


def test_a_failed_download_into_a_missing_calibkit_data_leaves_no_folder(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 32: ``$CALIBKIT_DATA`` naming a folder that does not exist: the folders made to
    download into are removed again when the download fails (nothing else is)."""

    def offline(*args: object, **kwargs: object) -> None:
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(cifar_mod.urllib.request, "urlopen", offline)
    (env / "mine").mkdir()
    monkeypatch.setenv("CALIBKIT_DATA", str(env / "mine" / "typo" / "data"))
    with pytest.raises(InputError, match="no network"):
        load_dataset("cifar10:bird,cat")
    assert [p.name for p in env.rglob("*")] == ["mine"]  # the user's folder alone is left
    assert not (env.parent / "cache").exists()


def test_download_into_read_only_folder(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", str(env))

    monkeypatch.setattr(cifar_mod.tempfile, "mkstemp", refuse)
    with pytest.raises(InputError, match="writable"):
        load_cifar("cifar10", env)


def test_missing_archive_without_download(env: Path) -> None:
    with pytest.raises(InputError, match="download=True") as info:
        load_cifar("cifar10", env, download=False)
    assert str(env) in str(info.value)
    assert ARCHIVES["cifar10"].url in str(info.value)


def test_env_var_data_dir(cifar10: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CALIBKIT_DATA", str(cifar10.parent))
    assert len(load_cifar("cifar10", download=False)["train"]) == 15
    assert load_dataset("cifar10:truck")["test"].classes == ("truck",)


def test_default_data_dir_under_cache(env: Path, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="download=True") as info:
        load_cifar("cifar100", download=False)
    assert str(tmp_path / "cache" / "datasets") in str(info.value)
    assert not (tmp_path / "cache").exists()  # the folders made for it are removed again


def test_other_file_datasets_still_need_data_dir() -> None:
    with pytest.raises(InputError, match="data_dir"):
        load_dataset("cifar10-jpeg")
