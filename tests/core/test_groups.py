"""Group labels as read from files: integer names order as numbers, plain messages."""

from __future__ import annotations

import numpy as np
import pytest

from calibkit.core.errors import InputError
from calibkit.core.groups import check_groups


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
