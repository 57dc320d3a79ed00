"""Shared fixtures and hand-computation helpers of the loss tests."""

from __future__ import annotations

import math

import pytest
import torch

#: Three samples, three classes: correct (p_y ~ 0.79), wrong with a class below the target
#: (p_y ~ 0.23) and wrong with the target tied with another class (p_y ~ 0.09).
LOGITS = [[2.0, 0.5, -1.0], [0.0, 1.0, -0.5], [0.3, 0.3, 2.5]]
TARGETS = [0, 0, 1]


@pytest.fixture(autouse=True)
def _one_thread(one_thread: None) -> None:
    """Every loss test runs with ``one_thread`` (tests/conftest.py)."""


def softmax_rows(rows: list[list[float]]) -> list[list[float]]:
    """Softmax of each row with plain math (the hand reference)."""
    out = []
    for row in rows:
        e = [math.exp(v) for v in row]
        out.append([v / sum(e) for v in e])
    return out


def example(dtype: torch.dtype = torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.tensor(LOGITS, dtype=dtype), torch.tensor(TARGETS)


#: Logits pushing p_y to 1 and to 0 (float32 saturates: log p_y = 0 or -80).
EXTREME = [[80.0, 0.0], [-80.0, 0.0], [0.0, 80.0], [0.0, -80.0], [80.0, 80.0], [3.0, 1.0]]
