"""Group labels (one per sample): checked once, then read as names and integer codes.

A group array is 1-D, one entry per sample, of integers or strings. A float array is
accepted when every value is a whole number (``.pt`` tensors may arrive as floats): each
value is read as the exact integer it holds, so distinct values are distinct groups, even
beyond int64; beyond the float's exact integer range (2**53 for float64) a
:class:`GroupIdWarning` says that distinct ids may have been rounded together before.
Refused with one :class:`~calibkit.core.errors.InputError` naming ``groups``: a wrong
length or shape, a missing value (NaN, None, an empty string), a fractional number, and a
group with fewer than :data:`MIN_GROUP_SIZE` members (no spread, no calibration error, no
bootstrap).

Names are strings (``3`` and ``"3"`` are the same group), sorted as numbers when every
name is an integer, else as strings; a sample's code is its group's position in the names.

>>> g = check_groups(["b", "a", "b", "a"], 4)
>>> g.names, g.codes.tolist(), g.sizes.tolist()
(['a', 'b'], [1, 0, 1, 0], [2, 2])
>>> check_groups([10, 2, 10, 2], 4).names  # integers sort as numbers
['2', '10']
>>> check_groups(["10", "2", "10", "2"], 4).names  # integer names too (a .csv column)
['2', '10']
>>> check_groups([0, 0, 1], 3)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
calibkit.core.errors.InputError: groups: expected at least 2 ..., got group '1' with 1 sample
"""

from __future__ import annotations

import re
import sys
import warnings
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from calibkit.core.errors import CalibkitWarning, InputError
from calibkit.core.words import plural

_INTEGER = re.compile(r"[+-]?\d+")
#: Fewest samples a group may hold.
MIN_GROUP_SIZE = 2
I64 = npt.NDArray[np.int64]


class GroupIdWarning(CalibkitWarning):
    """Float group ids too large for the float to hold every integer exactly: ids that
    differed may have been rounded to one value before calibkit read them.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as seen:
    ...     warnings.simplefilter("always")
    ...     g = check_groups([1e20, 2e20, 1e20, 2e20], 4)
    >>> g.names, [w.category.__name__ for w in seen]
    (['100000000000000000000', '200000000000000000000'], ['GroupIdWarning'])
    """


@dataclass(frozen=True)
class Groups:
    """Checked group labels: ``names`` (sorted strings), ``codes`` (each sample's position
    in ``names``, int64) and ``sizes`` (samples per group, int64)."""

    names: list[str]
    codes: I64
    sizes: I64

    def members(self, g: int) -> I64:
        """The sample indices of group ``g`` (ascending)."""
        return np.flatnonzero(self.codes == g)


def _as_array(groups: object, name: str) -> np.ndarray:
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(groups, torch.Tensor):
        return np.asarray(groups.detach().cpu().numpy())
    try:
        return np.asarray(groups)
    except (ValueError, TypeError) as exc:
        raise InputError(name, "a 1-D array of integers or strings", str(exc)) from None


def _values(groups: object, n_samples: int | None, name: str) -> np.ndarray:
    """The checked values: an int64 array (integer groups) or a str array."""
    arr = _as_array(groups, name)
    if arr.ndim != 1:
        raise InputError(name, "a 1-D array (one group per sample)", f"shape {arr.shape}")
    if n_samples is not None and arr.shape[0] != n_samples:
        raise InputError(name, f"{n_samples} entries (one per sample)", f"{arr.shape[0]}")
    kind = arr.dtype.kind
    if kind in "biu":
        if kind == "u" and arr.size and arr.max() > np.iinfo(np.int64).max:
            return np.array([str(v) for v in arr.tolist()])  # beyond int64: exact names
        return arr.astype(np.int64)
    if kind == "f":
        bad = ~np.isfinite(arr)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            got = f"a missing value ({arr[i].item()!r}) at index {i}"
            raise InputError(name, "a group (integer or string) for every sample", got)
        frac = arr != np.round(arr)
        if frac.any():
            i = int(np.flatnonzero(frac)[0])
            raise InputError(name, "integers or strings", f"{arr[i].item()!r} at index {i}")
        return _whole_floats(arr, name)
    if kind == "O":  # a list holding None or mixed types: one look per entry
        ok = np.array(
            [
                isinstance(v, str | int | np.integer) and not isinstance(v, bool)
                for v in arr.tolist()
            ],
            dtype=bool,
        )
        if not ok.all():
            i = int(np.flatnonzero(~ok)[0])
            got = "a missing value (None)" if arr[i] is None else repr(arr[i])
            raise InputError(
                name, "a group (integer or string) for every sample", f"{got} at index {i}"
            )
        arr = arr.astype(str)
    elif kind == "S":
        arr = np.char.decode(arr, "utf-8", "replace")
    elif kind != "U":
        raise InputError(name, "a 1-D array of integers or strings", f"dtype {arr.dtype}")
    text = np.char.strip(arr.astype(str))
    empty = (text == "") | (text == "nan") | (text == "None")
    if empty.any():
        i = int(np.flatnonzero(empty)[0])
        got = f"a missing value ({str(arr[i])!r}) at index {i}"
        raise InputError(name, "a group (integer or string) for every sample", got)
    return text


