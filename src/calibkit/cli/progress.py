"""The command line's progress display: the library's log records drawn on stderr.

Library code logs (see :mod:`calibkit.core.progress`); :func:`show_progress` installs
:class:`ProgressDisplay` on the ``calibkit`` logger for the duration of a command. A plain
message becomes the line ``calibkit: <message>``; an epoch's summary (a record carrying a
:class:`~calibkit.core.progress.ProgressEvent` at ``INFO``) is written as it is. On a
terminal, the mini-batch records (``DEBUG``) redraw one bar line in place,
``<label> [#####.....] <text>  eta <s>s``, at most every 0.1 s; the next permanent line
replaces it. Off a terminal (a log file, CI) no bar is drawn, so logs stay readable.
``quiet`` drops every progress record, keeping the plain messages.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time
from collections.abc import Iterator
from typing import TextIO

from calibkit.core.progress import ProgressEvent, progress_of

WIDTH = 24
#: Seconds between two redraws of the bar.
REDRAW = 0.1


class ProgressDisplay(logging.Handler):
    """Writes log records to ``stream`` (default: the current ``sys.stderr``)."""

    def __init__(self, stream: TextIO | None = None, *, quiet: bool = False) -> None:
        super().__init__(logging.DEBUG)
        self.stream = stream
        self.quiet = quiet
        self._bar = ""  # label of the bar on screen ("" when none)
        self._timed = ""  # label of the loop timed since _start (kept across permanent lines)
        self._start = 0.0
        self._drawn = 0.0

    def _out(self) -> TextIO:
        return self.stream if self.stream is not None else sys.stderr

    def emit(self, record: logging.LogRecord) -> None:
        """Draw the bar (a step record on a terminal) or write one permanent line."""
        event = progress_of(record)
        if event is not None and self.quiet:
            return
        stream = self._out()
        if record.levelno < logging.INFO:
            if event is not None and stream.isatty():
                self._draw(stream, event)
            return
        line = record.getMessage() if event is not None else f"calibkit: {record.getMessage()}"
        stream.write(("\r\033[K" if self._bar else "") + line + "\n")
        stream.flush()
        self._bar = ""

    def _draw(self, stream: TextIO, event: ProgressEvent) -> None:
        now = time.perf_counter()
        if event.label != self._timed or event.step <= 0:
            self._timed, self._start = event.label, now
        if event.label != self._bar:
            self._bar, self._drawn = event.label, 0.0
        total = max(event.total, 1)
        done = min(max(event.step, 0), total)
        if now - self._drawn <= REDRAW and done < total:
            return
        self._drawn = now
        filled = round(WIDTH * done / total)
        bar = "#" * filled + "." * (WIDTH - filled)
        eta = (now - self._start) / done * (total - done) if done else 0.0
        stream.write(f"\r\033[K{event.label} [{bar}] {event.text}  eta {eta:4.0f}s ")
        stream.flush()


@contextlib.contextmanager
def show_progress(*, quiet: bool = False, stream: TextIO | None = None) -> Iterator[None]:
    """Display the ``calibkit`` logger's records while the block runs (see the module)."""
    logger = logging.getLogger("calibkit")
    handler = ProgressDisplay(stream, quiet=quiet)
    live = not quiet and handler._out().isatty()
    saved = logger.level, logger.propagate
    logger.setLevel(logging.DEBUG if live else logging.INFO)
    logger.propagate = False  # shown once, here, whatever the root logger does
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(saved[0])
        logger.propagate = saved[1]
