"""A reduced 1,000-class comparison (issue 31's ImageNet size, 4,000 samples): it finishes
with the default methods, says each method it leaves out and why, gives finite numbers in
every row and keeps its memory to a few copies of the scores."""

from __future__ import annotations

import logging
import math
import tracemalloc

import numpy as np
import pytest

from calibkit import Resampling
from calibkit.core.outputs import as_outputs
from calibkit.core.splits import split_indices
from calibkit.workflows.compare import compare_parts
from calibkit.workflows.methods import left_out_methods


def thousand_classes(n: int = 4000, k: int = 1000, seed: int = 0) -> tuple[np.ndarray, ...]:
    """Float32 logits N(0, 3^2), labels drawn from softmax(z / 2) (benchmarks' generator)."""
    rng = np.random.default_rng(seed)
    z = (rng.standard_normal((n, k)) * 3.0).astype(np.float32)
    y = np.argmax(z / 2.0 + rng.gumbel(size=(n, k)), axis=1)
    return z, y


@pytest.mark.slow
def test_a_thousand_class_comparison_finishes_and_says_what_it_left_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    z, y = thousand_classes()
    scores_mb = z.size * 8 / 2**20  # one float64 copy of every score: 31 MB
    tracemalloc.start()
    with caplog.at_level(logging.INFO, logger="calibkit"):
        comp = compare_parts(as_outputs(y, logits=z), resampling=Resampling(n_boot=200))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # every default method left out is said with its reason, before the work
    cal_idx, _ = split_indices(y, 0.5, seed=0)
    every_class = np.unique(y[cal_idx]).size == 1000
    assert comp.declined == left_out_methods(1000, comp.n_cal, every_class)
    assert "matrix" in comp.declined
    assert comp.declined["matrix"].startswith("declined from 50 classes on")
    assert all(why for why in comp.declined.values())
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("not run")]
    for name in comp.declined:
        assert any(name in line for line in said), name
    names = [r.method for r in comp.rows]
    assert names[0] == "none"
    assert "temperature" in names
    assert not set(names) & set(comp.declined)
    for row in comp.rows:
        for key in ("ece", "nll", "brier", "accuracy"):
            assert math.isfinite(row.evaluation.values[key]), (row.method, key)
        lo, hi = row.evaluation.ci["ece"]
        assert lo <= hi
    assert comp.recommendation is not None
    assert np.all(np.isfinite(comp.ece_curve))
    # memory: a few float64 copies of the scores at a time, not one per row
    assert peak / 2**20 < 12 * scores_mb, f"peak {peak / 2**20:.0f} MB"