def _whole_floats(arr: np.ndarray, name: str) -> np.ndarray:
    """Whole floats as int64, or, beyond int64's range, as the exact integers they are
    (strings): distinct values stay distinct groups. Beyond the float's exact integer range
    (2**53 for float64), distinct integer ids may have been rounded to one float before they
    came here: a :class:`GroupIdWarning` says so."""
    exact = 2.0 ** (np.finfo(arr.dtype).nmant + 1)
    big = np.abs(arr) > exact
    if big.any():
        i = int(np.flatnonzero(big)[0])
        warnings.warn(
            f"{name}: float group ids beyond {exact:.0f} (such as {arr[i].item()!r} at index "
            f"{i}) are not exact: different integer ids may have been rounded to one float "
            "before calibkit read them; store group ids as integers or strings",
            GroupIdWarning,
            stacklevel=4,
        )
    if np.all(np.abs(arr) < 2.0**63):
        return arr.astype(np.int64)
    return np.array([str(int(v)) for v in arr.tolist()])  # exact: int() of a whole float


def group_names(groups: object, n_samples: int | None = None, name: str = "groups") -> np.ndarray:
    """Each sample's group name (a str array), after the checks of the module docstring
    but the group sizes (predict time: any group, even a new one of one sample).

    >>> group_names([1.0, 2.0]).tolist()
    ['1', '2']
    """
    return _values(groups, n_samples, name).astype(str)


def check_groups(
    groups: object, n_samples: int, name: str = "groups", *, min_groups: int = 1
) -> Groups:
    """The checked :class:`Groups` of ``n_samples`` samples (rules in the module docstring),
    at least ``min_groups`` of them (2 where groups are compared: a gap between a group and
    itself is no number to report).

    >>> check_groups(["Paris"] * 3, 3, min_groups=2)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calibkit.core.errors.InputError: groups: expected at least 2 distinct groups ..., got one group, 'Paris', for all 3 samples
    """  # noqa: E501
    values = _values(groups, n_samples, name)
    uniques, codes = np.unique(values, return_inverse=True)  # integers sort as numbers
    names = [str(u) for u in uniques.tolist()]
    if values.dtype.kind == "U" and all(_INTEGER.fullmatch(n) for n in names):
        order = sorted(range(len(names)), key=lambda i: (int(names[i]), names[i]))
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order))
        names, codes = [names[i] for i in order], rank[codes]  # as read from a file: "2" < "10"
    sizes = np.bincount(codes, minlength=len(names)).astype(np.int64)
    small = np.flatnonzero(sizes < MIN_GROUP_SIZE)
    if small.size:
        g = int(small[0])
        count = f"{sizes[g]} sample" + ("s" if sizes[g] != 1 else "")
        raise InputError(
            name,
            f"at least {MIN_GROUP_SIZE} samples in every group",
            f"group {names[g]!r} with {count}",
        )
    if len(names) < min_groups:
        one = len(names) == 1
        everyone = plural(n_samples, "sample")
        got = f"one group, {names[0]!r}, for all {everyone}" if one else f"{len(names)}"
        expected = f"at least {min_groups} distinct groups (the worst-group gap compares them)"
        raise InputError(name, expected, got)
    return Groups(names, codes.astype(np.int64).reshape(-1), sizes)


__all__ = ["MIN_GROUP_SIZE", "GroupIdWarning", "Groups", "check_groups", "group_names"]
