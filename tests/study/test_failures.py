"""A study's failures in real worker processes: a unit's error, out of memory, a bad
``--address``, and a driver killed, terminated or interrupted (nothing left running).

Each test runs ``python -m calibkit study`` as a real subprocess on the tiny digits study.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from calibkit.cli import main
from calibkit.io.lock import LOCK
from calibkit.study.run.executors import FAULT_VARIABLE
from tests.study.conftest import TINY

RUNS = ("mlp/seed-0", "mlp/seed-1", "mlp_dropout/seed-0", "mlp_dropout/seed-1")


def _study(*args: str, fault: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", FAULT_VARIABLE: fault}
    return subprocess.run(
        [sys.executable, "-m", "calibkit", "--threads", "1", "study", *args, "--quiet"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "error" in line.lower()]


@pytest.mark.parametrize("executor", ["processes", pytest.param("ray", marks=pytest.mark.slow)])
def test_an_input_error_in_a_worker_fails_once_and_exits_2(
    executor: str, tmp_path: Path, tiny_config: Path
) -> None:
    if executor == "ray":
        pytest.importorskip("ray")
    out = tmp_path / "out"
    part = ["--out", str(out), "--models", "mlp", "--seeds", "0", "--epochs", "1"]
    assert main(["study", str(tiny_config), *part, "--quiet"]) == 0
    weights = out / "runs" / "mlp" / "seed-0" / "model.safetensors"
    tensors = load_file(weights)  # one tensor of another shape: reached only in the unit
    name = next(iter(tensors))
    tensors[name] = torch.zeros(tensors[name].shape[0] + 1, *tensors[name].shape[1:])
    save_file(tensors, weights)
    config = tmp_path / "nc.toml"
    config.write_text(
        TINY.replace("n_floor_draws = 20", 'n_floor_draws = 20\ninput_calibrators = ["nc_fast"]')
    )
    extra = ["--workers", "1"] if executor == "processes" else []
    done = _study(str(config), *part, "--executor", executor, *extra)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "nc_fast of mlp seed 0: " in done.stderr
    assert "model.safetensors: expected the weights of this run" in done.stderr
    assert "died" not in done.stderr
    assert "run again" not in done.stderr
    assert not (weights.parent / "clamping-nc_fast.json").exists()
    assert not (out / LOCK).exists()


def _mtimes(out: Path) -> dict[str, tuple[int, int]]:
    return {
        p.relative_to(out).as_posix(): (p.stat().st_mtime_ns, p.stat().st_size)
        for p in sorted(out.rglob("*"))
        if p.is_file()
    }


def test_a_failing_unit_lets_the_others_finish_and_the_study_resumes(
    tmp_path: Path, tiny_config: Path
) -> None:
    out = tmp_path / "out"
    args = [str(tiny_config), "--out", str(out), "--executor", "processes", "--workers", "2"]
    done = _study(*args, fault="mlp seed 1=RuntimeError")
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert "1 unit(s) failed" in done.stderr
    assert f"mlp seed 1: RuntimeError: injected by {FAULT_VARIABLE}" in done.stderr
    runs = out / "runs"
    assert [(runs / r / "train.json").exists() for r in RUNS] == [True, False, True, True]
    assert not (runs / "mlp" / "seed-1" / "model.safetensors").exists()  # nothing of it
    assert not (out / "results.csv").exists()
    assert not (out / LOCK).exists()
    before = _mtimes(out)
    done = _study(*args)
    assert done.returncode == 0, done.stderr
    after = _mtimes(out)
    assert all(after[k] == v for k, v in before.items() if k.startswith("runs/mlp_dropout"))
    assert (runs / "mlp" / "seed-1" / "train.json").exists()
    assert len((out / "results.csv").read_text().splitlines()) == 1 + 4 * 3  # runs x rows


def test_out_of_memory_runs_again_with_fewer_units_then_alone_then_fails(
    tmp_path: Path, tiny_config: Path
) -> None:
    out = tmp_path / "out"
    args = [str(tiny_config), "--out", str(out), "--models", "mlp"]
    args += ["--executor", "processes", "--workers", "2"]
    done = _study(*args, fault="mlp seed 0=OutOfMemoryError")
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    oom = f"out of memory (OutOfMemoryError: injected by {FAULT_VARIABLE} (tried to allocate"
    assert f"mlp seed 0: {oom}" in done.stderr  # the unit, and the memory torch reports
    assert "with 2 units at once; it runs again with at most 1" in done.stderr
    assert "2.00 GiB)), even running alone" in done.stderr
    seed0 = out / "runs" / "mlp" / "seed-0"
    assert sorted(p.name for p in seed0.iterdir()) == ["identity.json"]  # nothing written
    assert (out / "runs" / "mlp" / "seed-1" / "train.json").exists()
    done = _study(*args)  # with the memory back, the folder resumes
    assert done.returncode == 0, done.stderr
    assert (seed0 / "train.json").exists()
    assert not (seed0 / "checkpoint.pt").exists()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_an_address_that_is_not_ray_is_refused_within_10_s(
    tmp_path: Path, tiny_config: Path
) -> None:
    pytest.importorskip("ray")
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        out = tmp_path / "out"
        start = time.monotonic()
        done = _study(
            str(tiny_config), "--out", str(out), "--executor", "ray",
            "--address", f"127.0.0.1:{port}",
        )  # fmt: skip
        seconds = time.monotonic() - start
    finally:
        server.kill()
        server.wait()
    assert done.returncode == 2, done.stderr
    assert seconds < 30  # the refusal itself is immediate; the rest is importing calibkit
    assert done.stderr.count("\n") == 1, done.stderr  # one message, none of Ray's warnings
    assert "--address: expected a Ray head answering within 10 s" in done.stderr
    assert "not a Ray head" in done.stderr
    assert not out.exists()


def test_a_service_that_never_answers_is_refused_in_time() -> None:
    from calibkit.core.errors import InputError
    from calibkit.study.run.ray_executor import check_reachable

    with socket.socket() as silent:  # accepts connections (the backlog), never replies
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        start = time.monotonic()
        with pytest.raises(InputError, match=r"not a Ray head|timed out"):
            check_reachable(f"127.0.0.1:{silent.getsockname()[1]}", timeout=1.0)
        assert time.monotonic() - start < 5


# --- a driver killed, terminated or interrupted: nothing of the study keeps running ---


def _stat(pid: int) -> tuple[str, int, str] | None:
    """A process's state, parent and start time (None: no such process)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return fields[0], int(fields[1]), fields[19]


