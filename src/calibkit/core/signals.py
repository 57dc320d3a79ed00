"""Signals: Ctrl-C for the driver alone.

A terminal's Ctrl-C sends SIGINT to the whole foreground process group: the driver and
every worker process it started. A worker interrupted while it starts prints its own
traceback beside the driver's one line. Processes started inside :func:`sigint_blocked`
start with SIGINT blocked (a thread's signal mask survives fork and exec), so Ctrl-C
reaches the driver only, which stops its workers and says how to resume.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator


@contextlib.contextmanager
def sigint_blocked() -> Iterator[None]:
    """Block SIGINT in this thread for the block: processes started in it start with SIGINT
    blocked (a signal mask survives fork and exec), so a terminal's Ctrl-C reaches the driver
    only; one that comes meanwhile is delivered to the driver at the block's end.

    Examples
    --------
    >>> with sigint_blocked():
    ...     signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, [])
    True
    """
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)
