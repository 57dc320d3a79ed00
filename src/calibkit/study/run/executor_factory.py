"""Which executor runs a study's units, by name (:func:`make_executor`).

The executors themselves are in :mod:`calibkit.study.run.executors` (serial, processes) and
:mod:`calibkit.study.run.ray_executor` (Ray, imported only when chosen); this module is above
both, so neither imports the other back.

>>> type(make_executor("processes", workers=2)).__name__
'ProcessExecutor'
>>> make_executor("threads")
Traceback (most recent call last):
...
calibkit.core.errors.InputError: executor: expected one of serial, processes, ray, got 'threads'
"""

from __future__ import annotations

from calibkit.core.errors import InputError
from calibkit.core.names import EXECUTORS
from calibkit.study.run.executors import Executor, ProcessExecutor, SerialExecutor


def make_executor(
    name: str = "serial",
    *,
    workers: int | None = None,
    address: str | None = None,
    verbose: bool = False,
) -> Executor:
    """The executor ``name`` (one of :data:`calibkit.core.names.EXECUTORS`); ``workers`` is
    for ``processes``, ``address`` and ``verbose`` (Ray's own logs) for ``ray``. Errors name
    these arguments (``executor`` for ``name``); the command line maps them to its flags."""
    if name not in EXECUTORS:
        raise InputError("executor", "one of " + ", ".join(EXECUTORS), repr(name))
    if workers is not None and name != "processes":
        raise InputError("workers", "the processes executor beside it", f"the {name} executor")
    if address is not None and name != "ray":
        raise InputError("address", "the ray executor beside it", f"the {name} executor")
    if name == "processes":
        return ProcessExecutor(workers)
    if name == "ray":
        from calibkit.study.run.ray_executor import RayExecutor

        return RayExecutor(address, verbose=verbose)
    return SerialExecutor()
