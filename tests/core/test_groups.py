"""Group labels as read from files: integer names order as numbers, plain messages."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from calibkit.core.errors import InputError
from calibkit.core.groups import GroupIdWarning, check_groups, group_names


def test_integer_names_read_as_strings_order_as_numbers() -> None:
    # a .csv column or load_groups gives strings: "2" before "10", as for integers
    g = check_groups(np.array(["10", "2", "10", "2", "-1", "-1"]), 6)
    assert g.names == ["-1", "2", "10"]
    assert g.codes.tolist() == [2, 1, 2, 1, 0, 0]
    assert g.sizes.tolist() == [2, 2, 2]
    assert g.members(2).tolist() == [0, 2]
    assert check_groups(["b", "10", "b", "10"], 4).names == ["10", "b"]  # not all integers


@pytest.mark.parametrize(
    ("groups", "got"),
    [([np.nan, 1.0, 1.0], "a missing value (nan) at index 0"), ([1.5, 1.0, 1.0], "1.5 at index 0")],
)
def test_float_values_named_plainly(groups: list[float], got: str) -> None:
    with pytest.raises(InputError) as info:
        check_groups(np.array(groups), 3)
    assert str(info.value).endswith(got)


@pytest.mark.parametrize(
    ("groups", "names"),
    [
        ([1e20, 2e20], ["100000000000000000000", "200000000000000000000"]),
        ([-1e300, 1e300], [str(int(-1e300)), str(int(1e300))]),
        ([2.0**63, 2.0**63 + 2048], ["9223372036854775808", "9223372036854777856"]),
    ],
)
def test_float_ids_beyond_int64_stay_distinct_and_warn(
    groups: list[float], names: list[str]
) -> None:
    values = np.array(groups * 2)
    with pytest.warns(GroupIdWarning, match=r"beyond 9007199254740992 \(such as"):
        g = check_groups(values, 4)
    assert g.names == names  # in numeric order
    assert g.codes.tolist() == [0, 1, 0, 1]
    with pytest.warns(GroupIdWarning):
        assert group_names(values).tolist() == names * 2


def test_uint64_ids_beyond_int64_stay_distinct() -> None:
    values = np.array([2**63, 2**63 + 1] * 2, dtype=np.uint64)
    g = check_groups(values, 4)
    assert g.names == ["9223372036854775808", "9223372036854775809"]
    assert g.sizes.tolist() == [2, 2]


def test_float_ids_within_the_exact_range_do_not_warn() -> None:
    values = np.array([2.0**53, -(2.0**53), 3.0] * 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_groups(values, 6).names == ["-9007199254740992", "3", "9007199254740992"]
    with pytest.warns(GroupIdWarning, match="beyond 16777216"):  # float32: 2**24
        check_groups(np.array([2.0**25, 1.0] * 2, dtype=np.float32), 4)
