"""The ``ray`` executor: a study's units as Ray tasks (see :mod:`calibkit.study.run.executors`).

Ray is imported here only, when this executor is made; without it the error says how to
install it. Before any task runs, an ``address`` must answer within
:data:`~calibkit.study.run.executors.CONNECT_SECONDS` and every model's ``resources`` must fit
on one node of the cluster (:func:`check_resources`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from calibkit.core.errors import InputError
from calibkit.study.definition.config import Resources, StudyConfig
from calibkit.study.definition.prepare import StudyData
from calibkit.study.run.executors import ATTEMPTS, CONNECT_SECONDS, Job, QueuedExecutor, run_unit
from calibkit.study.run.units import Finished, Unit, resources

#: How to get Ray.
INSTALL = "pip install 'calibkit[ray]'"


def _ray_task(unit: Unit, data: StudyData, threads: int) -> Finished:
    """A unit in a Ray worker, under as many threads as the CPUs it was given."""
    return run_unit(unit, data, threads)


#: The HTTP/2 connection preface and an empty SETTINGS frame: what a gRPC client (Ray's
#: head and client server speak gRPC) sends first; the server answers with a SETTINGS frame.
_H2_HELLO = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])


def check_reachable(address: str, timeout: float = CONNECT_SECONDS) -> None:
    """Refuse an ``--address`` (``host:port``, ``ray://host:port``) that does not answer
    as a gRPC server (what a Ray head is) within ``timeout`` seconds; ``auto`` (Ray's own
    discovery) is left to Ray. Any other service is refused here: Ray itself would retry it
    for minutes."""
    if address == "auto":
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise InputError("address", "HOST:PORT of a Ray head (ray start --head)", address)
    expected = f"a Ray head answering within {timeout:g} s (ray start --head)"
    deadline = time.monotonic() + timeout
    try:
        with socket.create_connection((host, int(port)), timeout=timeout) as conn:
            conn.sendall(_H2_HELLO)
            reply = b""
            while len(reply) < 9:
                conn.settimeout(max(0.01, deadline - time.monotonic()))
                chunk = conn.recv(9 - len(reply))
                if not chunk:
                    break
                reply += chunk
    except OSError as exc:
        raise InputError("address", expected, f"{address}: {exc}") from None
    if len(reply) < 9 or reply[3] != 4:  # not an HTTP/2 SETTINGS frame
        said = f" (it said {reply[:9]!r})" if reply else " (it closed the connection)"
        raise InputError("address", expected, f"{address}: not a Ray head{said}")


def check_resources(cfg: StudyConfig, nodes: Sequence[Mapping[str, Any]]) -> None:
    """Refuse, naming the model and its request, a model no live node of ``nodes`` (as
    ``ray.nodes()`` lists them) has the CPUs and GPUs for."""
    alive = [n.get("Resources", {}) for n in nodes if n.get("Alive", False)]
    for spec in cfg.models:
        r = spec.resources or Resources()
        if not any(n.get("CPU", 0) >= r.cpus and n.get("GPU", 0) >= r.gpus for n in alive):
            cpus = max((n.get("CPU", 0) for n in alive), default=0)
            gpus = max((n.get("GPU", 0) for n in alive), default=0)
            raise InputError(
                f"models.{spec.label}.resources",
                f"a request one node can meet (the largest has {cpus:g} CPUs, {gpus:g} GPUs)",
                f"cpus = {r.cpus}, gpus = {r.gpus}",
            )


#: The watcher of a local Ray (see :func:`watch_local_ray`): argv[1] is the driver's pid.
_WATCHER = """
import os, signal, sys, time
driver, me, seen = int(sys.argv[1]), os.getpid(), {}
def stat(pid):
    try:
        fields = open(f"/proc/{pid}/stat").read().rpartition(")")[2].split()
    except OSError:
        return None
    return fields[0], int(fields[1]), fields[19]  # state, parent, start time
def ray(pid):
    try:
        return b"ray" in open(f"/proc/{pid}/cmdline", "rb").read()
    except OSError:
        return False
while True:
    table = {int(p): stat(p) for p in os.listdir("/proc") if p.isdigit()}
    if table.get(driver) is None or table[driver][0] in "ZX":
        break
    family = {driver}
    for _ in range(8):
        family |= {p for p, s in table.items() if s and s[1] in family}
    for pid in family - {driver, me}:
        if table[pid] and pid not in seen and ray(pid):
            seen[pid] = table[pid][2]
    time.sleep(0.5)
for pid, start in seen.items():
    now = stat(pid)
    if now and now[2] == start:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
"""


def watch_local_ray() -> subprocess.Popen[bytes] | None:
    """A small process that stops the local Ray this process started if this process ends
    without stopping it (SIGKILL): it notes Ray's processes among this process's descendants
    as they start, and kills those still running once this process is gone. Linux only
    (it reads ``/proc``); elsewhere None."""
    if not sys.platform.startswith("linux"):
        return None
    command = [sys.executable, "-c", _WATCHER, str(os.getpid())]
    return subprocess.Popen(command, start_new_session=True, stdin=subprocess.DEVNULL)


class RayExecutor(QueuedExecutor):
    """Units as Ray tasks, the prepared data put once per dataset in the object store."""

    def __init__(self, address: str | None = None, *, verbose: bool = False) -> None:
        try:
            import ray
        except ImportError:
            raise InputError("executor", f"Ray installed ({INSTALL})", "no Ray") from None
        super().__init__(1)
        self._ray = ray
        self.address, self.verbose = address, verbose
        self._owner = False  # whether this executor started Ray (and shuts it down)
        self._watcher: subprocess.Popen[bytes] | None = None
        self._data: dict[Hashable, Any] = {}
        self._slots = 1
        self._remote: Any = None

    @property
    def slots(self) -> int:
        return self._slots

    def start(self, cfg: StudyConfig) -> None:
        ray = self._ray
        if self.address is not None:
            check_reachable(self.address)
        if not ray.is_initialized():
            level = logging.INFO if self.verbose else logging.ERROR
            handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
            try:
                ray.init(
                    address=self.address or "local",
                    log_to_driver=self.verbose,
                    logging_level=level,
                    include_dashboard=False,
                )
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise InputError("address", "a running Ray cluster", str(exc)) from None
            finally:  # Ray's own handlers abort the process: Ctrl-C and SIGTERM unwind instead
                for signum, handler in handlers.items():
                    with contextlib.suppress(ValueError, TypeError):  # not the main thread
                        signal.signal(signum, handler)
            self._owner = True
            if self.address is None:
                self._watcher = watch_local_ray()
        try:
            check_resources(cfg, ray.nodes())
        except InputError:
            self.close()
            raise
        self._slots = self.limit = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self._remote = ray.remote(_ray_task)

    def close(self, stop: bool = False) -> None:
        if stop and not self._owner:  # a cluster we joined keeps running: cancel our tasks
            for ref in self._running:
                with contextlib.suppress(Exception):
                    self._ray.cancel(ref, force=True)
        self._data.clear()
        self._running.clear()
        self._queue.clear()
        if self._owner:
            self._ray.shutdown()
            self._owner = False
        if self._watcher is not None:
            self._watcher.kill()
            self._watcher.wait()
            self._watcher = None

    def submit(self, unit: Unit, key: Hashable, data: StudyData | None) -> None:
        if key not in self._data:
            if data is None:
                raise RuntimeError("the data of a new key is needed")  # a programming error
            self._data[key] = self._ray.put(data)
        super().submit(unit, key, data)

    def _launch(self, job: Job) -> Any:
        r = resources(job.unit)
        task = self._remote.options(
            num_cpus=r.cpus, num_gpus=r.gpus, max_retries=ATTEMPTS - 1, name=job.unit.what
        )
        return task.remote(job.unit, self._data[job.key], r.cpus)

    def _done(self, handles: list[Any], timeout: float | None) -> list[Any]:
        ready, _ = self._ray.wait(handles, num_returns=1, timeout=timeout)
        return list(ready)

    def _outcome(self, handle: Any) -> Finished:
        try:
            finished: Finished = self._ray.get(handle)
        except self._ray.exceptions.RayTaskError as exc:
            cause = getattr(exc, "cause", None)  # the unit's own error, as it was raised
            if isinstance(cause, Exception):
                raise cause from None
            raise
        return finished
