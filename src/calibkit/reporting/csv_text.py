"""CSV text as calibkit writes it: ``\\n`` line ends, numbers in full precision.

A number is written as Python's shortest round-trip ``repr`` of the float; a missing or
non-finite one as an empty field.

>>> print(csv_text(["method", "ece"], [["ts", csv_number(0.25)], ["hb", csv_number(None)]]))
method,ece
ts,0.25
hb,
<BLANKLINE>
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Sequence


def csv_number(x: float | None) -> str:
    """``x`` in full precision (``repr``), or ``""`` when it is missing, NaN or infinite."""
    return "" if x is None or not math.isfinite(x) else repr(float(x))


def csv_text(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A header and rows as CSV text, every line ending in ``\\n``."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buf.getvalue()
