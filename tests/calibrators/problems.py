"""Synthetic problems and real predictions shared by the calibrator tests.

Plain functions (not fixtures) so that a test can ask for several problems with different
arguments; the real-data helpers go with skip markers for when ``../shared/data`` is absent.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.conftest import SHARED_DATA

#: CIFAR-10 test-set predictions of a ResNet-18 (10,000 rows, K = 10).
CIFAR10 = SHARED_DATA / "predictions" / "cifar10_resnet18.npz"
#: CIFAR-100 test-set predictions of a Wide ResNet-16-4 (10,000 rows, K = 100).
CIFAR100 = SHARED_DATA / "predictions" / "cifar100_wideresnet-16-4.npz"


def needs(path: Path) -> pytest.MarkDecorator:
    """A marker skipping the test, with a reason, when the real-data file ``path`` is absent."""
    return pytest.mark.skipif(
        not path.exists(), reason=f"real data not available: {path} is absent"
    )


needs_cifar10 = needs(CIFAR10)
needs_cifar100 = needs(CIFAR100)


# ----- synthetic problems ---------------------------------------------------------------------
def random_problem(
    n: int, k: int, *, seed: int = 0, temperature: float = 2.0, scale: float = 3.0
) -> tuple[np.ndarray, np.ndarray]:
    """Float64 logits N(0, scale^2) and labels drawn from softmax(logits / temperature).

    With ``temperature > 1`` the logits are overconfident by that factor (the default: 2).
    One uniform draw per row, scaled to the row's unnormalised softmax total, picks the label.
    """
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, k)) * scale
    p = np.exp((z - z.max(axis=1, keepdims=True)) / temperature)
    cdf = np.cumsum(p, axis=1)
    u = rng.uniform(size=(n, 1)) * cdf[:, -1:]
    return z, np.minimum((cdf < u).sum(axis=1), k - 1)


def softmax(z: np.ndarray) -> np.ndarray:
    """Row-wise softmax of the logits ``z`` (shifted by the row maximum)."""
    e = np.exp(z - z.max(axis=1, keepdims=True))
    p: np.ndarray = e / e.sum(axis=1, keepdims=True)
    return p


# ----- real predictions -----------------------------------------------------------------------
def load_logits(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Float64 logits (the log of the stored probabilities) and the labels of a predictions file."""
    with np.load(path) as data:
        return np.log(data["probs"].astype(np.float64)), data["labels"]


def seeded_split(n: int, n_first: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Row indices split by a permutation seeded with 0: the first ``n_first`` (default half)
    for calibration, the rest for testing."""
    perm = np.random.default_rng(0).permutation(n)
    cut = n // 2 if n_first is None else n_first
    return perm[:cut], perm[cut:]


def cat_vs_dog(z: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The CIFAR-10 cat (3) and dog (5) rows as a binary problem: their two logit columns
    (softmax renormalises) and the labels 1 for dog, 0 for cat."""
    keep = np.isin(y, [3, 5])
    return z[keep][:, [3, 5]], (y[keep] == 5).astype(np.int64)
