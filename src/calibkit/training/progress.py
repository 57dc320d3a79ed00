"""Progress on stderr: a redrawn bar on a terminal, one line per step in a log file.

>>> import io
>>> stream = io.StringIO()
>>> bar = Progress("epoch 1/2", total=4, stream=stream)
>>> bar.update(4, "loss 0.50")
>>> bar.close("done")
>>> stream.getvalue()
'epoch 1/2 done\\n'
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

WIDTH = 24


class Progress:
    """A progress bar for ``total`` steps, drawn at most every 0.1 s on a terminal.

    Off a terminal (a log file, CI) nothing is drawn until :meth:`close` writes one line,
    so logs stay readable. ``enabled=False`` silences it entirely.
    """

    def __init__(
        self, label: str, total: int, *, stream: TextIO | None = None, enabled: bool = True
    ) -> None:
        self.label = label
        self.total = max(int(total), 1)
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.live = enabled and self.stream.isatty()
        self.done = 0
        self.start = time.perf_counter()
        self._drawn = 0.0

    def update(self, steps: int = 1, text: str = "") -> None:
        """Advance by ``steps`` and redraw (on a terminal) with ``text`` after the bar."""
        self.done = min(self.done + steps, self.total)
        now = time.perf_counter()
        if self.live and (now - self._drawn > 0.1 or self.done == self.total):
            self._drawn = now
            filled = round(WIDTH * self.done / self.total)
            bar = "#" * filled + "." * (WIDTH - filled)
            elapsed = now - self.start
            eta = elapsed / self.done * (self.total - self.done) if self.done else 0.0
            self.stream.write(f"\r{self.label} [{bar}] {text}  eta {eta:4.0f}s ")
            self.stream.flush()

    def close(self, text: str, *, keep: bool = True) -> None:
        """Finish with one permanent line ``label text`` (``keep=False``: just clear the bar)."""
        if not self.enabled:
            return
        prefix = "\r\033[K" if self.live else ""
        self.stream.write(f"{prefix}{self.label} {text}\n" if keep else prefix)
        self.stream.flush()
