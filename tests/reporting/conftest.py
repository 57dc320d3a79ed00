"""Comparisons the report tests share: one without a recommendation (``comp``), one with
(``chosen``, as the command line makes it)."""

from __future__ import annotations

import numpy as np
import pytest

from calibkit.core.options import Resampling
from calibkit.core.outputs import as_outputs
from calibkit.core.splits import split_outputs
from calibkit.workflows.compare import compare
from calibkit.workflows.comparison import Comparison


@pytest.fixture(scope="module")
def comp() -> Comparison:
    rng = np.random.default_rng(0)
    z = rng.normal(size=(600, 3)) * 3.0
    y = np.argmax(z / 2.0 + rng.gumbel(size=z.shape), axis=1)
    cal, test = split_outputs(as_outputs(y, logits=z), 0.5, seed=0)
    return compare(
        cal, test, ["temperature"], resampling=Resampling(n_boot=25), source="synthetic <data>.npz"
    )


@pytest.fixture(scope="module")
def chosen() -> Comparison:
    """A comparison with its recommendation (compare_parts: the CLI's workflow)."""
    from calibkit.workflows.compare import compare_parts

    rng = np.random.default_rng(2)
    z = rng.normal(size=(800, 3)) * 3.0
    y = np.argmax(z / 2.0 + rng.gumbel(size=z.shape), axis=1)
    whole = as_outputs(y, logits=z)
    return compare_parts(
        whole,
        methods=["temperature", "histogram"],
        resampling=Resampling(n_boot=20),
        source="s.npz",
    )
