"""The ``ray`` executor: a study's units as Ray tasks (see :mod:`calibkit.study.executors`).

Ray is imported here only, when this executor is made; without it the error says how to
install it. Before any task runs, an ``address`` must answer within
:data:`~calibkit.study.executors.CONNECT_SECONDS` and every model's ``resources`` must fit
on one node of the cluster (:func:`check_resources`).
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from calibkit.core.errors import InputError
from calibkit.study.config import Resources, StudyConfig
from calibkit.study.executors import ATTEMPTS, CONNECT_SECONDS, Executor
from calibkit.study.prepare import StudyData
from calibkit.study.units import Finished, Unit, execute, resources

#: How to get Ray.
INSTALL = "pip install 'calibkit[ray]'"


def _ray_task(unit: Unit, data: StudyData, threads: int) -> Finished:
    """A unit in a Ray worker, under as many threads as the CPUs it was given."""
    return execute(unit, data, threads)


def check_reachable(address: str, timeout: float = CONNECT_SECONDS) -> None:
    """Refuse an ``--address`` (``host:port``, ``ray://host:port``) that does not answer
    within ``timeout`` seconds; ``auto`` (Ray's own discovery) is left to Ray."""
    if address == "auto":
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise InputError("--address", "HOST:PORT of a Ray head (ray start --head)", address)
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as exc:
        expected = f"a Ray head answering within {timeout:g} s (ray start --head)"
        raise InputError("--address", expected, f"{address}: {exc}") from None


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


class RayExecutor(Executor):
    """Units as Ray tasks, the prepared data put once per dataset in the object store."""

    def __init__(self, address: str | None = None, *, verbose: bool = False) -> None:
        try:
            import ray
        except ImportError:
            raise InputError("--executor ray", f"Ray installed ({INSTALL})", "no Ray") from None
        self._ray = ray
        self.address, self.verbose = address, verbose
        self._owner = False  # whether this executor started Ray (and shuts it down)
        self._data: dict[Hashable, Any] = {}
        self._tasks: dict[Any, str] = {}  # the tasks running: what each is
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
            try:
                ray.init(
                    address=self.address or "local",
                    log_to_driver=self.verbose,
                    logging_level=level,
                    include_dashboard=False,
                )
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise InputError("--address", "a running Ray cluster", str(exc)) from None
            self._owner = True
        try:
            check_resources(cfg, ray.nodes())
        except InputError:
            self.close()
            raise
        self._slots = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self._remote = ray.remote(_ray_task)

    def close(self) -> None:
        self._data.clear()
        self._tasks.clear()
        if self._owner:
            self._ray.shutdown()
            self._owner = False

    def submit(self, unit: Unit, key: Hashable, data: StudyData | None) -> None:
        if key not in self._data:
            if data is None:
                raise RuntimeError("the data of a new key is needed")  # a programming error
            self._data[key] = self._ray.put(data)
        r = resources(unit)
        task = self._remote.options(
            num_cpus=r.cpus, num_gpus=r.gpus, max_retries=ATTEMPTS - 1, name=unit.what
        )
        self._tasks[task.remote(unit, self._data[key], r.cpus)] = unit.what

    def _take(self, timeout: float | None) -> Finished | None:
        if not self._tasks:
            return None
        ready, _ = self._ray.wait(list(self._tasks), num_returns=1, timeout=timeout)
        if not ready:
            return None
        del self._tasks[ready[0]]
        finished: Finished = self._ray.get(ready[0])
        return finished

    def poll(self) -> Finished | None:
        return self._take(0)

    def wait(self) -> Finished:
        finished = self._take(None)
        assert finished is not None
        return finished

    def pending(self) -> int:
        return len(self._tasks)
