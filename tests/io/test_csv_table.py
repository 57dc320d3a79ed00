"""CSV files read by Python's csv module (calibkit.io.csv_table): standard quoting kept,
bad files refused naming the file, missing columns named with those present."""

from __future__ import annotations

from pathlib import Path

import pytest

from calibkit.core.errors import InputError
from calibkit.io.csv_table import listing, missing_name, read_csv_table


def _csv(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "t.csv"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, newline="")
    return path


def test_standard_quoting_as_pandas_writes_it(tmp_path: Path) -> None:
    text = (
        '\ufeffcity, label ,prob_0\r\n"Paris, FR",0,0.25\r\n\r\n"O""Hare, IL", 1,"0.5"\r\n'
        '"two\nlines",0,1e-3\r\n'
    )
    table = read_csv_table(_csv(tmp_path, text))
    assert table.names == ["city", "label", "prob_0"]
    assert [row[0] for row in table.rows] == ["Paris, FR", 'O"Hare, IL', "two\nlines"]
    assert table.numbers([1, 2]).tolist() == [[0.0, 0.25], [1.0, 0.5], [0.0, 0.001]]


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("", "a header row naming the columns, got an empty file"),
        ("a,b\n1,2\n3\n", r"expected 2 cells in every row .*, got 1 in data row 2"),
        ('a,b\n"1,2\n', "standard quoting, got unexpected end of data"),
        ('a,b\n"1"x,2\n', "standard quoting, got .*line 2"),
    ],
)
def test_bad_files_refused_naming_the_file(tmp_path: Path, text: str, match: str) -> None:
    with pytest.raises(InputError, match=match) as info:
        read_csv_table(_csv(tmp_path, text))
    assert info.value.argument.endswith("t.csv")


def test_binary_file_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="UTF-8"):
        read_csv_table(_csv(tmp_path, b"\xff\xfe\x00\x01"))


def test_cells_that_are_not_numbers_named_by_row_and_column(tmp_path: Path) -> None:
    table = read_csv_table(_csv(tmp_path, "a,b\n1,2\n3,\n"))
    assert table.numbers([0]).tolist() == [[1.0], [3.0]]
    with pytest.raises(InputError, match="got '' in data row 2, column 'b'"):
        table.numbers([0, 1])


def test_missing_or_repeated_column(tmp_path: Path) -> None:
    table = read_csv_table(_csv(tmp_path, "label,prob_0,prob_1,prob_2,site,site\n0,1,0,0,a,b\n"))
    with pytest.raises(InputError) as info:
        table.column("region", "--groups")
    assert str(info.value) == (
        "--groups: expected a column of t.csv (its columns: label, prob_0 .. prob_2, site, "
        "site), got 'region'"
    )
    with pytest.raises(InputError, match=r"one column named 'site' in t\.csv, got 2 of them"):
        table.column("site", "--groups")
    assert table.column("prob_1", "x") == 2


def test_listing_and_suggestion() -> None:
    assert listing(["logit_0", "logit_1", "logit_3", "y"]) == "logit_0 .. logit_1, logit_3, y"
    assert listing([f"x{i}" for i in range(14)]) == ", ".join(
        [f"x{i}" for i in range(12)] + ["and 2 more"]
    )
    err = missing_name("groups", "prob", Path("p.npz"), ["prob_0", "probe"], "array")
    assert str(err).endswith("got 'prob' (did you mean 'probe'?)")  # never a score column
    assert "it has no arrays" in str(missing_name("groups", "g", Path("e.npz"), [], "array"))


@pytest.mark.parametrize(
    ("text", "got"),
    [
        (
            "label;prob_0;prob_1\n0;0,9;0,1\n",
            "a header separated by semicolons ('label;prob_0;prob_1') and numbers with decimal"
            " commas ('0,9')",
        ),
        (
            "label;prob_0;prob_1\n0;0.9;0.1\n",
            "a header separated by semicolons ('label;prob_0;prob_1')",
        ),
        ("label\tprob_0\tprob_1\n0\t0.9\t0.1\n", r"a header separated by tabs ('label\tprob_0"),
        ("label,prob_0,prob_1\n0;0.9;0.1\n", "data row 1 separated by semicolons ('0;0.9;0.1')"),
    ],
)
def test_another_separator_is_named(tmp_path: Path, text: str, got: str) -> None:
    """Issue 42: a semicolon-separated file was refused without a word of its separator."""
    with pytest.raises(InputError) as info:
        read_csv_table(_csv(tmp_path, text))
    message = str(info.value)
    assert message.startswith(f"{tmp_path / 't.csv'}: expected a comma-separated file, got ")
    assert got in message, message
    assert message.endswith(
        ": save it comma-separated with decimal points (pandas: to_csv(sep=',', decimal='.'))"
    )
    if "decimal commas" not in got:
        assert "decimal commas" not in message


def test_decimal_commas_are_named(tmp_path: Path) -> None:
    """Issue 42: quoted ("0,9") or not (0,9 splits in two cells), a decimal comma is said."""
    table = read_csv_table(_csv(tmp_path, 'label,prob_0,prob_1\n0,"0,9","0,1"\n'))
    with pytest.raises(InputError) as info:
        table.numbers([0, 1, 2])
    assert str(info.value).endswith(
        "got '0,9' in data row 1, column 'prob_0' (a decimal comma: write decimal points, 0.9)"
    )
    with pytest.raises(InputError) as info:
        read_csv_table(_csv(tmp_path, "label,prob_0,prob_1\n0,0.9,0.1\n1,0,2,0,8\n"))
    assert "got 5 in data row 2: numbers with decimal commas, split at each comma?" in str(
        info.value
    )
    with pytest.raises(InputError) as info:  # a row too long of other cells: no guess
        read_csv_table(_csv(tmp_path, "a,b\n1,x,2\n"))
    assert str(info.value).endswith("got 3 in data row 1")


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("label,prob_0\n0,0.5\n,\n1,0.5\n", "line 3 (data row 2)"),
        ("label,prob_0,prob_1\n0,0.5,0.5\n , ,\n", "line 3 (data row 2)"),
        ('a,b\n"x\ny",1\n,\n', "line 4 (data row 2)"),  # the file's line, past a line break
        (",,\nlabel,prob_0,prob_1\n", "line 1:"),
    ],
)
def test_a_row_of_empty_cells_is_refused_naming_its_line(
    tmp_path: Path, text: str, where: str
) -> None:
    """Issue 42: a row of empty cells was dropped silently (blank lines still are skipped)."""
    with pytest.raises(InputError) as info:
        read_csv_table(_csv(tmp_path, text))
    message = str(info.value)
    assert message.startswith(f"{tmp_path / 't.csv'}: expected a value in some cell of every row")
    assert f" empty cells at {where}" in message, message
    assert message.endswith(": fill the row, or delete the line")
    assert read_csv_table(_csv(tmp_path, "a,b\n\n1,2\n  \n\n3,4\n")).rows == [
        ["1", "2"],
        ["3", "4"],
    ]
