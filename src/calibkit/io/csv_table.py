"""CSV files read by a real CSV parser: Python's :mod:`csv`, in standard quoting.

A quoted cell may hold commas, doubled quotes and line breaks, as pandas and spreadsheets
write them (``"Paris, FR"`` is one cell). :func:`read_csv_table` gives the header's column
names and the data rows as text; :class:`CsvTable` finds a column by name (a missing one is
refused with the columns present and the nearest name) and reads columns as numbers. Every
complaint is an :class:`~calibkit.core.errors.InputError` naming the file or the argument.

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as folder:
...     path = Path(folder) / "t.csv"
...     _ = path.write_text('label,prob_0,city\\n0,0.25,"Paris, FR"\\n1,0.75,"Paris, TX"\\n')
...     table = read_csv_table(path)
>>> table.names, [row[table.column("city", "groups")] for row in table.rows]
(['label', 'prob_0', 'city'], ['Paris, FR', 'Paris, TX'])
>>> table.numbers([0, 1]).tolist()
[[0.0, 0.25], [1.0, 0.75]]
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from calibkit.core.errors import InputError, nearest_name

#: A numbered column (``prob_3``): its stem and number; runs of them are listed as one range.
NUMBERED = re.compile(r"(.+)_(\d+)")
#: Most entries a listing of names shows (the rest counted).
LISTED = 12
#: A number written with a decimal comma (``0,9``, ``-1,5e-3``).
DECIMAL_COMMA = re.compile(r"[+-]?\d*,\d+(?:[eE][+-]?\d+)?")
#: An integer cell (the pieces of numbers with decimal commas split at each comma).
_INTEGER = re.compile(r"[+-]?\d+(?:[eE][+-]?\d+)?")
#: Separators of other CSV dialects, in words (a spreadsheet of a decimal-comma locale
#: writes semicolons).
OTHER_SEPARATORS = {";": "semicolons", "\t": "tabs", "|": "vertical bars"}
#: How a file of another dialect is made comma-separated.
WRITE_COMMAS = "save it comma-separated with decimal points (pandas: to_csv(sep=',', decimal='.'))"


@dataclass(frozen=True)
class CsvTable:
    """A CSV file's header and data rows, as text.

    Attributes
    ----------
    path : Path
        The file (named in every complaint).
    names : list of str
        The header's column names, stripped of surrounding spaces.
    rows : list of list of str
        The data rows (blank lines skipped), each as long as ``names``.

    Examples
    --------
    >>> table = CsvTable(Path("t.csv"), ["label", "prob_0"], [["1", "0.5"]])
    >>> table.column("prob_0", "scores"), table.numbers([1]).tolist()
    (1, [[0.5]])
    """

    path: Path
    names: list[str]
    rows: list[list[str]]

    def column(self, key: str, argument: str) -> int:
        """The position of the one column named ``key``.

        Parameters
        ----------
        key : str
            The column's name.
        argument : str
            The argument that named it, blamed when the header has no such column (the
            message lists the columns present and suggests the nearest) or several.

        Returns
        -------
        int
            The column's position in :attr:`names` (and in each row).

        Examples
        --------
        >>> table = CsvTable(Path("t.csv"), ["label", "prob_0", "prob_1", "site"], [])
        >>> table.column("site", "groups")
        3
        >>> table.column("stie", "groups")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        calibkit.core.errors.InputError: groups: expected a column of t.csv (its columns: label, prob_0 .. prob_1, site), got 'stie' (did you mean 'site'?)
        """  # noqa: E501
        count = self.names.count(key)
        if count == 0:
            raise missing_name(argument, key, self.path, self.names, "column")
        if count > 1:
            got = f"{count} of them"
            raise InputError(argument, f"one column named {key!r} in {self.path.name}", got)
        return self.names.index(key)

    def numbers(self, cols: list[int]) -> np.ndarray:
        """The cells of the columns at ``cols`` as float64.

        Parameters
        ----------
        cols : list of int
            Column positions, in the order wanted.

        Returns
        -------
        ndarray of shape (len(rows), len(cols))
            The numbers; a cell that is not one is refused, naming its row and column.

        Examples
        --------
        >>> table = CsvTable(Path("t.csv"), ["label", "prob_0"], [["1", "0.5"], ["0", "x"]])
        >>> table.numbers([1])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        calibkit.core.errors.InputError: t.csv: expected numbers in every cell, got 'x' in data row 2, column 'prob_0'
        """  # noqa: E501
        every = sorted(cols) == list(range(len(self.names)))  # no copy of the rows then
        picked = self.rows if every else [[row[c] for c in cols] for row in self.rows]
        try:
            data = np.array(picked, dtype=np.float64).reshape(-1, len(cols))
        except ValueError:
            pass
        else:
            return data[:, cols] if every else data
        for i, row in enumerate(self.rows, start=1):
            for c in cols:
                if not _is_number(row[c]):
                    got = f"{row[c]!r} in data row {i}, column {self.names[c]!r}"
                    if DECIMAL_COMMA.fullmatch(row[c].strip()):
                        point = row[c].strip().replace(",", ".")
                        got += f" (a decimal comma: write decimal points, {point})"
                    raise InputError(str(self.path), "numbers in every cell", got)
        raise AssertionError("a cell failed to convert but none fails alone")  # pragma: no cover


def _is_number(cell: str) -> bool:
    try:
        np.array([cell], dtype=np.float64)  # the conversion of CsvTable.numbers
    except ValueError:
        return False
    return True


def read_csv_table(path: str | Path) -> CsvTable:
    """Read a CSV file with a header row, in standard quoting (Python's :mod:`csv`).

    Parameters
    ----------
    path : str or Path
        A UTF-8 text file (a byte-order mark is skipped), comma-separated; spaces after a
        comma are skipped, blank lines too.

    Returns
    -------
    CsvTable
        The header's names and the data rows; a row of another length than the header, a
        row of empty cells (``,,``: a line that says nothing is no sample), bad quoting (a
        quote inside an unquoted cell, an unclosed quote) or binary content is refused,
        naming the file (and the line); so is a file of another dialect (semicolons, tabs,
        decimal commas), named.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = Path(folder) / "t.csv"
    ...     _ = path.write_text('a,b\\n"x, y",2\\n\\n3,4\\n')
    ...     read_csv_table(path).rows
    [['x, y', '2'], ['3', '4']]
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(str(p), "a UTF-8 text CSV file", "binary or non-UTF-8 content") from None
    reader = csv.reader(io.StringIO(text, newline=""), skipinitialspace=True, strict=True)
    rows: list[list[str]] = []
    try:
        for row in reader:
            if any(cell.strip() for cell in row):
                rows.append(row)
            elif len(row) > 1:  # not a blank line: a row whose every cell is empty
                where = f"line {reader.line_num}" + (f" (data row {len(rows)})" if rows else "")
                got = f"{len(row)} empty cells at {where}: fill the row, or delete the line"
                raise InputError(str(p), "a value in some cell of every row", got)
    except csv.Error as exc:
        got = f"{exc} (line {reader.line_num})"
        raise InputError(str(p), "a CSV file in standard quoting", got) from None
    if not rows:
        raise InputError(str(p), "a header row naming the columns", "an empty file")
    _check_separator(p, rows[0], rows[1:2], "a header")
    names = [cell.strip() for cell in rows[0]]
    for i, row in enumerate(rows[1:], start=1):
        if len(row) != len(names):
            expected = f"{len(names)} cells in every row (the number of columns of the header)"
            _check_separator(p, row, [row], f"data row {i}")
            got = f"{len(row)} in data row {i}"
            if len(row) > len(names) and all(_INTEGER.fullmatch(c.strip()) for c in row):
                got += f": numbers with decimal commas, split at each comma? {WRITE_COMMAS}"
            raise InputError(str(p), expected, got)
    return CsvTable(p, names, rows[1:])


def _check_separator(p: Path, row: list[str], data: list[list[str]], what: str) -> None:
    """Refuse ``row`` (``what``: the header, or a data row) if it is one cell holding another
    dialect's separator, saying which, and whether ``data`` (rows as the comma-separated
    reader split them) holds decimal commas."""
    if len(row) != 1:
        return
    for sep, words in OTHER_SEPARATORS.items():
        if sep in row[0]:
            cells = [c.strip() for r in data for c in ",".join(r).split(sep)]
            commas = [c for c in cells if DECIMAL_COMMA.fullmatch(c) and "," in c]
            got = f"{what} separated by {words} ({row[0][:60]!r})"
            if commas:
                got += f" and numbers with decimal commas ({commas[0]!r})"
            raise InputError(str(p), "a comma-separated file", f"{got}: {WRITE_COMMAS}")


def missing_name(
    argument: str, key: str, path: Path, present: list[str], what: str = "column"
) -> InputError:
    """The complaint about ``argument`` naming a column (or array) ``key`` that ``path`` lacks.

    Parameters
    ----------
    argument : str
        The argument blamed.
    key : str
        The name asked for.
    path : Path
        The file (its name in the message).
    present : list of str
        The names the file has, listed in the message (numbered runs as one range).
    what : str
        What the names are: ``"column"`` or ``"array"``.

    Returns
    -------
    InputError
        Its message names ``key``, lists ``present`` and suggests the nearest of them that
        is not numbered.

    Examples
    --------
    >>> print(missing_name("groups", "regoin", Path("p.npz"), ["labels", "region"], "array"))
    groups: expected an array of p.npz (its arrays: labels, region), got 'regoin' (did you mean 'region'?)
    """  # noqa: E501
    near = nearest_name(key, [n for n in present if not NUMBERED.fullmatch(n)])
    got = f"{key!r}" + (f" (did you mean {near!r}?)" if near else "")
    has = f"its {what}s: {listing(present)}" if present else f"it has no {what}s"
    article = "an" if what[:1] in "aeiou" else "a"
    return InputError(argument, f"{article} {what} of {path.name} ({has})", got)


def listing(names: list[str], most: int = LISTED) -> str:
    """Names in order, each run of numbered names (``prob_0``, ``prob_1``, ...) as a range.

    Parameters
    ----------
    names : list of str
        The names.
    most : int
        Most entries shown; the rest are counted.

    Returns
    -------
    str
        The names, comma-separated.

    Examples
    --------
    >>> listing(["label", "prob_0", "prob_1", "prob_2", "site"])
    'label, prob_0 .. prob_2, site'
    >>> listing([f"c{i}" for i in range(5)], most=2)
    'c0, c1, and 3 more'
    """
    shown: list[str] = []
    i = 0
    while i < len(names):
        j = i
        m = NUMBERED.fullmatch(names[i])
        if m:
            stem, start = m[1], int(m[2])
            while j + 1 < len(names) and names[j + 1] == f"{stem}_{start + j + 1 - i}":
                j += 1
        shown.append(names[i] if j == i else f"{names[i]} .. {names[j]}")
        i = j + 1
    if len(shown) > most:
        shown = [*shown[:most], f"and {len(shown) - most} more"]
    return ", ".join(shown)


__all__ = ["NUMBERED", "CsvTable", "listing", "missing_name", "read_csv_table"]
