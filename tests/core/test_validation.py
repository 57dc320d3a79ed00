"""core.validation: one semantics for every parameter check, and parameter declarations."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from calibkit.core.errors import InputError, UnknownNameError
from calibkit.core.registry import Registry
from calibkit.core.validation import (
    DEVICE,
    FRACTION,
    AnyOf,
    Boolean,
    Choice,
    FilePath,
    InstanceOf,
    Integer,
    ListOf,
    Names,
    NoneOr,
    Real,
    Registered,
    String,
    Table,
    TupleOf,
    check_bool,
    check_choice,
    check_fraction,
    check_int,
    check_params,
    check_real,
)

NOT_NUMBERS = [True, False, np.bool_(True), "1", None, [1], 1 + 0j]


@given(st.integers(-(2**40), 2**40))
def test_integers_python_and_numpy_alike(n: int) -> None:
    assert check_int("n", n) == n
    out = check_int("n", np.int64(n))
    assert out == n
    assert type(out) is int


@given(st.integers(-100, 100), st.integers(-100, 100), st.integers(-100, 100))
def test_integer_bounds_are_inclusive(low: int, high: int, n: int) -> None:
    inside = low <= n <= high
    if inside:
        assert check_int("n", n, low, high) == n
    else:
        with pytest.raises(InputError, match=rf"^n: expected an integer in \[{low}, {high}\]"):
            check_int("n", n, low, high)


@pytest.mark.parametrize("value", [*NOT_NUMBERS, 1.0, np.float64(2.0)])
def test_integer_refuses_bools_floats_and_text(value: Any) -> None:
    with pytest.raises(InputError, match=r"^count: expected an integer >= 1, got "):
        check_int("count", value, low=1)


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_reals_python_and_numpy_alike(x: float) -> None:
    assert check_real("x", x) == x
    out = check_real("x", np.float64(x))
    assert out == x
    assert type(out) is float


@pytest.mark.parametrize(
    ("closed", "accepts_low", "accepts_high", "text"),
    [
        ("both", True, True, "[0, 1]"),
        ("left", True, False, "[0, 1)"),
        ("right", False, True, "(0, 1]"),
        ("neither", False, False, "(0, 1)"),
    ],
)
def test_real_ends(closed: Any, accepts_low: bool, accepts_high: bool, text: str) -> None:
    constraint = Real(0, 1, closed=closed)
    assert constraint.describe() == f"a finite number in {text}"
    assert constraint.check("x", 0.5) == 0.5
    for end, accepted in ((0, accepts_low), (1, accepts_high)):
        if accepted:
            assert constraint.check("x", end) == end
        else:
            with pytest.raises(InputError, match=r"^x: expected a finite number in"):
                constraint.check("x", end)


def test_one_sided_descriptions() -> None:
    assert Real(0.0).describe() == "a finite number >= 0"
    assert Real(0.0, closed="neither").describe() == "a finite number > 0"
    assert Real(high=1.0, closed="left").describe() == "a finite number < 1"
    assert Integer(low=0).describe() == "an integer >= 0"
    assert Integer().describe() == "an integer"


@pytest.mark.parametrize("value", [*NOT_NUMBERS, math.nan, math.inf, -math.inf, np.float32("nan")])
def test_real_refuses_bools_text_and_non_finite_values(value: Any) -> None:
    with pytest.raises(InputError, match=r"^x: expected a finite number, got "):
        check_real("x", value)


def test_non_finite_values_only_when_allowed() -> None:
    unbounded = Real(finite=False)
    assert unbounded.describe() == "a number"
    assert unbounded.check("x", math.inf) == math.inf
    assert math.isnan(unbounded.check("x", math.nan))
    assert Real(0.0, finite=False).check("x", math.inf) == math.inf
    with pytest.raises(InputError):
        Real(0.0, finite=False).check("x", math.nan)  # NaN is not >= 0


def test_fraction_is_zero_to_one_open_on_the_right() -> None:
    assert check_fraction("eps", 0) == 0.0
    assert check_fraction("eps", np.float32(0.5)) == 0.5
    with pytest.raises(InputError, match=r"^eps: expected a finite number in \[0, 1\), got 1\.0"):
        check_fraction("eps", 1.0)
    assert FRACTION.describe() == "a finite number in [0, 1)"


def test_choice_compares_type_and_value() -> None:
    assert check_choice("mode", "a", ("a", "b")) == "a"
    assert Choice(20, 32).check("depth", 20) == 20
    with pytest.raises(InputError, match=r"^depth: expected one of 20, 32, got True"):
        Choice(20, 32).check("depth", True)
    with pytest.raises(InputError, match=r"^mode: expected one of a, b, got \['a'\]"):
        check_choice("mode", ["a"], ("a", "b"))


def test_bool_and_string() -> None:
    assert check_bool("flag", np.bool_(True)) is True
    for value in (0, 1, "true", None):
        with pytest.raises(InputError, match=r"^flag: expected true or false"):
            check_bool("flag", value)
    assert Boolean().describe() == "true or false"
    assert String().check("s", "x") == "x"
    with pytest.raises(InputError, match=r"^s: expected a string, got 3"):
        String().check("s", 3)


def test_combinators() -> None:
    size = AnyOf(Integer(low=1), Real(0, 1, closed="neither"))
    assert size.check("size", 3) == 3
    assert size.check("size", 0.25) == 0.25
    for bad in (0, 1.5, True):
        with pytest.raises(InputError, match=r"^size: expected an integer >= 1 or a finite num"):
            size.check("size", bad)
    assert NoneOr(Integer()).check("n", None) is None
    assert NoneOr(Integer()).describe() == "an integer, or None"
    grid = ListOf(Real(0.0))
    assert grid.check("grid", [1, np.float64(2.5)]) == (1.0, 2.5)
    assert ListOf(String(), as_list=True).check("names", ("a",)) == ["a"]
    for bad in ([], "ab", [1, -1], 3):
        with pytest.raises(InputError, match=r"^grid: expected a non-empty list, each a finite"):
            grid.check("grid", bad)


def test_check_params_names_the_owner_or_the_parameter() -> None:
    declared = {"n_bins": Integer(low=1), "scheme": Choice("equal_width", "equal_mass")}
    assert check_params(declared, {"n_bins": np.int32(3)}, "histogram") == {"n_bins": 3}
    with pytest.raises(InputError, match=r"^histogram: expected parameters among n_bins, sche"):
        check_params(declared, {"bins": 3}, "histogram")
    with pytest.raises(InputError, match=r"^--param n_bins: expected an integer >= 1, got 0$"):
        check_params(declared, {"n_bins": 0}, "--param", prefix="--param ")
    with pytest.raises(InputError, match=r"^isotonic: expected no parameters, got 'x'"):
        check_params({}, {"x": 1}, "isotonic")


# ----- the constraints of settings' fields ----------------------------------------------------
def test_tuple_of_an_item_s_error_and_the_orders() -> None:
    item = Integer(1, 5)
    assert TupleOf(item).check("s", []) == ()
    assert TupleOf(item).check("s", np.array([2, 1])) == (2, 1)
    assert TupleOf(item, order="dedupe", single=True).check("s", 3) == (3,)
    assert TupleOf(item, order="dedupe").check("s", [3, 1, 3]) == (3, 1)
    with pytest.raises(InputError, match=r"^s: expected an integer in \[1, 5\], got 7$"):
        TupleOf(item).check("s", [1, 7])
    with pytest.raises(InputError, match=r"^s: expected a list of distinct values, .*\[1, 1\]$"):
        TupleOf(item, order="distinct").check("s", (1, 1))
    with pytest.raises(InputError, match=r"^s: expected a non-empty list, each an integer"):
        TupleOf(item, min_len=1).check("s", [])
    for wrong in ("12", 3, None):
        with pytest.raises(InputError, match=r"^s: expected a list"):
            TupleOf(item).check("s", wrong)


def test_names_parse_a_list_or_a_comma_separated_string() -> None:
    names = Names(lambda: ["fog", "snow", "frost"], what="corruptions", min_len=1)
    assert names.check("c", " snow,,fog , snow") == ("snow", "fog")
    assert names.check("c", ["frost"]) == ("frost",)
    with pytest.raises(InputError, match=r"^c: expected one or more corruptions"):
        names.check("c", "")
    with pytest.raises(InputError, match=r"^c: expected corruptions among fog, snow, frost, "):
        names.check("c", "fog,smog")
    with pytest.raises(InputError, match=r"^c: expected one or more corruptions .*got \[1\]"):
        names.check("c", [1])
    assert Names().check("c", ["anything"]) == ("anything",)


def test_registered_table_instance_and_device() -> None:
    colors: Registry[Any] = Registry("color")
    colors.register("red")(object)
    assert Registered("color", lambda: colors).check("paint", "red") == "red"
    with pytest.raises(UnknownNameError, match=r"^paint: expected one of red, got 'rde'"):
        Registered("color", lambda: colors).check("paint", "rde")
    with pytest.raises(InputError, match=r"^paint: expected the name of a registered color"):
        Registered("color", lambda: colors).check("paint", 3)
    assert Table("options").check("t", {"a": 1}) == {"a": 1}
    with pytest.raises(InputError, match=r"^t: expected a table of options"):
        Table("options").check("t", {1: 2})
    assert InstanceOf(int).check("i", 3) == 3
    with pytest.raises(InputError, match=r"^i: expected a int, got '3'"):
        InstanceOf(int).check("i", "3")
    assert [DEVICE.check("d", d) for d in ("auto", "cpu", "cuda", "cuda:12")]
    for wrong in ("gpu", "cuda:", "cuda:x", "cuda:١", "", None):
        with pytest.raises(InputError, match=r"^d: expected auto, cpu, cuda or cuda:N"):
            DEVICE.check("d", wrong)


def test_file_path(tmp_path: Any) -> None:
    there = tmp_path / "w.pt"
    there.write_bytes(b"")
    assert FilePath("checkpoint file", exists=True).check("w", there) is there
    assert FilePath("folder").check("d", "nowhere") == "nowhere"
    with pytest.raises(InputError, match=r"^w: expected an existing checkpoint file, got '.*x'"):
        FilePath("checkpoint file", exists=True).check("w", tmp_path / "x")
    for wrong in ("", b"w.pt", None, 3):
        with pytest.raises(InputError, match=r"^d: expected the path of a folder"):
            FilePath("folder").check("d", wrong)
