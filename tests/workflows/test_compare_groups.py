"""compare(..., cal_groups=, test_groups=): per-group results on every row, the group-aware
calibrators fitted with the calibration part's groups, nothing changed without groups."""

from __future__ import annotations

import numpy as np
import pytest

from calibkit import Resampling
from calibkit.calibrators import create_calibrator
from calibkit.core.errors import InputError
from calibkit.core.outputs import as_outputs
from calibkit.metrics.groups import evaluate_groups
from calibkit.workflows.compare import compare
from calibkit.workflows.methods import group_methods


def _parts(n: int = 1200) -> tuple[object, object, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    z = rng.normal(size=(n, 3)) * 2.0
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    y = (rng.random(n)[:, None] > p.cumsum(1)).sum(1)
    g = np.where(rng.random(n) < 0.5, "a", "b")
    z[g == "b"] *= 3.0
    h = n // 2
    cal, test = as_outputs(y[:h], logits=z[:h]), as_outputs(y[h:], logits=z[h:])
    return cal, test, g[:h], g[h:]


def test_rows_carry_their_per_group_results() -> None:
    cal, test, gc, gt = _parts()
    comp = compare(
        cal,
        test,
        ["temperature_groupwise"],
        cal_groups=gc,
        test_groups=gt,
        resampling=Resampling(n_boot=20),
    )
    gts = create_calibrator("temperature_groupwise").fit(
        cal.as_logits(),
        cal.labels,
        groups=gc,  # type: ignore[attr-defined]
    )
    probs = gts.predict_proba(test.as_logits(), groups=gt)  # type: ignore[attr-defined]
    ref = evaluate_groups(test.labels, probs=probs, groups=gt, resampling=Resampling(n_boot=20))  # type: ignore[attr-defined]
    row = comp.row("temperature_groupwise")
    assert row.groups is not None
    assert row.group_reliability is not None
    assert row.groups.values == ref.values  # the same code path on the same probabilities
    assert row.groups.ci == ref.ci
    for name in ("a", "b"):
        assert row.group_reliability[name].counts.sum() == (gt == name).sum()
    base = comp.row("none").groups
    assert base is not None
    assert base.worst_group == "b"


def test_group_methods_join_the_defaults_only_with_groups() -> None:
    cal, test, gc, gt = _parts()
    plain = [r.method for r in compare(cal, test, resampling=Resampling(n_boot=0)).rows]
    grouped = compare(
        cal, test, cal_groups=gc, test_groups=gt, recommend=True, resampling=Resampling(n_boot=0)
    )
    names = [r.method for r in grouped.rows]
    assert names == plain + group_methods(3)
    assert all(r.groups is not None for r in grouped.rows)
    assert grouped.recommendation is not None
    assert grouped.recommendation.method not in group_methods(3)
    base = compare(cal, test, resampling=Resampling(n_boot=0)).row("temperature")
    assert base.groups is None
    assert base.group_reliability is None
    # the global numbers do not depend on the groups
    assert grouped.row("temperature").evaluation.values == base.evaluation.values


def test_groups_both_or_neither_and_checked() -> None:
    cal, test, gc, gt = _parts()
    with pytest.raises(InputError, match="cal_groups/test_groups"):
        compare(cal, test, [], cal_groups=gc, resampling=Resampling(n_boot=0))
    with pytest.raises(InputError, match="test_groups: expected 600 entries"):
        compare(cal, test, [], cal_groups=gc, test_groups=gt[:-1], resampling=Resampling(n_boot=0))
