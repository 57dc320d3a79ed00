"""Shared test fixtures: where the real data beside the repository lives."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

#: ``../shared/data`` relative to the repository root (override with CALIBKIT_SHARED_DATA).
SHARED_DATA = Path(
    os.environ.get("CALIBKIT_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")
)


def shared_path(relative: str) -> Path:
    """Path of a file under ../shared/data, skipping the test with a reason when it is absent."""
    path = SHARED_DATA / relative
    if not path.exists():
        pytest.skip(f"real data not available: {path} is absent (../shared/data beside the repo)")
    return path


@pytest.fixture
def shared_data() -> Path:
    """The ../shared/data folder; skips the test with a reason when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(
            f"real data not available: {SHARED_DATA} is absent (../shared/data beside the repo)"
        )
    return SHARED_DATA
