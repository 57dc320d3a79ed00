"""Tests of the search over a pool of focal exponents."""

from __future__ import annotations

import pytest
import torch

from calibkit.calibrators.model.clamping import NeuralClamping, SGDSettings
from calibkit.metrics import ece
from tests.calibrators.model.clamping.problems import problem

pytestmark = pytest.mark.usefixtures("one_thread")


def test_gamma_pool_picks_the_lowest_calibration_ece() -> None:
    model, x, y = problem()
    nc = NeuralClamping.fast(model, gamma=(0.0, 1.0, 3.0), sgd=SGDSettings(progress=False)).fit(
        x, y
    )
    assert set(nc.ece_by_gamma_) == {0.0, 1.0, 3.0}
    assert nc.gamma_ == min(nc.ece_by_gamma_, key=nc.ece_by_gamma_.__getitem__)
    assert ece(y.numpy(), probs=nc.predict_proba(x)) == pytest.approx(
        min(nc.ece_by_gamma_.values())
    )


def test_fast_gamma_selection_trains_only_the_candidate_the_fast_variant_prefers() -> None:
    model, x, y = problem()
    pool = (0.0, 1.0, 3.0)
    fast = NeuralClamping.fast(model, gamma=pool, sgd=SGDSettings(progress=False)).fit(x, y)
    nc = NeuralClamping(
        model,
        gamma=pool,
        gamma_select="fast",
        sgd=SGDSettings(epochs=2, batch_size=64, progress=False),
    ).fit(x, y)
    assert nc.gamma_ == fast.gamma_
    assert len(nc.history_) == 2
    others = {g: e for g, e in fast.ece_by_gamma_.items() if g != fast.gamma_}
    assert {g: nc.ece_by_gamma_[g] for g in others} == others
    one = NeuralClamping(
        model, gamma=fast.gamma_, sgd=SGDSettings(epochs=2, batch_size=64, progress=False)
    )
    assert torch.equal(one.fit(x, y).delta_, nc.delta_)
