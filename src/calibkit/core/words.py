"""Counts in words: ``1 run``, ``2 runs``, ``1,000 resamples`` (issue #46, item 9: a report
said "1 runs").

>>> plural(1, "run"), plural(2, "run"), plural(1000, "resample"), plural(1, "class", "classes")
('1 run', '2 runs', '1,000 resamples', '1 class')
"""

from __future__ import annotations


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    """``n`` and ``noun``, in the plural (``nouns``, by default ``noun + "s"``) unless ``n``
    is 1; ``n`` with thousands separators."""
    return f"{n:,} {noun if n == 1 else (nouns or noun + 's')}"
