"""Signals: Ctrl-C for the driver alone, SIGTERM unwound like it, workers that die with
their driver.

A terminal's Ctrl-C sends SIGINT to the whole foreground process group: the driver and
every worker process it started. A worker interrupted while it starts prints its own
traceback beside the driver's one line. Processes started inside :func:`sigint_blocked`
start with SIGINT blocked (a thread's signal mask survives fork and exec), so Ctrl-C
reaches the driver only, which stops its workers and says how to resume.

SIGTERM (``kill``, a scheduler's stop) would end the driver at once, saying nothing and
leaving its workers: inside :func:`sigterm_as_interrupt` it raises :class:`Terminated`, a
``KeyboardInterrupt``, so the driver unwinds as for Ctrl-C (its workers stopped, its
temporary files removed) and :func:`terminated` tells the two apart afterwards. SIGKILL
cannot be caught: a worker process started with :func:`die_with_parent` as its initializer
dies with its driver however the driver ends.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from types import FrameType

#: Linux's ``prctl`` option asking for a signal when the parent dies.
PR_SET_PDEATHSIG = 1
#: The exit status of a command ended by SIGTERM (128 + 15), and by Ctrl-C (128 + 2).
TERMINATED_STATUS = 128 + signal.SIGTERM
INTERRUPTED_STATUS = 128 + signal.SIGINT
#: How often a worker without ``prctl`` looks whether its parent is still alive (seconds).
PARENT_POLL_SECONDS = 0.5


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


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived (inside :func:`sigterm_as_interrupt`): unwound like Ctrl-C."""


#: The SIGTERMs received inside the current :func:`sigterm_as_interrupt` block (code that
#: the exception unwinds through may turn it into a plain ``KeyboardInterrupt``).
_RECEIVED: list[int] = []


def _terminate(signum: int, frame: FrameType | None) -> None:
    _RECEIVED.append(signum)
    raise Terminated


def terminated() -> bool:
    """Whether SIGTERM arrived in the current (or last) :func:`sigterm_as_interrupt` block."""
    return bool(_RECEIVED)


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM raises :class:`Terminated` during the block (in the main thread only; in
    another thread the block runs with SIGTERM as it was).

    Examples
    --------
    >>> with sigterm_as_interrupt():
    ...     signal.getsignal(signal.SIGTERM) is _terminate
    True
    >>> terminated()
    False
    """
    _RECEIVED.clear()
    try:
        before = signal.signal(signal.SIGTERM, _terminate)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


def die_with_parent(parent: int) -> None:
    """A worker process's initializer: it dies with its driver ``parent``, however the
    driver ends, even by SIGKILL (Linux: a parent-death SIGKILL asked of the kernel; and
    anywhere: a thread watching the parent's pid), and it ignores Ctrl-C (its driver stops
    it). Linux sends the signal when the thread that started the worker ends: start pools
    from a thread that lives as long as they do (the main thread).
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the driver died before the signal was asked for
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_SECONDS)
    os.kill(os.getpid(), signal.SIGKILL)
