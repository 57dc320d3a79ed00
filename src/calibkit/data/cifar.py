"""CIFAR-10 and CIFAR-100 from the official "python version" archives.

The archive (``cifar-10-python.tar.gz`` or ``cifar-100-python.tar.gz``) is looked for in
the data folder (the ``data_dir`` argument, else ``$CALIBKIT_DATA``, else
``<default_cache_dir()>/datasets``) and downloaded there when absent: streamed to a
temporary file, MD5-checked on the way and renamed into place only if the checksum matches.
An existing archive is MD5-checked before it is read.

The batches are Python pickles. They are read straight from the tar (nothing is extracted)
with a restricted unpickler that rebuilds numpy arrays and refuses every other global, so a
tampered file cannot run code. Rows of 3,072 bytes (channel-major: 1,024 red, 1,024 green,
1,024 blue, each row-major 32x32) become ``(N, 32, 32, 3)`` uint8 images. CIFAR-100 uses the
100 fine labels and their names. The decoded arrays are cached as a ``.npz`` (named after
the archive's MD5 and a format version) in the cache folder, so later loads skip the tar.
"""

from __future__ import annotations

import codecs
import contextlib
import hashlib
import http.client
import logging
import os
import pickle
import tarfile
import tempfile
import urllib.error
import urllib.request
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from calibkit.core.errors import InputError
from calibkit.core.progress import ProgressEvent, report_step
from calibkit.core.validation import check_choice
from calibkit.data.arrays import ImageArrays
from calibkit.data.cache import load_splits, save_splits
from calibkit.data.image_folder import default_cache_dir
from calibkit.data.medmnist import file_md5

SPLITS = ("train", "test")
_CACHE_VERSION = "1"
_CHUNK = 1 << 20

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CifarArchive:
    """One official archive: where to get it, its MD5 and the members to read."""

    filename: str
    url: str
    md5: str
    train: tuple[str, ...]  # member paths inside the tar, in order
    test: tuple[str, ...]
    meta: str
    label_key: bytes  # key of the labels in each batch
    names_key: bytes  # key of the class names in the meta file


_C10 = "cifar-10-batches-py/"
_C100 = "cifar-100-python/"

#: The official archives, by dataset name.
ARCHIVES: dict[str, CifarArchive] = {
    "cifar10": CifarArchive(
        "cifar-10-python.tar.gz",
        "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",
        "c58f30108f718f92721af3b95e74349a",
        tuple(f"{_C10}data_batch_{i}" for i in range(1, 6)),
        (f"{_C10}test_batch",),
        f"{_C10}batches.meta",
        b"labels",
        b"label_names",
    ),
    "cifar100": CifarArchive(
        "cifar-100-python.tar.gz",
        "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz",
        "eb9058c3a382ffc7106e4002c42a8d85",
        (f"{_C100}train",),
        (f"{_C100}test",),
        f"{_C100}meta",
        b"fine_labels",
        b"fine_label_names",
    ),
}


def _reconstruct() -> Callable[..., Any]:
    """numpy's array-rebuilding function (its module moved between numpy 1 and 2)."""
    reduced = np.zeros(1).__reduce__()
    assert isinstance(reduced, tuple)
    func: Callable[..., Any] = reduced[0]
    return func


#: The only globals a CIFAR pickle may name: what rebuilds a numpy array and its bytes.
_ALLOWED: dict[tuple[str, str], Any] = {
    ("numpy.core.multiarray", "_reconstruct"): _reconstruct(),
    ("numpy._core.multiarray", "_reconstruct"): _reconstruct(),
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
    ("_codecs", "encode"): codecs.encode,
}


class _ArrayUnpickler(pickle.Unpickler):
    """An unpickler that refuses every global outside :data:`_ALLOWED`."""

    def __init__(self, file: IO[bytes], source: str) -> None:
        super().__init__(file, encoding="bytes")
        self.source = source

    def find_class(self, module: str, name: str, /) -> Any:
        try:
            return _ALLOWED[(module, name)]
        except KeyError:
            allowed = ", ".join(f"{m}.{n}" for m, n in _ALLOWED)
            raise InputError(
                "pickle global", f"one of {allowed}", f"{module}.{name} in {self.source}"
            ) from None


