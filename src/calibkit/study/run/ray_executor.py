"""The ``ray`` executor: a study's units as Ray tasks (see :mod:`calibkit.study.run.executors`).

Ray is imported here only, when this executor is made; without it the error says how to
install it. Before any task runs, an ``address`` must answer within
:data:`~calibkit.study.run.executors.CONNECT_SECONDS` and every model's ``resources`` must fit
on one node of the cluster (:func:`check_resources`).

A local Ray is started without its dashboard (calibkit does not use it), with SIGINT blocked
(its processes leave Ctrl-C to the driver:
:func:`~calibkit.core.signals.sigint_blocked`), and with its session files in a
temporary folder of its own, removed when the study ends (by the watcher if the driver is
killed): no ``session_*`` folder is left in Ray's temporary folder. A Ray that fails to
start (its dashboard agent or raylet dying during start-up) is one line,
:class:`~calibkit.core.errors.InputError` naming ``executor`` (or ``address`` for a
cluster), never Ray's traceback.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from calibkit.core.errors import InputError
from calibkit.core.signals import sigint_blocked
from calibkit.study.definition.config import Resources, StudyConfig
from calibkit.study.definition.prepare import StudyData
from calibkit.study.run.executors import (
    ATTEMPTS,
    CONNECT_SECONDS,
    Job,
    QueuedExecutor,
    run_unit,
)
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
    if not host or not (port.isascii() and port.isdigit()) or not 0 < int(port) < 65536:
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


#: The watcher of a local Ray (see :func:`watch_local_ray`): argv[1] is the driver's pid,
#: argv[2] (if given) Ray's temporary folder, removed once Ray's processes are killed.
_WATCHER = """
import os, shutil, signal, sys, time
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
if len(sys.argv) > 2:
    time.sleep(0.5)
    shutil.rmtree(sys.argv[2], ignore_errors=True)
"""


def watch_local_ray(temp_dir: str | None = None) -> subprocess.Popen[bytes] | None:
    """A small process that stops the local Ray this process started if this process ends
    without stopping it (SIGKILL): it notes Ray's processes among this process's descendants
    as they start, and kills those still running once this process is gone, then removes
    ``temp_dir`` (Ray's temporary folder). Linux only (it reads ``/proc``); elsewhere None.

    Parameters
    ----------
    temp_dir : str, optional
        The temporary folder of the local Ray, removed after its processes.

    Returns
    -------
    subprocess.Popen or None
        The watcher (killed by :meth:`RayExecutor.close`), or None off Linux.
    """
    if not sys.platform.startswith("linux"):
        return None
    command = [sys.executable, "-c", _WATCHER, str(os.getpid()), *([temp_dir] if temp_dir else [])]
    return subprocess.Popen(command, start_new_session=True, stdin=subprocess.DEVNULL)


#: The longest temporary folder Ray's sockets fit under (a socket path is at most 107
#: bytes; Ray adds ``/session_<date>_<time>_<pid>/sockets/plasma_store`` to it).
_SHORT_TEMP = 44


def ray_temp_dir() -> str:
    """A new temporary folder for a local Ray's session files: in the system's temporary
    folder (``$TMPDIR``, as Ray's own default), or in ``/tmp`` where that is too long for
    Ray's sockets.

    Returns
    -------
    str
        The folder's path (the caller removes it).

    Examples
    --------
    >>> import shutil
    >>> path = ray_temp_dir()
    >>> len(path) <= _SHORT_TEMP or not os.path.isdir("/tmp")
    True
    >>> shutil.rmtree(path)
    """
    prefix = "calibkit-ray-"
    base = tempfile.gettempdir()
    if len(os.path.join(base, prefix)) + 8 > _SHORT_TEMP and os.path.isdir("/tmp"):
        base = "/tmp"
    return tempfile.mkdtemp(prefix=prefix, dir=base)


def _first_line(exc: BaseException) -> str:
    """The first line of ``exc``'s message that says something (Ray's are pages long)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[0] if lines else 'no message'}"


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
        self._temp: str | None = None  # the temporary folder of the Ray started here
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
            self._init()
        try:
            check_resources(cfg, ray.nodes())
        except InputError:
            self.close()
            raise
        self._slots = self.limit = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self._remote = ray.remote(_ray_task)

    def _init(self) -> None:
        """Start a local Ray (in a temporary folder of its own) or join ``address``; a
        failure is one line naming ``executor`` (or ``address``), Ray stopped and its
        temporary folder removed."""
        ray = self._ray
        level = logging.INFO if self.verbose else logging.ERROR
        handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
        local = self.address is None
        if local:
            self._temp = ray_temp_dir()
            self._watcher = watch_local_ray(self._temp)
        try:
            with sigint_blocked():  # Ray's processes leave Ctrl-C to the driver
                ray.init(
                    address=self.address or "local",
                    log_to_driver=self.verbose,
                    logging_level=level,
                    include_dashboard=False,
                    **({"_temp_dir": self._temp} if local else {}),
                )
        except Exception as exc:  # Ray raises many kinds here; none is calibkit's to show
            self._owner = True
            self.close()
            if local:
                expected = "a local Ray that starts (a Ray process died during its start-up)"
                raise InputError("executor", expected, f"ray: {_first_line(exc)}") from None
            raise InputError("address", "a running Ray cluster", _first_line(exc)) from None
        finally:  # Ray's own handlers abort the process: Ctrl-C and SIGTERM unwind instead
            for signum, handler in handlers.items():
                with contextlib.suppress(ValueError, TypeError):  # not the main thread
                    signal.signal(signum, handler)
        self._owner = True

    def close(self, stop: bool = False) -> None:
        if stop and not self._owner:  # a cluster we joined keeps running: cancel our tasks
            for ref in self._running:
                with contextlib.suppress(Exception):
                    self._ray.cancel(ref, force=True)
        self._data.clear()
        self._running.clear()
        self._queue.clear()
        if self._owner:
            with contextlib.suppress(Exception):  # a Ray that never started stops as it can
                self._ray.shutdown()
            self._owner = False
        if self._watcher is not None:
            self._watcher.kill()
            self._watcher.wait()
            self._watcher = None
        if self._temp is not None:
            shutil.rmtree(self._temp, ignore_errors=True)
            self._temp = None

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
