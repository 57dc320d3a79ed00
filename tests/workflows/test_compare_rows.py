"""Rows of a comparison that cost nothing more: a method whose map equals an earlier one's by
construction reuses that fit and its evaluation; the default methods left out on this data
are said, each with its reason, before the work and in the report."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pytest

from calibkit import Resampling
from calibkit.calibrators import CALIBRATORS, create_calibrator
from calibkit.calibrators.scope import Scope
from calibkit.core.outputs import ClassifierOutputs, as_outputs
from calibkit.core.splits import split_outputs
from calibkit.reporting.compare_report import compare_document, results_dict
from calibkit.workflows import compare as compare_module
from calibkit.workflows.compare import compare, reused_fits


def parts(k: int = 3, n: int = 600, probs: bool = True) -> tuple[ClassifierOutputs, ...]:
    rng = np.random.default_rng(3)
    z = rng.normal(size=(n, k)) * 3.0
    y = np.argmax(z / 2.0 + rng.gumbel(size=z.shape), axis=1)
    p = np.exp(z - z.max(1, keepdims=True))
    out = as_outputs(y, probs=p / p.sum(1, keepdims=True)) if probs else as_outputs(y, logits=z)
    return split_outputs(out, 0.5, seed=0)


@pytest.fixture
def fits(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the calibrators compare creates (one per fit), in order."""
    made: list[str] = []

    def counting(name: str, **params: Any) -> Any:
        made.append(name)
        return create_calibrator(name, **params)

    monkeypatch.setattr(compare_module, "create_calibrator", counting)
    return made


def test_dirichlet_on_probabilities_reuses_ms_odirs_fit_and_evaluation(fits: list[str]) -> None:
    cal, test = parts()
    comp = compare(
        cal, test, ["temperature", "ms_odir", "dirichlet"], resampling=Resampling(n_boot=50)
    )
    assert fits == ["temperature", "ms_odir"]  # one fit serves both rows
    odir, dirichlet = comp.row("ms_odir"), comp.row("dirichlet")
    assert dirichlet.evaluation is odir.evaluation  # same probabilities, same seed
    assert dirichlet.params == odir.params
    assert dirichlet.fit_seconds == 0.0
    assert odir.fit_seconds > 0.0
    assert dirichlet.same_as is not None
    assert dirichlet.same_as[0] == "ms_odir"
    assert comp.same_maps == {"dirichlet": "ms_odir"}
    assert comp.same_map_reasons["dirichlet"].endswith("log p); fitted once, its row reused")
    # the recommendation cross-fits one candidate per map
    assert comp.recommendation is None
    with_rec = compare(
        cal, test, ["ms_odir", "dirichlet"], recommend=True, resampling=Resampling(n_boot=0)
    )
    assert with_rec.recommendation is not None
    assert "ms_odir" in with_rec.recommendation.scores
    # cross-fitted once: auto gives the twin the same scores (auto.same_as_)
    assert with_rec.recommendation.scores["dirichlet"] == with_rec.recommendation.scores["ms_odir"]


def test_no_reuse_without_the_same_map_by_construction(fits: list[str]) -> None:
    cal, test = parts(probs=False)  # on logits Dirichlet's map differs from MS-ODIR's
    compare(cal, test, ["ms_odir", "dirichlet"], resampling=Resampling(n_boot=0))
    assert fits == ["ms_odir", "dirichlet"]
    pcal, ptest = parts()
    mixed = as_outputs(ptest.labels, logits=np.log(ptest.scores))  # test part as logits
    assert reused_fits(["ms_odir", "dirichlet"], pcal, mixed) == {}
    fits.clear()
    compare(
        pcal,
        ptest,
        ["ms_odir", "dirichlet"],
        params={"dirichlet": {"reg_lambda": 1.0}},
        resampling=Resampling(n_boot=0),
    )
    assert fits == ["ms_odir", "dirichlet"]  # other parameters: another problem


@pytest.fixture
def toy_scope(monkeypatch: pytest.MonkeyPatch) -> str:
    """The default methods are temperature, matrix and toy_wide, a temperature scaling
    whose registry entry declares a scope of fewer than 3 classes."""
    scope = Scope(max_classes=3, reason="toy limit")
    return _toy_default(monkeypatch, "toy_wide", scope, "matrix")