def default_data_dir() -> Path:
    """``$CALIBKIT_DATA`` if set, else ``<default_cache_dir()>/datasets``."""
    env = os.environ.get("CALIBKIT_DATA")
    return Path(env) if env else default_cache_dir() / "datasets"


def _spec(name: str) -> CifarArchive:
    return ARCHIVES[check_choice("name", name, tuple(ARCHIVES))]


def _make_dir(folder: Path, argument: str) -> Path:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(argument, "a folder that exists or can be created", f"{exc}") from None
    return folder


@contextlib.contextmanager
def _created_dir(folder: Path, argument: str) -> Iterator[Path]:
    """``folder``, made with its missing parents for the block; if the block fails, the
    folders made here are removed again (those still empty), so a failed download into a
    mistyped ``$CALIBKIT_DATA`` leaves nothing behind."""
    missing = [p for p in (folder, *folder.parents) if not p.exists()]  # deepest first
    _make_dir(folder, argument)
    try:
        yield folder
    except BaseException:
        for made in missing:
            with contextlib.suppress(OSError):
                made.rmdir()  # only an empty folder: never one something was put in
        raise


def _check_md5(what: str, expected: str, got: str) -> None:
    if got != expected:
        raise InputError("archive", f"MD5 {expected} (checksum mismatch)", f"{got} for {what}")


def _progress(name: str, done: int, total: int, last: int) -> int:
    """Report the percentage when it changed (a progress record); returns the percentage."""
    pct = 100 * done // total
    if pct != last:
        event = ProgressEvent(f"downloading {name}", pct, 100, f"{pct:3d}%")
        report_step(_log, event, logging.INFO)
    return pct


def _stream(response: IO[bytes], out: IO[bytes], name: str, total: int | None) -> str:
    """Copy ``response`` to ``out`` in chunks; returns the hex MD5 of what was copied."""
    digest = hashlib.md5(usedforsecurity=False)
    done, shown = 0, -1
    for chunk in iter(lambda: response.read(_CHUNK), b""):
        out.write(chunk)
        digest.update(chunk)
        done += len(chunk)
        if total:
            shown = _progress(name, done, total, shown)
    return digest.hexdigest()


