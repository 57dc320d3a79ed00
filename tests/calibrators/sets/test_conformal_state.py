"""A saved conformal predictor is cross-checked on load (issue 32): its thresholds lie in
the range its score can take (declared once, beside each score), are infinite only where
``allow_full_sets=True`` let too few rows through, and equal the quantile of the stored
calibration scores; its calibrator agrees with its parameters. A tampered file is refused
naming the file, the field and what is allowed, by the library and by ``calibkit apply``.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from calibkit.calibrators import ConformalClassifier, load
from calibkit.calibrators.sets.conformal_scores import RAPS
from calibkit.cli import main
from calibkit.core.errors import InputError
from tests.calibrators.problems import random_problem

#: Each score's range on 3 classes, by hand: LAC and APS in [0, 1]; RAPS adds at most
#: 0.1 * (3 - 1); SAPS's last rank is below 1 + 0.2 * (3 - 1).
RANGES = {"lac": "[0, 1]", "aps": "[0, 1]", "raps": "[0, 1.2]", "saps": "[0, 1.4]"}
#: The tampered thresholds of the issue: every set empty, or every set full (infinity as
#: calibkit encodes it, and as the JSON literal ``Infinity`` that Python's json reads).
TAMPERED = [-5.0, 1e300, {"__float__": "inf"}, float("inf")]


@functools.cache
def _document(score: str, calibrator: str | None = "temperature", **params: Any) -> str:
    z, y = random_problem(400, 3, seed=0)
    cp = ConformalClassifier(conformity_score=score, alpha=0.1, calibrator=calibrator, **params)
    return json.dumps(cp.fit(z, y).to_json())


def _refused(tmp_path: Path, doc: dict[str, Any], *parts: str) -> str:
    path = tmp_path / "tampered.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(InputError) as info:
        load(path)
    message = str(info.value)
    assert message.startswith(f"calibkit file {path}: "), message
    for part in parts:
        assert part in message, (part, message)
    return message


def _thresholds(doc: dict[str, Any]) -> list[Any]:
    return doc["state"]["thresholds_"]["__ndarray__"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("value", TAMPERED, ids=["negative", "huge", "infinite", "Infinity"])
@pytest.mark.parametrize("score", RANGES)
def test_a_threshold_outside_the_score_range_is_refused(
    score: str, value: object, tmp_path: Path
) -> None:
    doc = json.loads(_document(score))
    doc["state"]["thresholds_"]["__ndarray__"] = [value] * 3
    _refused(tmp_path, doc, "state.thresholds_", f"values in {RANGES[score]}", repr(score))


@pytest.mark.parametrize("mondrian", [False, True])
def test_a_threshold_in_range_but_not_the_stored_quantile_is_refused(
    mondrian: bool, tmp_path: Path
) -> None:
    doc = json.loads(_document("lac", mondrian=mondrian))
    thresholds = _thresholds(doc)
    thresholds[:] = [min(t + 0.05, 1.0) for t in thresholds]  # still in [0, 1]
    _refused(tmp_path, doc, "state.thresholds_", "quantiles of the stored label_scores_")


def test_one_threshold_changed_without_mondrian_is_refused(tmp_path: Path) -> None:
    doc = json.loads(_document("aps"))
    _thresholds(doc)[1] = 0.5
    _refused(tmp_path, doc, "state.thresholds_", "one value for every class")


def test_a_stored_score_outside_the_range_is_refused(tmp_path: Path) -> None:
    doc = json.loads(_document("raps"))
    doc["state"]["label_scores_"]["__ndarray__"][-1] = 7.0  # still sorted
    _refused(tmp_path, doc, "state.label_scores_", "values in [0, 1.2]", "7.0")


def _full_sets_document(allow: bool) -> dict[str, Any]:
    z, y = random_problem(6, 3, seed=0)  # alpha 0.1 needs 9 rows: the quantile is infinite
    cp = ConformalClassifier(alpha=0.1, calibrator=None, allow_full_sets=True).fit(z, y)
    doc = cp.to_json()
    doc["params"]["allow_full_sets"] = allow
    return doc


def test_infinite_thresholds_load_only_where_allow_full_sets_let_them(tmp_path: Path) -> None:
    path = tmp_path / "full.json"
    path.write_text(json.dumps(_full_sets_document(True)), encoding="utf-8")
    assert load(path).predict_set(np.zeros((2, 3))).all()  # the sets asked for: full
    _refused(tmp_path, _full_sets_document(False), "state.n_calibration_", "at least 9")
    doc = _full_sets_document(True)
    _thresholds(doc)[:] = [0.5] * 3
    _refused(tmp_path, doc, "state.thresholds_", "expected inf", "0.5 at index 0")


def test_class_counts_must_add_up_to_the_calibration_rows(tmp_path: Path) -> None:
    doc = json.loads(_document("aps", calibrator=None))
    doc["state"]["n_calibration_"] += 1
    doc["state"]["class_counts_"]["__ndarray__"][0] += 1  # the stored rows are one fewer
    _refused(tmp_path, doc, "state.")


# ----- the calibrator underneath agrees with the parameters -----------------------------------
def test_a_deleted_calibrator_is_refused_not_replaced_by_softmax(tmp_path: Path) -> None:
    doc = json.loads(_document("aps"))
    doc["state"]["calibrator_"] = None
    _refused(tmp_path, doc, "state.calibrator_", "a fitted 'temperature' calibrator", "got null")


def test_a_calibrator_where_none_is_named_is_refused(tmp_path: Path) -> None:
    doc = json.loads(_document("aps"))
    doc["params"]["calibrator"] = None
    _refused(tmp_path, doc, "state.calibrator_", "null, as params.calibrator is null")


def test_a_calibrator_of_another_method_is_refused(tmp_path: Path) -> None:
    doc = json.loads(_document("aps"))
    doc["params"]["calibrator"] = "histogram"
    _refused(tmp_path, doc, "state.calibrator_", "'histogram'", "got a fitted 'temperature'")


def test_a_calibrator_with_other_parameters_is_refused(tmp_path: Path) -> None:
    doc = json.loads(_document("aps"))
    doc["state"]["calibrator_"]["params"]["t_max"] = 20.0  # its temperature is still inside
    _refused(tmp_path, doc, "state.calibrator_.params", "'temperature'")


def test_a_calibrator_of_another_class_count_is_refused(tmp_path: Path) -> None:
    doc = json.loads(_document("aps"))
    doc["state"]["calibrator_"]["state"]["n_classes_"] = 4
    _refused(tmp_path, doc, "state.calibrator_.n_classes_", "3 classes", "got 4")


def test_calibkit_apply_refuses_a_tampered_threshold_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    z, y = random_problem(50, 3, seed=1)
    np.savez(tmp_path / "preds.npz", logits=z, labels=y)
    doc = json.loads(_document("raps"))
    _thresholds(doc)[:] = [-5.0] * 3
    (tmp_path / "cp.json").write_text(json.dumps(doc), encoding="utf-8")
    before = sorted(p.name for p in tmp_path.iterdir())
    capsys.readouterr()
    assert main(["apply", "cp.json", "preds.npz", "--out", "sets.npz"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("calibkit: error: calibkit file cp.json: state.thresholds_: expected")
    assert "values in [0, 1.2]" in err
    assert "-5.0" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


# ----- the score the quantile was computed with (issue #42) ----------------------------------
@functools.cache
def _raps() -> tuple[ConformalClassifier, np.ndarray, np.ndarray]:
    """RAPS (penalty 0.1, k_reg 1) at alpha 0.1 over temperature scaling on 4,000 rows of
    10 classes, and 4,000 test rows."""
    z, y = random_problem(4000, 10, seed=0, temperature=1.5, scale=2.5)
    test = random_problem(4000, 10, seed=1, temperature=1.5, scale=2.5)
    cp = ConformalClassifier(conformity_score="raps", alpha=0.1, calibrator="temperature").fit(z, y)
    return cp, *test


def _coverage(cp: ConformalClassifier) -> float:
    _, z, y = _raps()
    return float(cp.predict_set(z)[np.arange(y.size), y].mean())


#: The edits of the issue, and the coverage each gave when it loaded (fitted: 0.907 for a
#: target of 0.9): the stored scores and quantile hold for the fitted score only.
EDITS = [("k_reg", 0, 0.873), ("penalty", 0.5, 0.651), ("randomized", True, 0.916)]


@pytest.mark.parametrize(("param", "value", "coverage"), EDITS)
def test_an_edited_score_parameter_is_refused(
    param: str, value: object, coverage: float, tmp_path: Path
) -> None:
    cp = _raps()[0]
    assert round(_coverage(cp), 3) == 0.907
    doc = cp.to_json()
    score = {"name": "raps", "penalty": 0.1, "k_reg": 1}  # the score saved with its parameters
    assert doc["params"]["conformity_score"] == score
    assert doc["state"]["fitted_with_"] == {"conformity_score": score, "randomized": False}
    if param == "randomized":
        doc["params"][param], field, fitted = value, param, cp.randomized
    else:
        doc["params"]["conformity_score"][param] = value
        field, fitted = f"conformity_score.{param}", score[param]
    message = _refused(tmp_path, doc, f"params.{field}: expected {fitted!r}")
    assert message.endswith(f"got {value!r}"), message
    # what the edit gave before it was refused: the same stored quantile, other sets
    params = cp.get_params()
    if param == "randomized":
        params[param] = value
    else:
        params["conformity_score"] = RAPS(**{**cp.conformity_score.get_params(), param: value})
    edited = ConformalClassifier(**params)
    edited.__dict__.update({k: v for k, v in cp.__dict__.items() if k.endswith("_")})
    assert round(_coverage(edited), 3) == coverage


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ({"penalty": -1.0}, "params.conformity_score.penalty: expected a finite number >= 0"),
        ({"k_reg": 1.5}, "params.conformity_score.k_reg: expected an integer"),
        ({"weight": 0.2}, "params.conformity_score: expected parameters among penalty, k_reg"),
        ({"name": "rasp"}, "params.conformity_score: expected one of aps, lac, raps, saps"),
    ],
)
def test_a_saved_score_is_checked_field_by_field(
    edit: dict[str, object], message: str, tmp_path: Path
) -> None:
    doc = _raps()[0].to_json()
    doc["params"]["conformity_score"].update(edit)
    _refused(tmp_path, doc, message)


def test_a_score_object_round_trips_through_a_file(tmp_path: Path) -> None:
    cp, z, _ = _raps()
    cp.save(tmp_path / "cp.json")
    back = load(tmp_path / "cp.json")
    assert isinstance(back, ConformalClassifier)
    assert isinstance(back.conformity_score, RAPS)
    assert back.conformity_score.get_params() == {"penalty": 0.1, "k_reg": 1}
    assert np.array_equal(back.predict_set(z), cp.predict_set(z))


def test_calibkit_apply_refuses_an_edited_k_reg_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    cp, z, y = _raps()
    doc = cp.to_json()
    doc["params"]["conformity_score"]["k_reg"] = 0
    Path("cp.json").write_text(json.dumps(doc), encoding="utf-8")
    np.savez("preds.npz", logits=z, labels=y)
    capsys.readouterr()
    assert main(["apply", "cp.json", "preds.npz", "-o", "out.npz"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "Traceback" not in err
    assert err.startswith(
        "calibkit: error: calibkit file cp.json: params.conformity_score.k_reg: expected 1"
    ), err
    assert not Path("out.npz").exists()
