"""What the rows of a comparison say about each other: equal maps, changed accuracy, the
method auto chose, matrix scaling where it can be fitted, the debiased RMSCE beside the RMSCE."""

from __future__ import annotations

import numpy as np
import pytest

from calibkit import Resampling
from calibkit.calibrators import create_calibrator
from calibkit.core.outputs import ClassifierOutputs, as_outputs
from calibkit.core.splits import split_outputs
from calibkit.reporting.compare_report import compare_document, results_dict
from calibkit.reporting.document import Paragraph, Section, Table
from calibkit.reporting.tables import (
    ACCURACY_MARK,
    comparison_tables,
    format_comparison_summary,
    marks_note,
)
from calibkit.workflows.compare import compare
from calibkit.workflows.comparison import Comparison
from calibkit.workflows.methods import applicable_methods, matrix_fits, same_fit, same_maps

#: The default list for the 10-class prediction files (as in every earlier report).
TEN_CLASSES = [
    "temperature",
    "temperature_ece",
    "vector",
    "matrix",
    "ms_odir",
    "dirichlet",
    "svs",
    "sms",
    "sms_cv",
    "histogram",
    "histogram_classwise",
    "isotonic",
]


def parts(k: int, probs: bool = False, n: int = 800) -> tuple[ClassifierOutputs, ...]:
    rng = np.random.default_rng(1)
    z = rng.normal(size=(n, k)) * 3.0
    y = np.argmax(z / 2.0 + rng.gumbel(size=z.shape), axis=1)
    p = np.exp(z - z.max(1, keepdims=True))
    out = as_outputs(y, probs=p / p.sum(1, keepdims=True)) if probs else as_outputs(y, logits=z)
    return split_outputs(out, 0.5, seed=0)


def _under_the_first_table(comp: Comparison) -> str:
    """The paragraphs of the report's first table section (the binned errors)."""
    document = compare_document(comp, "t", [])
    first = next(
        b for b in document.body if isinstance(b, Section) and b.title.startswith("Binned")
    )
    assert isinstance(first.blocks[0], Table)
    return " ".join(b.text for b in first.blocks if isinstance(b, Paragraph))


def test_matrix_is_left_out_where_it_cannot_be_fitted() -> None:
    assert applicable_methods(10) == TEN_CLASSES
    assert applicable_methods(10, 5000) == TEN_CLASSES
    assert "matrix" not in applicable_methods(100, 50_000)
    assert "matrix" not in applicable_methods(10, 219)
    assert (matrix_fits(10, 220), matrix_fits(49, 49 * 50 * 2), matrix_fits(50, 10**9)) == (
        True,
        True,
        False,
    )


def test_same_map_rules() -> None:
    names = ["none", "dirichlet", "ms_odir", "vector", "matrix"]
    assert same_maps(names, 2, "probs") == {"ms_odir": "dirichlet"}
    assert same_maps(names, 3, "probs") == {"ms_odir": "dirichlet"}
    # shrunk towards TS by different penalties, binary vector and matrix are no twins
    assert same_maps(names, 2, "logits") == {}
    assert same_maps(names, 3, "logits") == {}
    assert same_maps(["ms_odir"], 2, "probs") == {}


@pytest.mark.parametrize(
    ("k", "probs", "pair"), [(k, True, ("ms_odir", "dirichlet")) for k in (3, 2)]
)
def test_marked_twins_give_the_same_numbers(k: int, probs: bool, pair: tuple[str, str]) -> None:
    cal, test = parts(k, probs)
    comp = compare(cal, test, list(pair), resampling=Resampling(n_boot=0))
    assert comp.same_maps == {pair[1]: pair[0]}
    a, b = (comp.row(m).evaluation.values for m in pair)
    for name in ("nll", "ece", "brier"):
        assert a[name] == pytest.approx(b[name], rel=1e-4, abs=1e-6)
    label = comparison_tables(comp)[0].rows[2][0].text
    assert label.startswith(f"{pair[1]} (= {pair[0]})")
    assert "'(= X)' marks" in marks_note(comp)
    why = f"{pair[0]} and {pair[1]} fit the same map here: Dirichlet calibration is"
    assert why in _under_the_first_table(comp)


def test_matrix_and_ms_odir_are_explained_when_their_fits_agree() -> None:
    """Both shrunk towards temperature scaling, they choose the same strength here: the
    report, the terminal summary and results.json say they are the same map, and why."""
    cal, test = parts(3, n=1200)
    comp = compare(cal, test, ["temperature", "matrix", "ms_odir"], resampling=Resampling(n_boot=0))
    s = comp.row("matrix").params["shrink_strength"]
    assert s == comp.row("ms_odir").params["reg_lambda"]
    assert comp.same_maps == {"ms_odir": "matrix"}
    a, b = (comp.row(m).evaluation.values for m in ("matrix", "ms_odir"))
    assert a["nll"] == pytest.approx(b["nll"], rel=1e-6)
    why = "matrix and ms_odir fit the same map here: shrunk towards temperature scaling"
    note = _under_the_first_table(comp)
    assert why in note
    assert f"both chose s = {s:g} by cross-validation" in note
    assert why in " ".join(format_comparison_summary(comp).split())
    labels = [row[0].text for row in comparison_tables(comp)[0].rows]
    assert labels == ["none", "temperature", "matrix", "ms_odir (= matrix)"]
    methods = results_dict(comp)["methods"]
    assert [m["same_map_as"] for m in methods] == [None, None, None, "matrix"]
    given = {"ms_odir": {"reg_lambda": s}}  # lam given equal to matrix's choice: the same
    comp = compare(cal, test, ["matrix", "ms_odir"], params=given, resampling=Resampling(n_boot=0))
    assert comp.same_maps == {"ms_odir": "matrix"}
    assert f"matrix chose s = {s:g} by cross-validation" in _under_the_first_table(comp)


