"""Ctrl-C for the driver alone: processes started inside ``sigint_blocked`` ignore it."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time

import pytest

from calibkit.core.signals import sigint_blocked


@pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="POSIX signal masks")
def test_a_process_started_inside_never_gets_sigint_and_the_driver_gets_it_after() -> None:
    got: list[int] = []
    before = signal.signal(signal.SIGINT, lambda *_: got.append(1))
    try:
        with sigint_blocked():
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(2)"])
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)
            time.sleep(0.05)
            assert got == []  # pending while blocked
        time.sleep(0.05)
        assert got == [1]  # delivered at the block's end
        time.sleep(0.5)
        child.send_signal(signal.SIGINT)  # a terminal's Ctrl-C reaching the child
        assert child.wait(timeout=30) == 0  # it slept on: SIGINT stays blocked there
    finally:
        signal.signal(signal.SIGINT, before)
