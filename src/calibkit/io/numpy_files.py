"""Reading ``.npy`` and ``.npz`` files that may be hostile: no pickles, no forged sizes.

Before any array is read, its header is checked against the bytes that hold it: an array
whose header promises more data than the file (or the zip member) has is a truncated or
forged file, and one larger than this machine's memory is refused rather than allocated.
A zip member is decompressed only up to the size its header promises, so a small archive
that expands to gigabytes (a decompression bomb) is refused before it is read. Pickled
(object) arrays are always refused. Every failure is an
:class:`~calibkit.core.errors.InputError` naming the file.
"""

from __future__ import annotations

import os
import zipfile
import zlib
from pathlib import Path
from typing import IO

import numpy as np

from calibkit.core.errors import InputError

NPY_MAGIC = b"\x93NUMPY"
ZIP_MAGIC = b"PK\x03\x04"
_ERRORS = (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error, KeyError)


def memory_bytes() -> int:
    """This machine's physical memory in bytes (a generous bound on one array)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return 1 << 40


def _check_head(p: Path, archive: bool) -> str:
    """Refuse a file whose first bytes are not those of a ``.npy`` (or ``.npz``) file."""
    with p.open("rb") as f:
        head = f.read(6)
    expected = "an .npz archive" if archive else "a .npy array file"
    if not head:
        raise InputError(str(p), expected, "an empty file")
    if head[:1] == b"\x80":
        raise InputError(str(p), expected, "a pickle where arrays were expected (refused)")
    if not archive and head.startswith(ZIP_MAGIC):
        raise InputError(str(p), expected, "a zip archive (an .npz? rename it)")
    if archive and head.startswith(NPY_MAGIC):
        raise InputError(str(p), "an .npz archive of named arrays", "a single .npy array")
    if not head.startswith(ZIP_MAGIC if archive else NPY_MAGIC):
        raise InputError(str(p), expected, "unrecognised content" + (" (corrupt?)" * archive))
    return expected


def _read_checked(f: IO[bytes], size: int, where: str, expected: str) -> np.ndarray:
    """Read one array from ``f`` (``size`` bytes in all), its header checked first."""
    version = np.lib.format.read_magic(f)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
    else:
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
    if dtype.hasobject:
        raise InputError(where, expected, "a pickle where arrays were expected (refused)")
    needed = int(np.prod(shape, dtype=object)) * dtype.itemsize
    if needed > memory_bytes():
        raise InputError(where, f"{expected} that fits in memory", f"an array of {needed:,} bytes")
    if needed > size - f.tell():
        have = f"{needed:,} bytes of data in its header, {size - f.tell():,} in the file"
        raise InputError(where, expected, f"a truncated or forged file ({have})")
    data = f.read(needed)
    if len(data) != needed:
        raise InputError(where, expected, "a truncated file")
    arr = np.frombuffer(data, dtype=dtype)
    return arr.reshape(shape, order="F" if fortran else "C").copy()


def _corrupt(p: Path, expected: str, exc: BaseException) -> InputError:
    return InputError(str(p), expected, f"a truncated or corrupt file ({type(exc).__name__})")


def load_npy(p: Path) -> np.ndarray:
    """The array of the ``.npy`` file ``p`` (see the module docstring)."""
    expected = _check_head(p, archive=False)
    try:
        with p.open("rb") as f:
            return _read_checked(f, p.stat().st_size, str(p), expected)
    except InputError:
        raise
    except _ERRORS as exc:
        raise _corrupt(p, expected, exc) from None


def load_npz(p: Path) -> dict[str, np.ndarray]:
    """The named arrays of the ``.npz`` archive ``p`` (see the module docstring)."""
    expected = _check_head(p, archive=True)
    arrays: dict[str, np.ndarray] = {}
    try:
        with zipfile.ZipFile(p) as archive:
            members = [i for i in archive.infolist() if i.filename.endswith(".npy")]
            total = sum(i.file_size for i in members)
            if total > memory_bytes():
                raise InputError(str(p), f"{expected} that fits in memory", f"{total:,} bytes")
            for info in members:
                with archive.open(info) as f:
                    arrays[info.filename[:-4]] = _read_checked(f, info.file_size, str(p), expected)
    except InputError:
        raise
    except _ERRORS as exc:
        raise _corrupt(p, expected, exc) from None
    return arrays