def test_matrix_and_ms_odir_are_not_twins_when_their_problems_differ() -> None:
    """A given lam (0.5, outside matrix's grid) or matrix without shrinkage: different maps,
    no mark, no note."""
    cal, test = parts(3, n=1200)
    for params in ({"ms_odir": {"reg_lambda": 0.5}}, {"matrix": {"shrink": "none"}}):
        comp = compare(
            cal, test, ["matrix", "ms_odir"], params=params, resampling=Resampling(n_boot=0)
        )
        assert comp.same_maps == {}
        assert "(= X)" not in marks_note(comp)
        note = _under_the_first_table(comp)  # the marks and the metrics' meanings only
        assert "same map" not in note
        assert "by cross-validation" not in note
        assert "same map" not in format_comparison_summary(comp)
        nll = [comp.row(m).evaluation.values["nll"] for m in ("matrix", "ms_odir")]
        assert abs(nll[0] - nll[1]) > 1e-6


def test_same_fit_follows_the_row_order_and_dirichlet_on_probabilities() -> None:
    cal, _ = parts(3, probs=True, n=1200)
    z, y = cal.as_logits(), cal.labels
    fits = {m: create_calibrator(m).fit(z, y) for m in ("matrix", "dirichlet")}
    later = {"dirichlet": fits["dirichlet"]}
    assert same_fit(later, "matrix", fits["matrix"], "probs") is not None  # either order
    assert same_fit(later, "matrix", fits["matrix"], "logits") is None  # a rule for ms_odir
    assert same_fit({}, "matrix", fits["matrix"], "probs") is None


def test_methods_that_change_the_accuracy_are_flagged() -> None:
    cal, test = parts(4)
    comp = compare(
        cal, test, ["temperature", "vector", "histogram_classwise"], resampling=Resampling(n_boot=0)
    )
    correct = {r.method: round(r.evaluation.values["accuracy"] * comp.n_test) for r in comp.rows}
    changed = [m for m, c in correct.items() if c != correct["none"]]
    assert "temperature" not in changed
    assert changed  # the per-class maps change some predicted classes here
    assert comp.accuracy_changed == changed
    labels = {row[0].text.split()[0]: row[0].text for row in comparison_tables(comp)[0].rows}
    for method, label in labels.items():
        assert label.endswith(ACCURACY_MARK) == (method in changed)
    assert ACCURACY_MARK in marks_note(comp)


def test_auto_names_the_method_it_chose() -> None:
    cal, test = parts(3)
    comp = compare(cal, test, ["auto"], resampling=Resampling(n_boot=0))
    row = comp.row("auto")
    assert row.chosen in TEN_CLASSES
    params = results_dict(comp, "t")["methods"][1]["params"]
    assert params["chosen"] == row.chosen
    fitted = next(t for t in comparison_tables(comp) if t.title == "Fitted calibrators")
    assert fitted.rows[1][1].text.startswith(f"chosen={row.chosen}")
    assert comp.rows[0].chosen is None


def test_the_debiased_rmsce_stands_beside_the_rmsce() -> None:
    """An L2 quantity beside the L2 error it estimates, after the L1 errors (ECEs)."""
    cal, test = parts(3)
    binned = comparison_tables(
        compare(cal, test, ["temperature"], resampling=Resampling(n_boot=5))
    )[0]
    assert binned.header == [
        "Method",
        "ECE",
        "ECE floor",
        "Adaptive ECE",
        "Adaptive ECE floor",
        "RMSCE",
        "Debiased RMSCE",
    ]


def test_auto_is_marked_as_the_method_it_chose_when_that_has_a_row() -> None:
    cal, test = parts(3)
    comp = compare(cal, test, ["temperature", "histogram", "auto"], resampling=Resampling(n_boot=0))
    chosen = comp.row("auto").chosen
    assert chosen is not None
    assert comp.same_maps.get("auto") == (
        chosen if chosen in ("temperature", "histogram") else None
    )


@pytest.fixture
def extra_entries() -> object:
    """Two calibrators registered for real with metadata, removed afterwards: one run only
    when named (``default=False``), one placed first in reports (``order=-1``)."""
    from calibkit.calibrators import CALIBRATORS, TemperatureScaling

    class NamedOnly(TemperatureScaling):
        """Temperature scaling, registered as a method run only when named."""

    class First(TemperatureScaling):
        """Temperature scaling, registered to come first."""

    CALIBRATORS.register("named_only_toy", default=False)(NamedOnly)
    CALIBRATORS.register("first_toy", order=-1)(First)
    yield
    CALIBRATORS.unregister("named_only_toy")
    CALIBRATORS.unregister("first_toy")


@pytest.mark.usefixtures("extra_entries")
def test_default_and_order_on_the_entry_drive_compare_and_auto() -> None:
    from calibkit.calibrators import AutoCalibrator
    from calibkit.calibrators.logit.auto import named_only

    assert applicable_methods(10) == ["first_toy", *TEN_CLASSES]
    candidates = AutoCalibrator().candidates(10)
    assert candidates[0] == "first_toy"
    assert "named_only_toy" not in candidates
    assert "named_only_toy" in named_only()
    cal, test = parts(3)
    comp = compare(cal, test, resampling=Resampling(n_boot=0))
    methods = [row.method for row in comp.rows]
    assert methods[:2] == ["none", "first_toy"]
    assert "named_only_toy" not in methods
    named = compare(
        cal, test, ["named_only_toy"], resampling=Resampling(n_boot=0)
    )  # named, it runs
    assert [row.method for row in named.rows] == ["none", "named_only_toy"]
