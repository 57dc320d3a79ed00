"""How many threads torch and the BLAS libraries use: set deliberately, never left to chance.

On a busy machine, a process that starts one thread per core competes with the other
processes for every core and runs several times slower (the digits study: 183 s with
torch's default threads on a loaded 2-core machine, 47 s with one thread). calibkit
therefore sets the thread count once per process, from ``--threads`` or from the cores
that are free when it starts (:func:`free_cores`).

>>> 1 <= free_cores() <= available_cores()
True
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

from calibkit.core.validation import Integer

#: A thread count (``--threads``): an integer in [1, 1024].
THREADS = Integer(1, 1024)


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def free_cores() -> int:
    """Available cores minus the machine's current load (1-minute average), at least 1."""
    cores = available_cores()
    try:
        busy = os.getloadavg()[0]
    except (AttributeError, OSError):  # no load average on this platform
        return cores
    return min(cores, max(1, round(cores - busy)))


#: The variables that thread pools loaded later read when they start.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def set_threads(n: int | None = None) -> int:
    """Use ``n`` threads (default :func:`free_cores`) in torch and the BLAS / OpenMP pools.

    Pools already loaded are set now (torch through ``torch.set_num_threads``, the BLAS
    libraries through threadpoolctl); pools loaded later read :data:`THREAD_VARIABLES`,
    which are set too, so that setting threads never imports torch by itself. Returns the
    number set; ``n`` must be in :data:`THREADS`.
    """
    n = THREADS.check("threads", free_cores() if n is None else n)
    from threadpoolctl import threadpool_limits

    os.environ.update(dict.fromkeys(THREAD_VARIABLES, str(n)))
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(n)
    threadpool_limits(limits=n)
    return n


@contextlib.contextmanager
def using_threads(n: int | None = None) -> Iterator[int]:
    """:func:`set_threads` for the ``with`` block; the previous settings come back after it
    (so that a program calling the command line in-process keeps its own)."""
    from threadpoolctl import threadpool_limits

    torch = sys.modules.get("torch")
    before = torch.get_num_threads() if torch is not None else None
    variables = {name: os.environ.get(name) for name in THREAD_VARIABLES}
    limits = threadpool_limits(limits=None)  # records the current limits
    try:
        yield set_threads(n)
    finally:
        for name, value in variables.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        if before is not None:
            sys.modules["torch"].set_num_threads(before)
        limits.restore_original_limits()
