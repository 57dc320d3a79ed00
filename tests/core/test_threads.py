"""Thread counts: from the free cores, or as asked; bad counts refused by name."""

from __future__ import annotations

import subprocess
import sys

import pytest

from calibkit.core.errors import InputError
from calibkit.core.threads import available_cores, free_cores, set_threads


def test_free_cores_subtract_the_load(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("calibkit.core.threads.available_cores", lambda: 8)
    monkeypatch.setattr("os.getloadavg", lambda: (5.4, 0.0, 0.0))
    assert free_cores() == 3  # 8 - 5.4, rounded
    monkeypatch.setattr("os.getloadavg", lambda: (20.0, 0.0, 0.0))
    assert free_cores() == 1  # never fewer than one
    monkeypatch.setattr("os.getloadavg", lambda: (0.0, 0.0, 0.0))
    assert free_cores() == 8


def test_set_threads_sets_torch_and_blas() -> None:
    code = (
        "import torch; from threadpoolctl import threadpool_info;"
        "from calibkit.core.threads import set_threads; set_threads(1);"
        "print(torch.get_num_threads(), {p['num_threads'] for p in threadpool_info()})"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split()[0] == "1"
    assert "{1}" in out.stdout or "set()" in out.stdout


@pytest.mark.parametrize("bad", [0, -1, 1025, 2**64, 1.5, True, "2"])
def test_bad_thread_counts_are_refused_by_name(bad: object) -> None:
    with pytest.raises(InputError, match=r"^threads: expected an integer in \[1, 1024\]"):
        set_threads(bad)  # type: ignore[arg-type]


def test_available_cores_is_positive() -> None:
    assert available_cores() >= 1