def _download(spec: CifarArchive, path: Path) -> None:
    """Download ``spec.url`` to ``path`` (temporary file, MD5 check, rename)."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    except OSError as exc:
        raise InputError("data_dir", "a writable folder to download into", f"{exc}") from None
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(spec.url, timeout=60) as resp:
            length = resp.headers.get("Content-Length")
            got = _stream(resp, out, path.name, int(length) if length else None)
            out.flush()
            os.fsync(out.fileno())
        _check_md5(f"{path} downloaded from {spec.url} (not kept)", spec.md5, got)
        os.replace(tmp, path)
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        raise InputError(
            "data_dir",
            f"{path.name} downloaded from {spec.url} (or put it there by hand)",
            f"{path}: download failed ({exc})",
        ) from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def _archive(spec: CifarArchive, folder: Path, download: bool) -> Path:
    """The MD5-checked archive in ``folder``, downloaded first if absent and allowed."""
    path = folder / spec.filename
    if path.is_file():
        _check_md5(str(path), spec.md5, file_md5(path))
    elif download:
        _download(spec, path)
    else:
        raise InputError(
            "data_dir",
            f"a folder holding {spec.filename} (download=True fetches it from {spec.url})",
            f"{folder} without it",
        )
    return path


def _unpickle(file: IO[bytes], source: str) -> dict[bytes, Any]:
    obj = _ArrayUnpickler(file, source).load()
    if not isinstance(obj, dict):
        raise InputError("archive", "pickled dicts", f"{type(obj).__name__} in {source}")
    return obj


def _read_members(path: Path, wanted: set[str]) -> dict[str, dict[bytes, Any]]:
    """Unpickle the ``wanted`` members of the tar in one sequential pass."""
    found: dict[str, dict[bytes, Any]] = {}
    with tarfile.open(path, "r:gz") as tar:
        for member in tar:
            if member.name.startswith("/") or ".." in member.name.split("/"):
                where = f"{member.name!r} in {path}"
                raise InputError("archive", "members inside its folder", where)
            if member.name in wanted:
                if not member.isfile():  # a link or a folder where a batch file belongs
                    raise InputError("archive", "regular batch files", f"{member.name} in {path}")
                file = tar.extractfile(member)
                assert file is not None  # a regular file always has a reader
                found[member.name] = _unpickle(file, f"{path}:{member.name}")
    missing = sorted(wanted - set(found))
    if missing:
        raise InputError("archive", "the official CIFAR layout", f"{path} lacks {missing}")
    return found


def _images_labels(
    batch: dict[bytes, Any], label_key: bytes, source: str
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    """``(N, 32, 32, 3)`` images and ``(N,)`` labels of one batch, checked."""
    data = batch[b"data"]
    labels = np.asarray(batch[label_key], dtype=np.int64)
    if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.ndim != 2:
        raise InputError("archive", "uint8 data of shape (N, 3072)", f"something else in {source}")
    if data.shape[1] != 3072 or labels.shape != (data.shape[0],):
        raise InputError(
            "archive", "data (N, 3072) and N labels", f"{data.shape}, {labels.shape} in {source}"
        )
    images = data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    return np.ascontiguousarray(images), labels


def read_cifar(name: str, archive: str | os.PathLike[str]) -> dict[str, ImageArrays]:
    """Decode an official CIFAR archive (no checksum check, no cache)."""
    spec, path = _spec(name), Path(archive)
    try:
        batches = _read_members(path, {*spec.train, *spec.test, spec.meta})
        classes = tuple(c.decode("utf-8") for c in batches[spec.meta][spec.names_key])
        out: dict[str, ImageArrays] = {}
        for split, members in zip(SPLITS, (spec.train, spec.test), strict=True):
            parts = [_images_labels(batches[m], spec.label_key, f"{path}:{m}") for m in members]
            labels = np.concatenate([p[1] for p in parts])
            if labels.size and (labels.min() < 0 or labels.max() >= len(classes)):
                raise InputError("archive", f"labels in 0..{len(classes) - 1}", f"{path} {split}")
            out[split] = ImageArrays(np.concatenate([p[0] for p in parts]), labels, classes)
    except InputError:
        raise
    except (tarfile.TarError, EOFError, OSError, zlib.error, pickle.UnpicklingError) as exc:
        raise InputError("archive", "a readable CIFAR .tar.gz", f"{path} ({exc!r})") from None
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
        raise InputError("archive", "the official CIFAR contents", f"{path} ({exc!r})") from None
    return out


def load_cifar(
    name: str,
    data_dir: str | os.PathLike[str] | None = None,
    *,
    download: bool = True,
    cache_dir: str | os.PathLike[str] | None = None,
) -> dict[str, ImageArrays]:
    """``{"train", "test"}`` of ``"cifar10"`` or ``"cifar100"`` (fine labels).

    Reads the ``.npz`` cache in ``cache_dir`` (default :func:`default_cache_dir`) when there
    is one; otherwise finds (or, with ``download``, fetches) the MD5-checked archive in
    ``data_dir`` (default :func:`default_data_dir`), decodes it and writes the cache.
    """
    spec = _spec(name)
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    target = cache / f"{name}-{spec.md5[:12]}-v{_CACHE_VERSION}.npz"
    cached = load_splits(target, SPLITS)  # None: absent or unreadable (rebuilt below)
    if cached is not None:
        return cached
    where = Path(data_dir) if data_dir is not None else default_data_dir()
    with _created_dir(where, "data_dir") as folder:
        data = read_cifar(name, _archive(spec, folder, download))
    save_splits(_make_dir(cache, "cache_dir") / target.name, data)
    return data
