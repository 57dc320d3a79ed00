"""The executors of a study: the same table from serial, processes and Ray; faults; bad input.

The Ray tests share one local Ray instance of 2 CPUs (module-scoped), shut down after them.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from calibkit.core.errors import InputError
from calibkit.core.threads import using_threads
from calibkit.study import load_study_config, make_executor, run_study
from calibkit.study.definition.config import Resources, StudyConfig
from calibkit.study.run.ray_executor import check_reachable, check_resources


@pytest.fixture(scope="module")
def local_ray() -> Iterator[Any]:
    ray = pytest.importorskip("ray")
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        logging_level=logging.ERROR,
    )
    yield ray
    ray.shutdown()


def _serial(cfg: StudyConfig, out: Path) -> bytes:
    with using_threads(1):
        run_study(cfg, out, progress=False)
    return (out / "results.csv").read_bytes()


def test_resources_are_typed_and_checked(tiny_config: Path, tmp_path: Path) -> None:
    text = tiny_config.read_text().replace(
        "params = { hidden = [16] }",
        "params = { hidden = [16] }\nresources = { cpus = 2, gpus = 0.5 }",
    )
    (tmp_path / "r.toml").write_text(text)
    cfg = load_study_config(tmp_path / "r.toml")
    assert cfg.models[0].resources == Resources(cpus=2, gpus=0.5)
    assert cfg.models[1].resources is None
    for bad, key in (("cpus = 0", "cpus"), ("gpus = -1", "gpus"), ("disk = 1", "disk")):
        (tmp_path / "b.toml").write_text(text.replace("cpus = 2, gpus = 0.5", bad))
        with pytest.raises(InputError, match=rf"models\[0\]\.resources\.{key}"):
            load_study_config(tmp_path / "b.toml")


def test_options_of_another_executor_are_refused() -> None:
    # the library names its own arguments (the command line maps them to its flags)
    with pytest.raises(InputError, match=r"^workers: expected the processes executor beside"):
        make_executor("serial", workers=2)
    with pytest.raises(InputError, match=r"^address: expected the ray executor beside it"):
        make_executor("processes", address="127.0.0.1:6379")
    with pytest.raises(InputError, match=r"^executor: expected one of serial, processes, ray"):
        make_executor("threads")


def test_a_request_no_node_can_meet_is_named(tiny_config: Path) -> None:
    cfg = load_study_config(tiny_config)
    big = dataclasses.replace(cfg.models[1], resources=Resources(cpus=2, gpus=1))
    cfg = dataclasses.replace(cfg, models=(cfg.models[0], big))
    nodes = [
        {"Alive": True, "Resources": {"CPU": 8.0}},
        {"Alive": False, "Resources": {"CPU": 8.0, "GPU": 4.0}},
    ]
    with pytest.raises(InputError, match=r"models\.mlp_dropout\.resources.*cpus = 2, gpus = 1"):
        check_resources(cfg, nodes)
    check_resources(cfg, [{"Alive": True, "Resources": {"CPU": 2.0, "GPU": 1.0}}])


def test_an_unreachable_address_fails_fast() -> None:
    start = time.monotonic()
    with pytest.raises(InputError, match=r"^address: expected a Ray head"):
        check_reachable("127.0.0.1:1")
    with pytest.raises(InputError, match=r"^address: expected HOST:PORT"):
        check_reachable("nowhere")
    with pytest.raises(InputError, match=r"^address: expected HOST:PORT"):
        check_reachable("127.0.0.1:\u00b3")  # '³'.isdigit(), but int('³') raises
    assert time.monotonic() - start < 30


def test_a_real_ray_head_passes_the_address_check(local_ray: Any) -> None:
    # the check speaks gRPC's first words (HTTP/2); a Ray head must still pass it
    check_reachable(local_ray.get_runtime_context().gcs_address)


def _cli(*args: str, prelude: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    code = f"import sys; {prelude}from calibkit.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=120
    )


def test_ray_missing_says_how_to_install_it(tiny_config: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = _cli(
        "study", str(tiny_config), "--out", str(out), "--executor", "ray",
        prelude="sys.modules['ray'] = None; ",
    )  # fmt: skip
    assert done.returncode == 2
    assert "calibkit: error: --executor: expected Ray installed" in done.stderr
    assert "pip install 'calibkit[ray]'" in done.stderr
    assert "Traceback" not in done.stderr
    assert not out.exists()


def test_an_unreachable_address_exits_2_writing_nothing(tiny_config: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    start = time.monotonic()
    done = _cli(
        "study", str(tiny_config), "--out", str(out), "--executor", "ray",
        "--address", "127.0.0.1:1", "--seeds", "0", "--models", "mlp",
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "calibkit: error: --address: expected a Ray head" in done.stderr
    assert "Traceback" not in done.stderr
    assert time.monotonic() - start < 30
    assert not out.exists()


#: Ray's start-up failing as when its dashboard agent dies (Ray raises a bare Exception).
_AGENT_DIES = (
    "import ray; exec('def init(**kw):\\n raise Exception(\"The raylet exited immediately because"
    " one Ray agent failed, agent_name = dashboard_agent.\\\\nThe raylet fate shares\")');"
    " ray.init = init; "
)


def test_ray_failing_to_start_is_one_line(tiny_config: Path, tmp_path: Path) -> None:
    pytest.importorskip("ray")
    out = tmp_path / "out"
    done = _cli(
        "study", str(tiny_config), "--out", str(out), "--executor", "ray",
        "--seeds", "0", "--models", "mlp", prelude=_AGENT_DIES,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        "calibkit: error: --executor: expected a local Ray that starts (a Ray process died during"
        " its start-up), got ray: Exception: The raylet exited immediately because one Ray agent"
        " failed, agent_name = dashboard_agent."
    ]
    assert not out.exists()


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Ray's TMPDIR is Linux's")
def test_a_ray_study_leaves_no_session_folder(tiny_config: Path, tmp_path: Path) -> None:
    pytest.importorskip("ray")
    # Ray's temporary folder is $TMPDIR/ray on Linux (short: Ray's socket paths must fit)
    temp = Path(tempfile.mkdtemp(prefix="ck", dir="/tmp"))
    (tmp_path / "tmp").symlink_to(temp)  # removed with tmp_path
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TMPDIR": str(temp)}
    code = "import sys; from calibkit.cli import main; sys.exit(main(sys.argv[1:]))"
    argv = ["study", str(tiny_config), "--out", str(tmp_path / "out"), "--executor", "ray"]
    argv += ["--seeds", "0", "--models", "mlp", "--epochs", "1", "--quiet"]
    done = subprocess.run(
        [sys.executable, "-c", code, *argv], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    left = [p.name for p in temp.iterdir() if "ray" in p.name]  # not torch's own caches
    shutil.rmtree(temp)
    assert left == []


def test_the_three_executors_write_the_same_table(
    tiny_config: Path, tmp_path: Path, local_ray: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # one thread per run everywhere (serial, each of 2 workers, a 1-CPU Ray task) on any
    # machine: a different thread count is another computation path, not the same bytes
    monkeypatch.setattr("calibkit.study.run.executors.available_cores", lambda: 2)
    cfg = load_study_config(tiny_config)
    serial = _serial(cfg, tmp_path / "serial")
    run_study(
        cfg, tmp_path / "processes", progress=False, executor=make_executor("processes", workers=2)
    )
    run_study(cfg, tmp_path / "ray", progress=False, executor=make_executor("ray"))
    assert (tmp_path / "processes" / "results.csv").read_bytes() == serial
    assert (tmp_path / "ray" / "results.csv").read_bytes() == serial
    assert local_ray.is_initialized()  # a Ray the study did not start is left running


def test_ray_refuses_an_impossible_request_writing_nothing(
    tiny_config: Path, tmp_path: Path, local_ray: Any
) -> None:
    cfg = load_study_config(tiny_config)
    greedy = dataclasses.replace(cfg.models[0], resources=Resources(cpus=64))
    cfg = dataclasses.replace(cfg, models=(greedy,))
    with pytest.raises(InputError, match=r"models\.mlp\.resources.*cpus = 64, gpus = 0"):
        run_study(cfg, tmp_path / "out", progress=False, executor=make_executor("ray"))
    assert not (tmp_path / "out").exists()


def _parent(pid: int) -> int:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    return int(stat.rpartition(")")[2].split()[1])


def _pids(mark: str) -> list[int]:
    """This test's descendant processes whose command line holds ``mark``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        pid = int(entry.name)
        ancestor = pid
        while ancestor > 1 and ancestor != os.getpid():
            ancestor = _parent(ancestor)
        if mark in cmdline and ancestor == os.getpid():
            found.append(pid)
    return found