def _toy_default(monkeypatch: pytest.MonkeyPatch, name: str, scope: Scope, other: str) -> str:
    """Register ``name``, a temperature scaling with ``scope``, and make temperature,
    ``other`` and ``name`` the default methods."""
    info = {**CALIBRATORS._info["temperature"], "scope": scope}
    monkeypatch.setitem(CALIBRATORS._items, name, CALIBRATORS._items["temperature"])
    monkeypatch.setitem(CALIBRATORS._info, name, info)
    defaults = ["temperature", other, name]
    monkeypatch.setattr(CALIBRATORS, "defaults", lambda kind=None: defaults)
    return name


def test_declined_methods_are_said_before_the_work_and_in_the_report(
    toy_scope: str, caplog: pytest.LogCaptureFixture
) -> None:
    cal, test = parts(k=3, n=200, probs=False)  # 100 calibration samples: matrix needs 24
    with caplog.at_level(logging.INFO, logger="calibkit.workflows.compare"):
        comp = compare(cal, test, None, resampling=Resampling(n_boot=0))
    assert [r.method for r in comp.rows] == ["none", "temperature", "matrix"]
    assert comp.declined == {toy_scope: "declined from 3 classes on: toy limit"}
    lines = [r.getMessage() for r in caplog.records]
    said = "not run by default: toy_wide (declined from 3 classes on: toy limit)"
    assert said in lines
    assert lines.index(said) < next(i for i, m in enumerate(lines) if "uncalibrated" in m)
    assert results_dict(comp)["declined"] == {toy_scope: "declined from 3 classes on: toy limit"}
    meta = [b.text for b in compare_document(comp, "t", []).body if hasattr(b, "text")]
    assert (
        "Not run by default on this data: toy_wide (declined from 3 classes on: toy limit)." in meta
    )
    named = compare(cal, test, ["toy_wide"], resampling=Resampling(n_boot=0))  # named, it runs
    assert [r.method for r in named.rows] == ["none", "toy_wide"]
    assert named.declined == {}
    assert "declined" not in results_dict(named)  # absent when nothing was left out


def test_matrix_at_60_classes_is_declined_in_words(toy_scope: str) -> None:
    """Matrix scaling's scope declines it from 50 classes on: said, not silently dropped."""
    cal, test = parts(k=60, n=400, probs=False)
    comp = compare(cal, test, None, resampling=Resampling(n_boot=0))
    assert "matrix" not in [r.method for r in comp.rows]
    assert comp.declined["matrix"].startswith("declined from 50 classes on: K (K + 1)")


@pytest.fixture
def toy_costly(monkeypatch: pytest.MonkeyPatch) -> str:
    """The default methods are temperature, vector and toy_costly, a temperature scaling
    whose scope keeps it out of the cross-fitting from 3 classes on."""
    scope = Scope(cross_fit_max_classes=3, cross_fit_reason="toy cost")
    return _toy_default(monkeypatch, "toy_costly", scope, "vector")


def test_a_method_not_cross_fitted_has_its_row_and_is_said(
    toy_costly: str, caplog: pytest.LogCaptureFixture
) -> None:
    cal, test = parts(k=3, n=400, probs=False)
    with caplog.at_level(logging.INFO, logger="calibkit.workflows.compare"):
        comp = compare(cal, test, None, recommend=True, resampling=Resampling(n_boot=0))
    assert [r.method for r in comp.rows] == ["none", "temperature", "vector", toy_costly]
    rec = comp.recommendation
    assert rec is not None
    why = "not cross-fitted from 3 classes on: toy cost"
    assert rec.not_cross_fitted == {toy_costly: why}
    assert toy_costly not in rec.scores
    assert "vector" in rec.scores
    assert f"not cross-fitted: {toy_costly} ({why})" in rec.summary
    assert f"not a candidate: {toy_costly} ({why})" in [r.getMessage() for r in caplog.records]
    assert results_dict(comp)["recommendation"]["not_cross_fitted"] == {toy_costly: why}
    named = compare(
        cal, test, ["temperature", toy_costly], recommend=True, resampling=Resampling(n_boot=0)
    )
    assert named.recommendation is not None
    assert toy_costly in named.recommendation.scores
