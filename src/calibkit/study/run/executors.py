"""Where a study's units of work run: in the driver, in worker processes, or on Ray.

Every executor takes units (:mod:`calibkit.study.run.units`) with the key of their prepared
data and hands back :class:`~calibkit.study.run.units.Finished` units one at a time; the driver
writes them (:mod:`calibkit.study.run.runner`):

- ``serial`` runs each unit in the driver as it is submitted (the threads the command set);
- ``processes`` runs them in a :class:`~concurrent.futures.ProcessPoolExecutor` of
  ``workers`` spawned processes, each preparing its data once and using its share of the
  cores as threads; a worker that dies (even by SIGKILL) breaks the pool, which is replaced,
  and the units that were not finished are submitted again (at most :data:`ATTEMPTS` times).
  A worker dies with the driver, however the driver ends (:func:`_die_with`);
- ``ray`` submits them as Ray tasks asking for their model's ``resources`` (threads = its
  CPUs; Ray retries a task whose worker died, :data:`ATTEMPTS` times in all), the prepared
  data put once in Ray's object store. Ray (``pip install 'calibkit[ray]'``) is imported only
  here, only when this executor is chosen. ``address`` joins a running cluster (checked to
  answer within :data:`CONNECT_SECONDS`); without it a local Ray instance sized to the
  machine is started (or the one this process already started is used). A model asking for
  more than any node has is refused before anything runs. A local Ray started here is
  stopped when the driver ends, even by SIGKILL (a watcher process).

A unit that raises fails alone (:class:`UnitFailed`, raised by :meth:`Executor.poll` and
:meth:`Executor.wait`; only a dead worker is retried), except out of memory beside other
units: ``processes`` and ``ray`` run it again with half as many units at once, finally alone
(:class:`QueuedExecutor`). ``close(stop=True)`` (a study interrupted or failed) stops the
units still running instead of waiting for them.

Ctrl-C reaches the driver alone: worker processes (and a local Ray's) are started with
SIGINT blocked (:func:`~calibkit.core.signals.sigint_blocked`) and a worker ignores it, so a
terminal's Ctrl-C, sent to the whole process group, never prints a worker's traceback (a
worker importing torch when it came); the driver stops them and says how to resume.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import dataclasses
import gc
import logging
import multiprocessing
import os
from abc import ABC, abstractmethod
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

import torch

from calibkit.core.errors import CalibkitError, InputError
from calibkit.core.signals import die_with_parent, sigint_blocked
from calibkit.core.threads import available_cores
from calibkit.study.definition.config import StudyConfig
from calibkit.study.definition.prepare import StudyData, prepare_data
from calibkit.study.run.units import Finished, Unit, execute

#: Attempts of one unit before the study stops (a unit that kills its worker every time).
ATTEMPTS = 3
#: Seconds an ``--address`` has to answer.
CONNECT_SECONDS = 10.0
#: Test-only: the environment variable that makes a unit fail where it runs (see :func:`_fault`).
FAULT_VARIABLE = "CALIBKIT_TEST_FAULT"

log = logging.getLogger(__name__)


class Executor(ABC):
    """Runs units; :meth:`poll` and :meth:`wait` return them finished, one at a time (so
    that the driver holds one unit's artefacts at a time), in any order."""

    def start(self, cfg: StudyConfig) -> None:  # noqa: B027 (optional)
        """Get ready to run ``cfg``'s units; refuse a request it cannot meet."""

    def close(self, stop: bool = False) -> None:  # noqa: B027 (optional)
        """Release the workers (``stop``: the study was interrupted or failed; stop the
        units still running rather than wait for them)."""

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


def failure_message(exc: BaseException) -> str:
    """One line saying why a unit failed (an out of memory names what the runtime said)."""
    text = " ".join(str(exc).split())
    if isinstance(exc, InputError):
        return text
    if out_of_memory(exc):
        return f"out of memory ({type(exc).__name__}: {text})"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` is a unit running out of memory (host or device)."""
    return isinstance(exc, MemoryError | torch.cuda.OutOfMemoryError)


class UnitFailed(Exception):
    """Raised by :meth:`Executor.poll` and :meth:`Executor.wait`: ``unit`` failed with
    ``error`` (not retried, or retried as often as it may be)."""

    def __init__(self, unit: Unit, error: BaseException, why: str = "") -> None:
        self.unit, self.error = unit, error
        self.why = why or failure_message(error)
        super().__init__(f"{unit.what}: {self.why}")

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.unit, self.error, self.why), self.__dict__


class StudyFailed(CalibkitError):
    """Some units failed; the others were written, and the study resumes from them.

    ``failures`` holds each failed unit's ``what`` and why; ``status`` is the exit status:
    2 when every failure is an input error, else 1.

    >>> err = StudyFailed([("mlp seed 1", "RuntimeError: boom")], 1)
    >>> str(err).splitlines()[1]
    '  mlp seed 1: RuntimeError: boom'
    """

    def __init__(self, failures: list[tuple[str, str]], status: int) -> None:
        self.failures, self.status = list(failures), status
        lines = [f"  {what}: {why}" for what, why in self.failures]
        head = f"{len(lines)} unit(s) failed; the others are written, and running the study"
        super().__init__("\n".join([f"{head} again resumes it:", *lines]))

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.failures, self.status), self.__dict__


def _fault(unit: Unit) -> None:
    """Test-only fault injection: :data:`FAULT_VARIABLE` = ``WHAT=ERROR`` makes the unit
    ``WHAT`` raise ``ERROR`` (``RuntimeError``, ``MemoryError`` or ``OutOfMemoryError``)
    where it runs: the test suite fails a unit inside a real worker process with it."""
    what, _, error = os.environ.get(FAULT_VARIABLE, "").partition("=")
    if what == unit.what:
        kinds = {"MemoryError": MemoryError, "OutOfMemoryError": torch.cuda.OutOfMemoryError}
        kind = kinds.get(error, RuntimeError)
        raise kind(f"injected by {FAULT_VARIABLE} (tried to allocate 2.00 GiB)")


def run_unit(unit: Unit, data: StudyData, threads: int | None = None) -> Finished:
    """:func:`~calibkit.study.run.units.execute`, where every executor runs a unit. A unit out
    of memory gives back what it held (its tensors, and on a GPU the allocator's cache) before
    its error is raised, so that the units beside it and its retry can have it."""
    _fault(unit)
    try:
        return execute(unit, data, threads)
    except (MemoryError, torch.cuda.OutOfMemoryError) as exc:
        error = exc.with_traceback(None)  # its frames held the unit's tensors
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    raise error


class SerialExecutor(Executor):
    """Each unit runs in the driver when it is submitted."""

    def __init__(self) -> None:
        self._finished: list[Finished | UnitFailed] = []

    def submit(self, unit: Unit, key: Hashable, data: StudyData | None) -> None:
        if data is None:
            raise RuntimeError("the serial executor needs the data")  # a programming error
        try:
            self._finished.append(run_unit(unit, data))
        except Exception as exc:  # the unit fails; the others go on
            self._finished.append(UnitFailed(unit, exc))

    def poll(self) -> Finished | None:
        return _returned(self._finished.pop(0)) if self._finished else None

    def wait(self) -> Finished:
        return _returned(self._finished.pop(0))

    def pending(self) -> int:
        return len(self._finished)


def _returned(outcome: Finished | UnitFailed) -> Finished:
    if isinstance(outcome, UnitFailed):
        raise outcome
    return outcome


@dataclass(frozen=True)
class Job:
    """A unit submitted: its data's key, its attempt, and how many units could run at once
    when it was started (``limit``)."""

    unit: Unit
    key: Hashable
    attempt: int = 1
    limit: int = 0


class QueuedExecutor(Executor):
    """Units started as slots free up, at most :attr:`limit` at once. A unit that runs out
    of memory is run again with half as many units at once, finally alone; out of memory
    alone, it fails. Subclasses start a job (:meth:`_launch`), say which are done
    (:meth:`_done`) and give a done job's result or raise its error (:meth:`_outcome`)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._queue: list[Job] = []
        self._running: dict[Any, Job] = {}
        self._ready: list[Finished | UnitFailed] = []

    @abstractmethod
    def _launch(self, job: Job) -> Any:
        """Start ``job``; its handle."""

    @abstractmethod
    def _done(self, handles: list[Any], timeout: float | None) -> list[Any]:
        """Those of ``handles`` done (``timeout`` None: wait for one)."""

    @abstractmethod
    def _outcome(self, handle: Any) -> Finished:
        """A done job's result, or its error raised."""

    def _fill(self) -> None:
        while self._queue and len(self._running) < self.limit:
            job = dataclasses.replace(self._queue.pop(0), limit=self.limit)
            self._running[self._launch(job)] = job

    def submit(self, unit: Unit, key: Hashable, data: StudyData | None) -> None:
        self._queue.append(Job(unit, key))
        self._fill()

    def _failed(self, job: Job, exc: Exception) -> None:
        """A job's unit raised ``exc``: run it again with fewer units at once if it ran out
        of memory beside others, else it fails."""
        if not out_of_memory(exc):
            self._ready.append(UnitFailed(job.unit, exc))
        elif job.limit <= 1:
            why = failure_message(exc) + ", even running alone"
            self._ready.append(UnitFailed(job.unit, exc, why))
        else:
            self.limit = min(self.limit, max(1, job.limit // 2))
            log.warning(
                "%s: %s with %d units at once; it runs again with at most %d",
                job.unit.what,
                failure_message(exc),
                job.limit,
                self.limit,
            )
            self._queue.insert(0, dataclasses.replace(job, attempt=job.attempt + 1))

    def _collect(self, timeout: float | None) -> None:
        for handle in self._done(list(self._running), timeout):
            job = self._running.pop(handle)
            try:
                self._ready.append(self._outcome(handle))
            except Exception as exc:
                self._failed(job, exc)
        self._fill()

    def poll(self) -> Finished | None:
        if not self._ready and self._running:
            self._collect(0)
        return _returned(self._ready.pop(0)) if self._ready else None

    def wait(self) -> Finished:
        while not self._ready:
            self._collect(None)
        return _returned(self._ready.pop(0))

    def pending(self) -> int:
        return len(self._queue) + len(self._running) + len(self._ready)


#: A worker process's prepared data: the last key it was asked for, and that data.
_WORKER_DATA: dict[Hashable, StudyData] = {}
#: A worker's initializer: it dies with the driver, however the driver ends, and it ignores
#: Ctrl-C (the driver stops it: see the module docstring).
_die_with = die_with_parent


def _process_task(unit: Unit, key: tuple[Any, int], threads: int) -> Finished:
    """A worker process's unit: its data prepared once per worker, ``threads`` threads."""
    if key not in _WORKER_DATA:
        _WORKER_DATA.clear()
        _WORKER_DATA[key] = prepare_data(*key)
    return run_unit(unit, _WORKER_DATA[key], threads)


class ProcessExecutor(QueuedExecutor):
    """Units in ``workers`` spawned processes (see the module docstring)."""

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers or available_cores()
        super().__init__(self.workers)
        self._threads = max(1, available_cores() // self.workers)
        self._pool: cf.ProcessPoolExecutor | None = None

    @property
    def slots(self) -> int:
        return self.workers

    def start(self, cfg: StudyConfig) -> None:
        context = multiprocessing.get_context("spawn")
        self._pool = cf.ProcessPoolExecutor(
            self.workers, mp_context=context, initializer=_die_with, initargs=(os.getpid(),)
        )

    def close(self, stop: bool = False) -> None:
        if self._pool is not None:
            if stop:  # interrupted: the units running are not waited for
                processes = getattr(self._pool, "_processes", None) or {}
                for process in list(processes.values()):
                    with contextlib.suppress(OSError, ValueError):
                        process.kill()
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def _launch(self, job: Job) -> Any:
        if self._pool is None:
            self.start(job.unit.cfg)
        assert self._pool is not None
        with sigint_blocked():  # a worker the pool starts here ignores Ctrl-C from its start
            return self._pool.submit(_process_task, job.unit, job.key, self._threads)  # type: ignore[arg-type]

    def _done(self, handles: list[Any], timeout: float | None) -> list[Any]:
        done, _ = cf.wait(handles, timeout=timeout, return_when=cf.FIRST_COMPLETED)
        return list(done)

    def _outcome(self, handle: Any) -> Finished:
        finished: Finished = handle.result()
        return finished

    def _collect(self, timeout: float | None) -> None:
        broken = [f for f in self._done(list(self._running), timeout) if _broke(f)]
        if not broken:
            super()._collect(timeout)
            return
        # a worker died: a new pool, and every unit not finished again
        for future, job in list(self._running.items()):
            if future.done() and not _broke(future):
                continue  # finished before the pool broke: collected below
            del self._running[future]
            if job.attempt >= ATTEMPTS:
                exc = RuntimeError(f"its worker died {job.attempt} times")
                self._ready.append(UnitFailed(job.unit, exc, str(exc)))
                continue
            log.warning("a worker died; %s is run again", job.unit.what)
            self._queue.insert(0, dataclasses.replace(job, attempt=job.attempt + 1))
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
        self._pool = None
        super()._collect(0)


def _broke(future: cf.Future[Finished]) -> bool:
    """Whether ``future`` failed because its pool broke (a worker died)."""
    return future.done() and isinstance(future.exception(), cf.process.BrokenProcessPool)