def _kill_when_training(checkpoint: Path, mark: str, killed: list[int]) -> None:
    """Once ``checkpoint`` exists (a run midway), SIGKILL the worker running it."""
    deadline = time.monotonic() + 120
    while not checkpoint.exists() and time.monotonic() < deadline:
        time.sleep(0.002)
    for pid in _pids(mark):
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)


@pytest.mark.parametrize(
    "executor",
    ["ray", pytest.param("processes", marks=pytest.mark.slow)],  # spawns twice
)
def test_a_worker_killed_midway_is_retried_to_the_same_table(
    executor: str, tiny_config: Path, tmp_path: Path, local_ray: Any
) -> None:
    cfg = load_study_config(tiny_config).select(models=["mlp"], seeds=[0], epochs=60)
    serial = _serial(cfg, tmp_path / "serial")
    out = tmp_path / executor
    mark = "ray::mlp seed 0" if executor == "ray" else "from multiprocessing.spawn import"
    killed: list[int] = []
    checkpoint = out / "runs" / "mlp" / "seed-0" / "checkpoint.pt"
    watcher = threading.Thread(target=_kill_when_training, args=(checkpoint, mark, killed))
    watcher.start()
    kind = make_executor(executor, workers=1) if executor == "processes" else make_executor("ray")
    run_study(cfg, out, progress=False, executor=kind)
    watcher.join()
    assert killed, "no worker was found to kill"
    assert (out / "results.csv").read_bytes() == serial
