"""Plain text for the terminal: the one table function, and a report's verdict.

Every table a command prints goes through :func:`text_table` (columns two spaces apart,
the first ``n_left`` left-aligned, numbers right-aligned, no trailing blanks);
:func:`table_text` prints a :class:`~calibkit.reporting.document.Table` of a report, so the
terminal and the report show the same cells.

>>> print(text_table(["method", "ECE %"], [["none", "4.10"], ["temperature", "0.92"]]))
method       ECE %
none          4.10
temperature   0.92
>>> from calibkit.reporting.document import Verdict
>>> print(verdict_text(Verdict("Use **temperature**.", "NLL 0.21 against 0.25.")))
Use temperature.
  NLL 0.21 against 0.25.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from calibkit.reporting.document import Table, Verdict

#: Inline Markdown a text may hold (``**bold**``, ```code```): dropped on the terminal.
_MARKUP = re.compile(r"\*\*(\S(?:.*?\S)?)\*\*|`([^`]+)`")


def plain(text: str) -> str:
    """``text`` without its inline Markdown (``**bold**`` and ```code``` marks).

    >>> plain("**Use ms_odir.** It beats `temperature`.")
    'Use ms_odir. It beats temperature.'
    """
    return _MARKUP.sub(lambda m: m.group(1) or m.group(2), text)


def text_table(header: Sequence[str], rows: Sequence[Sequence[str]], n_left: int = 1) -> str:
    """``header`` and ``rows`` as aligned plain text: the first ``n_left`` columns
    left-aligned, the others right-aligned, two spaces between columns."""
    cells = [list(header), *(list(r) for r in rows)]
    width = [max(len(r[i]) for r in cells if i < len(r)) for i in range(len(header))]
    lines = []
    for row in cells:
        parts = [
            c.ljust(w) if i < n_left else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, width, strict=False))
        ]
        lines.append("  ".join(parts).rstrip())
    return "\n".join(lines)


def table_text(table: Table) -> str:
    """A report's table as plain text (its title above; best / second-best marks dropped)."""
    body = text_table(table.header, [[c.text for c in r] for r in table.rows], table.n_left)
    return f"{table.title}:\n{body}" if table.title else body


def verdict_text(verdict: Verdict) -> str:
    """The verdict for the terminal: its headline, and the statistics indented below."""
    lines = [plain(verdict.headline)]
    if verdict.detail:
        lines.append("  " + plain(verdict.detail))
    return "\n".join(lines)


def without_interval() -> str:
    """The labels of the suite's metrics that print no interval (their entry's
    ``interval`` is ``"none"``), in words: what the "How to read this" texts name.

    >>> without_interval()
    'MCE, SCE, KS and MMCE'
    """
    from calibkit.metrics.info import METRICS, suite_names

    labels = [METRICS.get(n).label for n in suite_names() if METRICS.get(n).interval == "none"]
    return labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " and " + labels[-1]