def _family(root: int) -> dict[int, str]:
    """``root``'s descendants (not ``root``), with their start times."""
    table = {int(p.name): _stat(int(p.name)) for p in Path("/proc").iterdir() if p.name.isdigit()}
    family, grown = {root}, True
    while grown:
        more = {p for p, s in table.items() if s and s[1] in family} - family
        family |= more
        grown = bool(more)
    return {p: s[2] for p in family - {root} if (s := table[p])}


def _alive(family: dict[int, str]) -> list[int]:
    return [p for p, t in family.items() if (s := _stat(p)) and s[2] == t and s[0] not in "ZX"]


def _start_and_wait_for_training(
    executor: str, tmp_path: Path, tiny_config: Path
) -> tuple[subprocess.Popen[bytes], Path, dict[int, str]]:
    """A driver training ``mlp`` seed 0 for long; once its checkpoint is written, the driver
    and its descendants."""
    out = tmp_path / "out"
    extra = ["--workers", "1"] if executor == "processes" else []
    command = [sys.executable, "-m", "calibkit", "--threads", "1", "study", str(tiny_config)]
    command += ["--out", str(out), "--models", "mlp", "--seeds", "0", "--epochs", "5000"]
    command += ["--quiet", "--executor", executor, *extra]
    log = (tmp_path / "stderr.txt").open("wb")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    driver = subprocess.Popen(command, env=env, stderr=log, start_new_session=True)
    checkpoint = out / "runs" / "mlp" / "seed-0" / "checkpoint.pt"
    deadline = time.monotonic() + 120
    while not checkpoint.exists():
        assert driver.poll() is None, (tmp_path / "stderr.txt").read_text()
        assert time.monotonic() < deadline, "the study never started training"
        time.sleep(0.05)
    time.sleep(0.5)  # every process of the study started
    return driver, out, _family(driver.pid)


def _assert_nothing_left(family: dict[int, str], out: Path) -> None:
    deadline = time.monotonic() + 10
    while _alive(family) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(family), [Path(f"/proc/{p}/cmdline").read_bytes() for p in _alive(family)]
    before = _mtimes(out)
    time.sleep(1.5)
    assert _mtimes(out) == before  # nothing writes into --out any more


EXECUTORS = ["processes", pytest.param("ray", marks=pytest.mark.slow)]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("executor", EXECUTORS)
def test_a_driver_killed_by_sigkill_leaves_no_process(
    executor: str, tmp_path: Path, tiny_config: Path
) -> None:
    if executor == "ray":
        pytest.importorskip("ray")
    driver, out, family = _start_and_wait_for_training(executor, tmp_path, tiny_config)
    assert family, "the study started no process"
    driver.kill()
    assert driver.wait(timeout=30) == -signal.SIGKILL
    _assert_nothing_left(family, out)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("executor", EXECUTORS)
