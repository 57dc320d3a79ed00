"""MetricSuite.compute_batch equals compute() row by row (the bootstrap's fast path)."""

from __future__ import annotations

import numpy as np
import pytest

from calibkit import Resampling
from calibkit.core.outputs import as_outputs
from calibkit.metrics import METRIC_NAMES, MetricSuite
from calibkit.metrics.continuous import mmce_from_sorted, mmce_from_sorted_batch


@pytest.mark.parametrize(("n", "k", "n_bins", "mode"), [
    (700, 4, 15, "top_label"), (300, 2, 7, "positive_class"), (50, 12, 3, "top_label"),
])  # fmt: skip
def test_batch_matches_compute(n: int, k: int, n_bins: int, mode: str) -> None:
    rng = np.random.default_rng(n)
    p = rng.dirichlet(np.ones(k) * 0.3, size=n)
    p[: n // 5] = np.round(p[: n // 5], 1)  # ties and confidences on bin edges
    p /= p.sum(axis=1, keepdims=True)
    y = rng.integers(0, k, n)
    suite = MetricSuite.from_outputs(as_outputs(y, probs=p), n_bins=n_bins, mode=mode)  # type: ignore[arg-type]
    weights = np.stack([np.bincount(rng.integers(0, n, n), minlength=n) for _ in range(6)])
    weights = np.vstack([np.ones(n), weights]).astype(np.float64)
    batch = suite.compute_batch(weights)
    assert list(batch) == list(METRIC_NAMES)
    for row, w in enumerate(weights):
        one = suite.compute(w)
        for name in METRIC_NAMES:
            assert batch[name][row] == pytest.approx(one[name], rel=1e-10, abs=1e-13), name


def test_mmce_batch_with_a_narrow_kernel_goes_row_by_row() -> None:
    rng = np.random.default_rng(1)
    conf = np.sort(rng.random(200))
    outcome = (rng.random(200) < conf).astype(np.float64)
    weights = rng.integers(0, 3, size=(3, 200)).astype(np.float64)
    signed = weights * (outcome - conf)
    got = mmce_from_sorted_batch(conf, signed, weights.sum(axis=1), width=1e-3)
    want = [mmce_from_sorted(conf, outcome, w, 1e-3) for w in weights]
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_bootstrap_paths_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    """Replicates in confidence order (the bootstrap's path) and compute_batch in sample
    order (the straightforward one): the same draws, the same intervals to rounding."""
    import calibkit.metrics.suite as suite_module

    rng = np.random.default_rng(7)
    p = rng.dirichlet(np.ones(5), size=400)
    p[:100] = np.round(p[:100], 1)  # ties and confidences on bin edges
    p /= p.sum(axis=1, keepdims=True)
    y = rng.integers(0, 5, 400)
    suite = MetricSuite.from_outputs(as_outputs(y, probs=p))
    for mode in ("top_label", "positive_class"):
        if mode == "positive_class":
            y2 = (y > 2).astype(int)
            p2 = np.stack([p[:, :3].sum(axis=1), p[:, 3:].sum(axis=1)], axis=1)
            suite = MetricSuite.from_outputs(as_outputs(y2, probs=p2), mode=mode)
        sorted_path = suite.bootstrap(Resampling(n_boot=60, seed=3))
        monkeypatch.setattr(suite_module, "_SORTED_MIN_N", 10**9)
        batched = suite.bootstrap(Resampling(n_boot=60, seed=3))
        monkeypatch.setattr(suite_module, "_SORTED_MIN_N", 0)
        assert list(sorted_path) == list(batched)
        for name in METRIC_NAMES:
            assert sorted_path[name] == pytest.approx(batched[name], rel=1e-10, abs=1e-13), name
