"""The label-shift workflow's paired bootstrap reports its replicates (seconds on big files)."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from calibkit import Binning, Resampling
from calibkit.core.progress import progress_of
from calibkit.workflows.label_shift import paired_bootstrap


def test_the_paired_bootstrap_reports_each_block_of_replicates(
    caplog: pytest.LogCaptureFixture,
) -> None:
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(3), size=(2, 400))
    labels = rng.integers(0, 3, 400)
    variants = {"unadapted": probs[0], "adapted": probs[1]}
    with caplog.at_level(logging.DEBUG, logger="calibkit.workflows.label_shift"):
        paired_bootstrap(
            variants,
            labels,
            binning=Binning(n_bins=10),
            resampling=Resampling(n_boot=50, level=0.9, seed=0),
        )
    events = [e for r in caplog.records if r.levelno == logging.DEBUG if (e := progress_of(r))]
    assert events[0].label == "paired bootstrap (50 replicates of 400 samples)"
    steps = [e.step for e in events]
    assert steps[0] == 0
    assert steps[-1] == 50  # every replicate counted once
    assert steps == sorted(steps)
    assert {e.total for e in events} == {50}
