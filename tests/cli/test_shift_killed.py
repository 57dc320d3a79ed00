"""``calibkit shift`` killed while its worker processes decode the JPEGs (issue 42): the
workers used to outlive it for good (about 350 MB each on CIFAR-10), and SIGTERM said
nothing. Now SIGKILL takes the workers with it, and SIGTERM (as Ctrl-C) prints one line,
exits 143 (130) and leaves no process and no file behind. A real process, killed for real:
decoding is slowed (each image sleeps a little, in the workers too, which are forked) so
that the kill lands in the middle of it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

#: Images of the synthetic cifar10-jpeg.zip: enough for the worker processes (4,096).
PER_CLASS = 205
#: Runs ``calibkit shift`` with each image's decoding slowed down (seconds per image).
_SLOWED = """
import sys, time
import calibkit.data.image_folder as folder
from calibkit.cli import main

decode = folder._decode
folder._decode = lambda data, name: (time.sleep(0.01), decode(data, name))[1]
sys.exit(main(sys.argv[1:]))
"""

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
    pytest.mark.skipif(os.cpu_count() == 1, reason="one core: decoded in-process"),
]


def _children(pid: int) -> dict[int, str]:
    """The processes whose parent is ``pid``, each with its start time (pids are reused)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found[int(entry.name)] = fields[19]
    return found


def _alive(processes: dict[int, str]) -> list[int]:
    alive = []
    for pid, started in processes.items():
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[19] == started and fields[0] not in "ZX":
            alive.append(pid)
    return alive


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A synthetic cifar10-jpeg.zip of 4,100 images, and a LeNet-5's weights."""
    import torch

    from calibkit.models import create_model
    from tests.data.synthetic import cifar10_jpeg_zip

    root = tmp_path_factory.mktemp("shift-killed")
    cifar10_jpeg_zip(root / "data", per_class=PER_CLASS)
    torch.manual_seed(0)
    torch.save(create_model("lenet5", 10).state_dict(), root / "lenet.pt")
    return root / "data", root / "lenet.pt"


@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM", "Ctrl-C"])
def test_killed_while_decoding_leaves_no_worker_and_no_file(
    how: str, inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    data, weights = inputs
    cache, out = tmp_path / "cache", tmp_path / "report"
    command = [sys.executable, "-c", _SLOWED, "--threads", "1", "shift", "--model", "lenet5"]
    command += ["--weights", str(weights), "--data-dir", str(data), "--out", str(out)]
    command += ["--device", "cpu", "--corruptions", "contrast", "--severities", "1"]
    env = {**os.environ, "CALIBKIT_CACHE": str(cache), "OMP_NUM_THREADS": "1"}
    log = (tmp_path / "stderr.txt").open("wb")
    shift = subprocess.Popen(command, env=env, stderr=log, stdout=log, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        workers: dict[int, str] = {}
        while len(workers) < 2:  # the decoder pool started (two workers: two cores at least)
            assert shift.poll() is None, (tmp_path / "stderr.txt").read_text()
            assert time.monotonic() < deadline, "the decoder pool never started"
            time.sleep(0.05)
            workers = _children(shift.pid)
        time.sleep(0.5)  # decoding
        assert len(_alive(workers)) >= 2
        if how == "Ctrl-C":  # what a terminal does: SIGINT to the whole process group
            os.killpg(shift.pid, signal.SIGINT)
        else:
            shift.send_signal(getattr(signal, how))
        status = shift.wait(timeout=30)
    finally:
        if shift.poll() is None:
            shift.kill()
        log.close()
    stderr = (tmp_path / "stderr.txt").read_text()
    deadline = time.monotonic() + 10
    while _alive(workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = _alive(workers)
    for pid in left:  # a failing run leaves nothing behind either
        os.kill(pid, signal.SIGKILL)
    assert not left, "the decoder workers outlived calibkit shift"
    if how == "SIGKILL":
        assert status == -signal.SIGKILL
    else:
        said = {"SIGTERM": "terminated", "Ctrl-C": "interrupted"}[how]
        assert status == {"SIGTERM": 143, "Ctrl-C": 130}[how], stderr
        assert "Traceback" not in stderr  # nor a worker's
        assert stderr.strip().splitlines()[-1] == f"calibkit: error: {said}", stderr
    assert not out.exists()
    assert not cache.exists() or not any(cache.rglob("*")), sorted(cache.rglob("*"))
