"""Where a study's units of work run: in the driver, in worker processes, or on Ray.

Every executor takes units (:mod:`calibkit.study.units`) with the key of their prepared
data and hands back :class:`~calibkit.study.units.Finished` units one at a time; the driver
writes them (:mod:`calibkit.study.runner`). None schedules anything itself:

- ``serial`` runs each unit in the driver as it is submitted (the threads the command set);
- ``processes`` runs them in a :class:`~concurrent.futures.ProcessPoolExecutor` of
  ``workers`` spawned processes, each preparing its data once and using its share of the
  cores as threads; a worker that dies (even by SIGKILL) breaks the pool, which is replaced,
  and the units that were not finished are submitted again (at most :data:`ATTEMPTS` times);
- ``ray`` submits them as Ray tasks asking for their model's ``resources`` (threads = its
  CPUs; Ray retries a task whose worker died, :data:`ATTEMPTS` times in all), the prepared
  data put once in Ray's object store. Ray (``pip install 'calibkit[ray]'``) is imported only
  here, only when this executor is chosen. ``address`` joins a running cluster (checked to
  answer within :data:`CONNECT_SECONDS`); without it a local Ray instance sized to the
  machine is started (or the one this process already started is used). A model asking for
  more than any node has is refused before anything runs.
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import multiprocessing
from abc import ABC, abstractmethod
from collections.abc import Hashable
from typing import Any

from calibkit.core.errors import InputError
from calibkit.core.threads import available_cores
from calibkit.study.config import StudyConfig
from calibkit.study.prepare import StudyData, prepare_data
from calibkit.study.units import Finished, Unit, execute

#: Attempts of one unit before the study stops (a unit that kills its worker every time).
ATTEMPTS = 3
#: Seconds an ``--address`` has to answer.
CONNECT_SECONDS = 10.0
#: The executors by name.
EXECUTORS = ("serial", "processes", "ray")

log = logging.getLogger(__name__)


class Executor(ABC):
    """Runs units; :meth:`poll` and :meth:`wait` return them finished, one at a time (so
    that the driver holds one unit's artefacts at a time), in any order."""

    def start(self, cfg: StudyConfig) -> None:  # noqa: B027 (optional)
        """Get ready to run ``cfg``'s units; refuse a request it cannot meet."""

    def close(self) -> None:  # noqa: B027 (optional)
        """Release the workers."""

    @abstractmethod
    def submit(self, unit: Unit, key: Hashable, data: StudyData | None) -> None:
        """Run ``unit`` on the data of ``key`` (``data``: that data, if the driver has it)."""

    @abstractmethod
    def poll(self) -> Finished | None:
        """A finished unit if one is ready, else None (does not wait)."""

    @abstractmethod
    def wait(self) -> Finished:
        """The next unit to finish (waits for it)."""

    @abstractmethod
    def pending(self) -> int:
        """How many units are submitted and not yet returned."""

    @property
    def slots(self) -> int:
        """How many units can run at once (for the estimate of the time left)."""
        return 1


class SerialExecutor(Executor):
    """Each unit runs in the driver when it is submitted."""

    def __init__(self) -> None:
        self._finished: list[Finished] = []

    def submit(self, unit: Unit, key: Hashable, data: StudyData | None) -> None:
        if data is None:
            raise RuntimeError("the serial executor needs the data")  # a programming error
        self._finished.append(execute(unit, data))

    def poll(self) -> Finished | None:
        return self._finished.pop(0) if self._finished else None

    def wait(self) -> Finished:
        return self._finished.pop(0)

    def pending(self) -> int:
        return len(self._finished)


#: A worker process's prepared data: the last key it was asked for, and that data.
_WORKER_DATA: dict[Hashable, StudyData] = {}


def _process_task(unit: Unit, key: tuple[Any, int], threads: int) -> Finished:
    """A worker process's unit: its data prepared once per worker, ``threads`` threads."""
    if key not in _WORKER_DATA:
        _WORKER_DATA.clear()
        _WORKER_DATA[key] = prepare_data(*key)
    return execute(unit, _WORKER_DATA[key], threads)


class ProcessExecutor(Executor):
    """Units in ``workers`` spawned processes (see the module docstring)."""

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers or available_cores()
        self._threads = max(1, available_cores() // self.workers)
        self._pool: cf.ProcessPoolExecutor | None = None
        self._futures: dict[cf.Future[Finished], tuple[Unit, Hashable, int]] = {}
        self._ready: list[Finished] = []

    @property
    def slots(self) -> int:
        return self.workers

    def start(self, cfg: StudyConfig) -> None:
        context = multiprocessing.get_context("spawn")
        self._pool = cf.ProcessPoolExecutor(self.workers, mp_context=context)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def _submit(self, unit: Unit, key: Hashable, attempt: int) -> None:
        if self._pool is None:
            self.start(unit.cfg)
        assert self._pool is not None
        future = self._pool.submit(_process_task, unit, key, self._threads)  # type: ignore[arg-type]
        self._futures[future] = (unit, key, attempt)

    def submit(self, unit: Unit, key: Hashable, data: StudyData | None) -> None:
        self._submit(unit, key, 1)

    def _collect(self, futures: set[cf.Future[Finished]]) -> list[Finished]:
        finished, broken = [], []
        for future in futures:
            try:
                finished.append(future.result())
            except cf.process.BrokenProcessPool:
                broken.append(self._futures[future])
            del self._futures[future]
        if broken:  # a worker died: a new pool, and every unfinished unit again
            broken += list(self._futures.values())
            self._futures.clear()
            if self._pool is not None:
                self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
            for unit, key, attempt in broken:
                if attempt >= ATTEMPTS:
                    raise RuntimeError(f"{unit.what}: its worker died {attempt} times")
                log.warning("a worker died; %s is run again", unit.what)
                self._submit(unit, key, attempt + 1)
        return finished

    def poll(self) -> Finished | None:
        if not self._ready:
            self._ready += self._collect({f for f in self._futures if f.done()})
        return self._ready.pop(0) if self._ready else None

    def wait(self) -> Finished:
        while not self._ready:
            ready, _ = cf.wait(self._futures, return_when=cf.FIRST_COMPLETED)
            self._ready += self._collect(ready)
        return self._ready.pop(0)

    def pending(self) -> int:
        return len(self._futures) + len(self._ready)


def make_executor(
    name: str = "serial",
    *,
    workers: int | None = None,
    address: str | None = None,
    verbose: bool = False,
) -> Executor:
    """The executor ``name`` (one of :data:`EXECUTORS`); ``workers`` is for ``processes``,
    ``address`` and ``verbose`` (Ray's own logs) for ``ray``."""
    if name not in EXECUTORS:
        raise InputError("--executor", "one of " + ", ".join(EXECUTORS), repr(name))
    if workers is not None and name != "processes":
        raise InputError("--workers", "--executor processes beside it", f"--executor {name}")
    if address is not None and name != "ray":
        raise InputError("--address", "--executor ray beside it", f"--executor {name}")
    if name == "processes":
        return ProcessExecutor(workers)
    if name == "ray":
        from calibkit.study.ray_executor import RayExecutor

        return RayExecutor(address, verbose=verbose)
    return SerialExecutor()