@pytest.mark.parametrize("how", ["SIGTERM", "Ctrl-C"])
def test_a_driver_terminated_or_interrupted_stops_cleanly(
    how: str, executor: str, tmp_path: Path, tiny_config: Path
) -> None:
    if executor == "ray":
        pytest.importorskip("ray")
    driver, out, family = _start_and_wait_for_training(executor, tmp_path, tiny_config)
    if how == "SIGTERM":
        driver.terminate()
    else:  # what a terminal does: SIGINT to the whole foreground process group
        os.killpg(driver.pid, signal.SIGINT)
    status = driver.wait(timeout=60)
    stderr = (tmp_path / "stderr.txt").read_text()
    assert status == (143 if how == "SIGTERM" else 130), stderr
    assert "Traceback" not in stderr
    assert stderr.strip().splitlines()[-1] in (
        "calibkit: error: terminated",
        "calibkit: error: interrupted",
    )
    assert not (out / LOCK).exists()
    _assert_nothing_left(family, out)


#: A ``sitecustomize`` that holds a spawned worker in its start-up (where a Ctrl-C used to
#: print the worker's traceback) after marking that it started, and marks a Ctrl-C it gets.
_SLOW_WORKER = """
import os, sys, time
if "--multiprocessing-fork" in sys.orig_argv:
    import multiprocessing.spawn as spawn

    def _main(*args, _main=spawn._main, **kwargs):
        open(os.environ["CALIBKIT_TEST_MARK"], "w").close()
        try:
            time.sleep(4)
        except KeyboardInterrupt:
            open(os.environ["CALIBKIT_TEST_MARK"] + ".interrupted", "w").close()
            raise
        return _main(*args, **kwargs)

    spawn._main = _main
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="signals a process group")
def test_ctrl_c_while_a_worker_starts_ends_in_one_line(tmp_path: Path, tiny_config: Path) -> None:
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(_SLOW_WORKER)
    mark = tmp_path / "worker-starting"
    path = os.pathsep.join([str(tmp_path / "site"), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": path}
    env["CALIBKIT_TEST_MARK"] = str(mark)
    command = [sys.executable, "-m", "calibkit", "--threads", "1", "study", str(tiny_config)]
    command += ["--out", str(tmp_path / "out"), "--models", "mlp", "--seeds", "0", "--quiet"]
    command += ["--executor", "processes", "--workers", "1"]
    with (tmp_path / "stderr.txt").open("wb") as log:
        driver = subprocess.Popen(command, env=env, stderr=log, start_new_session=True)
        deadline = time.monotonic() + 120
        while not mark.exists():
            assert driver.poll() is None, (tmp_path / "stderr.txt").read_text()
            assert time.monotonic() < deadline, "no worker started"
            time.sleep(0.05)
        time.sleep(0.5)
        os.killpg(driver.pid, signal.SIGINT)  # a terminal's Ctrl-C: the whole group
        status = driver.wait(timeout=60)
    stderr = (tmp_path / "stderr.txt").read_text()
    assert status == 130, stderr
    assert "Traceback" not in stderr
    assert "KeyboardInterrupt" not in stderr
    assert stderr.strip().splitlines()[-1] == "calibkit: error: interrupted"
    assert all(line.startswith("calibkit: ") for line in stderr.splitlines())
    assert not Path(f"{mark}.interrupted").exists()  # the Ctrl-C reached the driver only


def test_a_unit_out_of_memory_raises_its_error_without_its_frames(
    monkeypatch: pytest.MonkeyPatch, tiny_config: Path
) -> None:
    """The error leaves ``run_unit`` without the frames that held the unit's tensors (they
    are collected, and a GPU's cache emptied, before it is raised)."""
    from calibkit.study import load_study_config
    from calibkit.study.definition.prepare import prepare_data
    from calibkit.study.run.executors import run_unit
    from calibkit.study.run.units import RunUnit

    cfg = load_study_config(tiny_config).select(models=["mlp"], seeds=[0], epochs=1)
    unit = RunUnit(cfg, cfg.models[0], 0, str(tiny_config.parent / "nowhere"))
    data = prepare_data(cfg.model_data(cfg.models[0]))
    monkeypatch.setenv(FAULT_VARIABLE, "")
    monkeypatch.setattr(
        "calibkit.study.run.executors.execute",
        lambda *a: (_ for _ in ()).throw(torch.cuda.OutOfMemoryError("tried to allocate 2 GiB")),
    )
    with pytest.raises(torch.cuda.OutOfMemoryError, match="2 GiB") as caught:
        run_unit(unit, data)
    frames = []
    tb = caught.value.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame.f_code.co_name)
        tb = tb.tb_next
    assert frames[1:] == ["run_unit"]  # raised there, not from inside the unit
