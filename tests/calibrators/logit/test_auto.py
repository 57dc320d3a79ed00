"""Tests of the cross-validated automatic choice of calibrator."""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import numpy as np
import pytest
from sklearn.model_selection import StratifiedKFold

from calibkit.calibrators import CALIBRATORS, AutoCalibrator, Calibrator, create_calibrator
from calibkit.calibrators.logit.auto import MARGIN_SE, choose, named_only
from calibkit.core.errors import InputError, NotFittedError, UnknownNameError
from calibkit.core.progress import progress_of
from calibkit.metrics import ece, nll
from tests.calibrators.problems import (
    CIFAR10,
    load_logits,
    needs_cifar10,
    random_problem,
    seeded_split,
)
from tests.conftest import shared_path


def test_scores_are_the_mean_held_out_scores_of_seeded_stratified_folds() -> None:
    z, y = random_problem(300, 3, seed=1)
    auto = AutoCalibrator(methods=["temperature", "isotonic"], n_folds=3, seed=7).fit(z, y)
    folds = StratifiedKFold(n_splits=3, shuffle=True, random_state=7).split(z, y)
    expected: dict[str, list[float]] = {"temperature": [], "isotonic": []}
    for train, test in folds:
        for name, scores in expected.items():
            cal = create_calibrator(name).fit(z[train], y[train])
            scores.append(nll(y[test], probs=cal.predict_proba(z[test])))
    assert auto.cv_fold_scores_ == expected
    assert auto.cv_scores_ == {name: float(np.mean(s)) for name, s in expected.items()}
    best = min(expected, key=lambda name: auto.cv_scores_[name])
    assert auto.chosen_ == best
    # the chosen method is refitted on the whole calibration set
    refit = create_calibrator(best).fit(z, y)
    np.testing.assert_array_equal(auto.predict_proba(z), refit.predict_proba(z))


def test_picks_temperature_when_data_follow_a_temperature_model() -> None:
    z, y = random_problem(1000, 4, seed=2)
    auto = AutoCalibrator(methods=["histogram", "isotonic", "temperature"]).fit(z, y)
    assert auto.chosen_ == "temperature"
    assert auto.cv_scores_["temperature"] < min(auto.cv_scores_["histogram"], 1.0)


def test_ece_criterion_uses_top_label_ece() -> None:
    z, y = random_problem(300, 3, seed=3)
    auto = AutoCalibrator(methods=["histogram"], criterion="ece", n_bins=5, n_folds=2).fit(z, y)
    train, test = next(StratifiedKFold(2, shuffle=True, random_state=0).split(z, y))
    cal = create_calibrator("histogram").fit(z[train], y[train])
    score = ece(y[test], probs=cal.predict_proba(z[test]), n_bins=5)
    assert auto.cv_fold_scores_["histogram"][0] == score


def test_default_candidates_follow_the_registry_and_the_class_count() -> None:
    auto = AutoCalibrator()
    many = auto.candidates(3)
    assert "auto" not in many
    assert "temperature_ece" not in many
    assert {"temperature", "histogram", "histogram_classwise", "isotonic"} <= set(many)
    assert not any(CALIBRATORS.get(name).binary_only for name in many)
    two = auto.candidates(2)
    assert {"platt", "beta"} <= set(two)
    assert set(two) - set(many) == {"platt", "beta"}
    # Neural Clamping, the group calibrators, conformal sets and prior adapters are
    # registered, and never candidates: only calibrators of logits are
    for kind in ("model", "groups", "sets", "priors"):
        assert CALIBRATORS.names(kind=kind), kind
    excluded = {"auto", "temperature_ece", "platt", "beta", *named_only()}
    assert set(many) == set(CALIBRATORS.names(kind="logits")) - excluded
    assert AutoCalibrator(methods=["temperature_ece"]).candidates(3) == ["temperature_ece"]


def test_unknown_names_fail_at_fit_time_and_binary_methods_need_two_classes() -> None:
    z, y = random_problem(100, 3, seed=4)
    auto = AutoCalibrator(methods=["temperature", "not_registered_yet"])  # fine until fit
    with pytest.raises(UnknownNameError, match="not_registered_yet"):
        auto.fit(z, y)
    with pytest.raises(InputError, match="binary-only"):
        AutoCalibrator(methods=["platt"]).fit(z, y)


def test_binary_default_run_and_save_load(tmp_path: Path) -> None:
    z, y = random_problem(200, 2, seed=5)
    auto = AutoCalibrator(n_folds=3).fit(z, y)
    assert set(auto.cv_scores_) == set(auto.candidates(2))
    assert auto.chosen_ == min(auto.cv_scores_, key=lambda name: auto.cv_scores_[name])
    auto.save(tmp_path / "auto.json")
    back = Calibrator.load(tmp_path / "auto.json")
    assert isinstance(back, AutoCalibrator)
    assert back.chosen_ == auto.chosen_
    assert back.cv_scores_ == auto.cv_scores_
    z_new, _ = random_problem(50, 2, seed=6)
    np.testing.assert_array_equal(back.predict_proba(z_new), auto.predict_proba(z_new))
    assert type(back.chosen) is type(auto.chosen)
    back.save(tmp_path / "again.json")  # a loaded calibrator saves the same file
    assert (tmp_path / "again.json").read_text() == (tmp_path / "auto.json").read_text()


def test_summary_and_repr_name_the_choice() -> None:
    z, y = random_problem(200, 3, seed=7)
    auto = AutoCalibrator(methods=["temperature", "histogram"], n_folds=2)
    assert "chosen" not in repr(auto)
    with pytest.raises(NotFittedError):
        auto.summary()
    auto.fit(z, y)
    text = auto.summary()
    assert text.startswith(f"auto chose {auto.chosen_!r}: ")
    assert "(2 stratified folds, seed 0)" in text
    assert f"{auto.chosen_}" in text.splitlines()[2]  # best first
    assert text.count("<- chosen") == 1
    assert repr(auto).endswith(f"chosen={auto.chosen_!r})")


def test_parameter_errors() -> None:
    with pytest.raises(NotFittedError):
        AutoCalibrator().predict_proba(np.zeros((2, 3)))
    for bad in ({"methods": "temperature"}, {"methods": []}, {"methods": ["auto"]},
                {"criterion": "log"}, {"n_folds": 1}, {"rule": "best"},
                {"baseline": "platt"}, {"n_bins": 0}, {"seed": 0.5}):  # fmt: skip
        with pytest.raises(InputError):
            AutoCalibrator(**bad)  # type: ignore[arg-type]


def test_small_data_degrades_instead_of_refusing() -> None:
    """Eight samples: two folds of four (a class of four rows caps them), not a refusal;
    three samples: too few to cross-validate, temperature scaling is fitted and said."""
    z, y = random_problem(8, 2, seed=8)
    auto = AutoCalibrator(methods=["temperature", "isotonic"]).fit(z, y)
    assert auto.folds_used_ == min(5, int(np.bincount(y).min()))
    assert "fewer than 5" in auto.reason_
    tiny = AutoCalibrator().fit(z[:3], np.array([0, 1, 1]))
    assert tiny.chosen_ == "temperature"
    assert tiny.folds_used_ == 0
    assert "too few samples to cross-validate" in tiny.reason_
    assert (
        tiny.summary()
        == "auto chose 'temperature': too few samples to cross-validate: temperature fitted"
    )


def test_a_class_of_one_row_makes_the_folds_unstratified() -> None:
    """100 classes, 300 samples (some class once): no refusal (it used to say
    ``n_folds: expected at most the smallest class count of the calibration set (1)``)."""
    rng = np.random.default_rng(0)
    y = np.concatenate([np.arange(100), rng.integers(0, 100, 200)])
    z = rng.normal(size=(300, 100)) + 3 * np.eye(100)[y]
    auto = AutoCalibrator(methods=["temperature", "vector", "histogram"]).fit(z, y)
    assert "not stratified" in auto.reason_
    assert "vector" not in auto.cv_scores_  # it needs every class in a fold's training part
    assert np.isfinite(auto.predict_proba(z)).all()


def test_the_richer_method_must_beat_the_baseline_beyond_the_rules_margin() -> None:
    """The paired differences decide: a candidate whose mean is lower than the baseline's
    but within the margin (3.5 standard errors; one for ``rule="one_se"``) of it loses to
    the baseline; ``rule="lowest"`` takes it."""
    z, y = random_problem(300, 3, seed=3)
    methods = ["temperature", "vector", "matrix"]
    lowest = AutoCalibrator(methods=methods, rule="lowest").fit(z, y)
    for rule, m in (("margin", MARGIN_SE), ("one_se", 1.0)):
        auto = AutoCalibrator(methods=methods, rule=rule).fit(z, y)
        assert lowest.cv_scores_ == auto.cv_scores_  # the same folds, the same scores
        for name, (d, se) in auto.paired_.items():
            assert se > 0
            # the mean paired difference is the difference of the per-sample means
            assert np.isfinite(d), name
        beating = [n for n, (d, se) in auto.paired_.items() if d + m * se < 0]
        if beating:
            assert auto.chosen_ in beating
        else:
            assert auto.chosen_ == "temperature"
    assert lowest.chosen_ == min(lowest.cv_scores_, key=lambda n: lowest.cv_scores_[n])


def test_the_default_margin_keeps_a_lucky_win_out() -> None:
    """Issue #43, item 6: outputs of a temperature model (TS is the true map), and vector
    scaling beats TS in the folds by 1.1 standard errors, by luck. The old rule (one
    standard error, the default before) chose it, and on fresh draws of the same model its
    NLL is 1.03x TS's; the default (3.5 standard errors) keeps TS."""
    z, y = random_problem(300, 3, seed=35)
    z_new, y_new = random_problem(20_000, 3, seed=1035)
    methods = ["temperature", "vector"]
    auto = AutoCalibrator(methods=methods).fit(z, y)
    d, se = auto.paired_["vector"]
    assert -MARGIN_SE < d / se < -1.0
    assert auto.chosen_ == "temperature"
    assert "by more than 3.5 standard errors" in auto.reason_
    old = AutoCalibrator(methods=methods, rule="one_se").fit(z, y)
    assert old.chosen_ == "vector"
    assert "by more than one standard error (held-out NLL of vector minus temperature's, " in (
        old.reason_
    )
    assert "mean over the samples -0.01182 ± 0.011, one standard error)" in old.reason_
    fresh = {a.chosen_: nll(y_new, probs=a.predict_proba(z_new)) for a in (auto, old)}
    assert fresh["vector"] > 1.02 * fresh["temperature"]


def test_the_rule_on_constructed_differences() -> None:
    """``choose``: a candidate passes when ``d + 3.5 se < 0`` (``one_se``: ``d + se``),
    the lowest mean of those that pass is chosen, else the baseline."""
    means = {"temperature": 0.30, "vector": 0.29, "svs": 0.295, "matrix": 0.28}
    paired = {
        "vector": [-0.010, 0.004],  # 2.5 standard errors: the old rule's, not the default's
        "svs": [-0.005, 0.001],  # 5: passes both
        "matrix": [-0.020, 0.020],  # 1: passes neither (d + se == 0 is not below)
    }
    assert choose(means, paired, "temperature", "margin") == "svs"
    assert choose(means, paired, "temperature", "one_se") == "vector"  # the lower mean
    assert choose(means, paired, "temperature", "lowest") == "matrix"
    at = {"vector": [-0.875, 0.25]}  # exactly 3.5 standard errors (binary fractions)
    assert choose(means, at, "temperature", "margin") == "temperature"
    assert choose(means, {"vector": [-0.876, 0.25]}, "temperature", "margin") == "vector"
    assert AutoCalibrator().rule == "margin"


def test_a_clearly_better_method_is_chosen() -> None:
    """Logits whose classes are miscalibrated each by its own temperature: vector scaling
    is better than one temperature beyond any noise at 3,000 samples."""
    rng = np.random.default_rng(1)
    n, k = 3000, 4
    z = rng.normal(size=(n, k)) * 3
    scale = np.array([0.3, 1.0, 2.5, 4.0])
    p = np.exp(z * scale) / np.exp(z * scale).sum(axis=1, keepdims=True)
    y = np.array([rng.choice(k, p=row) for row in p])
    auto = AutoCalibrator(methods=["temperature", "vector"]).fit(z, y)
    d, se = auto.paired_["vector"]
    assert d + MARGIN_SE * se < 0
    assert auto.chosen_ == "vector"
    assert "beat temperature by more than 3.5 standard errors" in auto.reason_


@pytest.mark.parametrize(
    "gone", [("paired_", "folds_used_", "stratified_", "dropped_"), ("declined_", "same_as_")]
)
def test_a_file_of_before_0_1_0_is_refused(gone: tuple[str, ...]) -> None:
    """Issue #45, item 4: documents saved before the one-standard-error rule or the declared
    scopes (development versions only) are refused naming a missing field, not filled in."""
    z, y = random_problem(200, 3, seed=7)
    doc = AutoCalibrator(methods=["temperature", "histogram"], n_folds=2).fit(z, y).to_json()
    for key in gone:
        del doc["state"][key]
    with pytest.raises(InputError, match=r"^calibkit document: state\.\w+_: expected .*missing"):
        Calibrator.from_json(doc)


@pytest.mark.shared_data
@needs_cifar10
def test_cifar10_test_ece_goes_down() -> None:
    z, y = load_logits(CIFAR10)
    cal, test = seeded_split(len(y), 5000)
    methods = ["temperature", "histogram", "isotonic"]
    auto = AutoCalibrator(methods=methods, n_folds=3).fit(z[cal], y[cal])
    assert auto.chosen_ == "temperature"  # NLL punishes the zeros of the binned methods
    assert ece(y[test], probs=auto.predict_proba(z[test])) < ece(y[test], logits=z[test])


@pytest.mark.slow
@pytest.mark.shared_data
@needs_cifar10
def test_cifar10_default_candidates() -> None:
    z, y = load_logits(CIFAR10)
    cal, test = seeded_split(len(y), 5000)
    auto = AutoCalibrator().fit(z[cal], y[cal])
    assert set(auto.cv_scores_) == set(auto.candidates(10))
    assert ece(y[test], probs=auto.predict_proba(z[test])) < ece(y[test], logits=z[test])


def test_the_matrix_family_enters_unshrunk() -> None:
    # auto's paired comparison with TS is the guard; the candidates' own shrinkage CV nested
    # in it cost minutes on CIFAR-100 and made more single splits worse than TS
    rng = np.random.default_rng(0)
    z = rng.normal(size=(3000, 3)) * 2
    true = z @ np.array([[1.0, 0.8, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.3]]).T
    p = np.exp(true - true.max(1, keepdims=True))
    y = (rng.random(3000)[:, None] > np.cumsum(p / p.sum(1, keepdims=True), 1)).sum(1)
    auto = AutoCalibrator(methods=["temperature", "ms_odir"]).fit(z, y)
    assert auto.chosen_ == "ms_odir"  # an affine miscalibration TS cannot fix
    assert auto.chosen.get_params()["shrink"] == "none"
    assert Calibrator.from_json(auto.to_json()).chosen.get_params()["shrink"] == "none"


def test_the_cross_fitting_reports_each_candidate_and_fold(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A bar step per fold and candidate (on 100 classes this phase ran silent for minutes)."""
    z, y = random_problem(300, 3, seed=1)
    with caplog.at_level(logging.DEBUG, logger="calibkit.calibrators.logit.auto"):
        AutoCalibrator(methods=["temperature", "isotonic"], n_folds=3).fit(z, y)
    steps = [(e.label, e.step, e.total, e.text) for r in caplog.records if (e := progress_of(r))]
    assert [s[1:3] for s in steps] == [(k, 6) for k in range(7)]
    assert steps[1][0] == "cross-fitting 2 methods x 3 folds"
    # fold by fold (each fold's mix of cheap and dear fits alike: an honest time left)
    assert [s[3] for s in steps[1:]] == [
        f"fold {f}/3 {m}" for f in (1, 2, 3) for m in ("temperature", "isotonic")
    ]


@pytest.fixture
def scoped_toy() -> object:
    """A default calibrator registered for real whose declared scope declines 3 classes and
    more (removed afterwards)."""
    from calibkit.calibrators import TemperatureScaling
    from calibkit.calibrators.scope import Scope

    class Toy(TemperatureScaling):
        """Temperature scaling, registered with a scope."""

    scope = Scope(max_classes=3, reason="a toy too dear for many classes")
    CALIBRATORS.register("scoped_toy", scope=scope)(Toy)
    yield
    CALIBRATORS.unregister("scoped_toy")


@pytest.mark.usefixtures("scoped_toy")
def test_default_candidates_leave_out_what_the_declared_scope_declines(tmp_path: Path) -> None:
    assert "scoped_toy" in AutoCalibrator().candidates(2)
    assert "scoped_toy" not in AutoCalibrator().candidates(3)
    z, y = random_problem(300, 3, seed=2)
    auto = AutoCalibrator(n_folds=3).fit(z, y)
    why = "declined from 3 classes on: a toy too dear for many classes"
    assert "scoped_toy" not in auto.cv_scores_
    assert auto.declined_ == {"scoped_toy": why}
    assert f"  scoped_toy           {why}" in auto.summary().splitlines()
    assert auto.reason_.endswith("; declined by their scope: scoped_toy")
    auto.save(tmp_path / "auto.json")
    assert Calibrator.load(tmp_path / "auto.json").declined_ == {"scoped_toy": why}
    # named, a declined method runs
    named = AutoCalibrator(methods=["temperature", "scoped_toy"], n_folds=3).fit(z, y)
    assert "scoped_toy" in named.cv_scores_
    assert named.declined_ == {}


def _counting(monkeypatch: pytest.MonkeyPatch, klass: type[Calibrator]) -> list[Calibrator]:
    """The calibrators of ``klass`` whose ``_fit`` runs from now on, in order."""
    fits: list[Calibrator] = []
    fit = klass._fit

    def counted(self: Calibrator, *args: object, **kwargs: object) -> None:
        fits.append(self)
        fit(self, *args, **kwargs)

    monkeypatch.setattr(klass, "_fit", counted)
    return fits


def _probs_problem(n: int = 600) -> tuple[np.ndarray, np.ndarray]:
    z, y = random_problem(n, 3, seed=4)
    z[:, 0] *= 2.5  # a miscalibration of one class that temperature scaling cannot fix
    p = np.exp(z - z.max(1, keepdims=True))
    return p / p.sum(1, keepdims=True), y


def test_on_probabilities_dirichlet_takes_ms_odirs_scores_unfitted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from calibkit.calibrators.logit.linear import DirichletCalibration, MatrixScalingODIR
    from calibkit.core.outputs import as_outputs

    p, y = _probs_problem()
    odir = _counting(monkeypatch, MatrixScalingODIR)
    dirichlet = _counting(monkeypatch, DirichletCalibration)
    methods = ["temperature", "ms_odir", "dirichlet"]
    auto = AutoCalibrator(methods=methods, n_folds=3).fit_outputs(as_outputs(y, probs=p))
    assert dirichlet == []  # never fitted
    assert len(odir) == 1 + 3  # tuned once on the whole set, then once per fold
    assert auto.same_as_ == {"dirichlet": "ms_odir"}
    assert auto.cv_fold_scores_["dirichlet"] == auto.cv_fold_scores_["ms_odir"]
    assert auto.paired_["dirichlet"] == auto.paired_["ms_odir"]
    assert auto.chosen_ in ("temperature", "ms_odir")  # a tie goes to the first listed
    assert "(ms_odir's scores: the same map on probabilities)" in auto.summary()
    # the rule holds: Dirichlet fitted on a fold gives ms_odir's held-out score
    train, test = next(StratifiedKFold(3, shuffle=True, random_state=0).split(p, y))
    z = np.log(p)
    lam = odir[0].reg_lambda_  # type: ignore[attr-defined]
    own = create_calibrator("dirichlet", shrink="none", reg_lambda=lam).fit(z[train], y[train])
    score = nll(y[test], probs=own.predict_proba(z[test]))
    assert score == pytest.approx(auto.cv_fold_scores_["ms_odir"][0], rel=1e-6)
    # on logits both are fitted
    dirichlet.clear()
    on_logits = AutoCalibrator(methods=methods, n_folds=3).fit(z, y)
    assert on_logits.same_as_ == {}
    assert len(dirichlet) == 1 + 3  # tuned once (the refit if chosen), once per fold


def test_a_cross_validated_penalty_is_tuned_once_on_autos_folds(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """MS-ODIR's own search runs once, on the whole calibration set with auto's folds and
    seed; each fold fits the lambda it chose; that whole-set fit is the refit if chosen."""
    from calibkit.calibrators.logit.linear import MatrixScalingODIR

    p, y = _probs_problem(1500)
    z = np.log(p)
    odir = _counting(monkeypatch, MatrixScalingODIR)
    with caplog.at_level(logging.DEBUG, logger="calibkit.calibrators.logit.auto"):
        auto = AutoCalibrator(methods=["temperature", "ms_odir"], n_folds=4, seed=3).fit(z, y)
    whole, *folds = odir
    assert whole.get_params()["reg_lambda"] is None
    assert (whole.get_params()["n_folds"], whole.get_params()["seed"]) == (4, 3)
    assert whole.cv_lambdas_.size > 1  # type: ignore[attr-defined]
    assert [c.get_params()["reg_lambda"] for c in folds] == [whole.reg_lambda_] * 4  # type: ignore[attr-defined]
    assert auto.chosen_ == "ms_odir"
    assert auto.chosen is whole
    labels = [e.label for r in caplog.records if (e := progress_of(r))]
    assert "tuning 1 methods' penalties once" in labels


def test_the_baseline_is_fitted_first_in_each_fold_on_the_arrays_all_share(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """In each fold the baseline's temperature is fitted first, and structured matrix
    scaling's first stage (the same fit, fitted again: nothing is kept between fits) gets
    the very same training array."""
    import calibkit.calibrators.logit.temperature as temperature

    solves: list[tuple[str, np.ndarray]] = []
    solve, ts_fit = temperature.fit_inverse_temperature, temperature.TemperatureScaling._fit
    inside: list[str] = []

    def recorded(logits: np.ndarray, labels: np.ndarray, *args: object, **kw: object) -> float:
        solves.append((inside[-1] if inside else "sms", logits))
        return solve(logits, labels, *args, **kw)  # type: ignore[arg-type]

    def baseline_fit(self: Calibrator, *args: object, **kwargs: object) -> None:
        inside.append("temperature")
        try:
            ts_fit(self, *args, **kwargs)  # type: ignore[arg-type]
        finally:
            inside.pop()

    monkeypatch.setattr(temperature, "fit_inverse_temperature", recorded)
    monkeypatch.setattr(temperature.TemperatureScaling, "_fit", baseline_fit)
    z, y = random_problem(300, 3, seed=6)
    AutoCalibrator(methods=["sms", "temperature"], n_folds=3).fit(z, y)
    folds: list[tuple[np.ndarray, list[str]]] = []  # each training array and who solved on it
    for who, logits in solves:
        if logits.shape[0] == 300:  # the whole set's refit
            continue
        if folds and folds[-1][0] is logits:
            folds[-1][1].append(who)
        else:
            folds.append((logits, [who]))
    assert len(folds) == 3
    for _, who in folds:
        assert who == ["temperature", "sms"]


def test_a_callers_identical_tuned_fit_is_taken_instead_of_tuning_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """fit_outputs(fitted=): a TUNED_ONCE candidate fitted with the parameters auto tunes
    it with, on the same kind of input, is its tuned fit (its search not run again, the
    same scores as auto's own tuning); one fitted otherwise (another seed, shrunk, declared
    logits on probabilities) is tuned by auto as before."""
    from calibkit.calibrators.logit.linear import MatrixScalingODIR
    from calibkit.core.outputs import as_outputs

    p, y = _probs_problem(900)
    out = as_outputs(y, probs=p)
    z = out.as_logits()
    methods = ["temperature", "ms_odir"]
    own = AutoCalibrator(methods=methods, n_folds=3, seed=2).fit_outputs(out)
    tuned = {"shrink": "none", "n_folds": 3}
    same = create_calibrator("ms_odir", **tuned, seed=2).fit(z, y, input_kind="probs")
    other = create_calibrator("ms_odir", **tuned, seed=5).fit(z, y, input_kind="probs")
    undeclared = create_calibrator("ms_odir", **tuned, seed=2).fit(z, y)  # logits
    odir = _counting(monkeypatch, MatrixScalingODIR)
    auto = AutoCalibrator(methods=methods, n_folds=3, seed=2)
    auto.fit_outputs(out, fitted={"ms_odir": same, "temperature": same})
    assert len(odir) == 3  # the folds only: no whole-set search
    assert all(c.get_params()["reg_lambda"] == same.reg_lambda_ for c in odir)  # type: ignore[attr-defined]
    assert auto.cv_fold_scores_ == own.cv_fold_scores_
    assert auto.chosen_ == own.chosen_
    shrunk = create_calibrator("ms_odir", n_folds=3, seed=2).fit(z, y, input_kind="probs")
    for given in (other, shrunk, undeclared):
        odir.clear()
        AutoCalibrator(methods=methods, n_folds=3, seed=2).fit_outputs(
            out, fitted={"ms_odir": given}
        )
        assert len(odir) == 1 + 3  # not the same tuning: auto's own search, then the folds


def _split(stem: str, n: int, rep: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """The calibration and test rows of ``experiments/intervals/auto_rule.py``'s draw
    ``rep`` of the file ``stem`` at ``n`` samples (its seed: the draw's name hashed)."""
    digest = hashlib.sha256(f"auto_rule/{stem}-n{n}-r{rep}".encode()).digest()
    perm = np.random.default_rng(int.from_bytes(digest[:4], "little")).permutation(rows)
    return perm[:n], perm[n:]


#: The reduced measurement's draws: fresh ones (not among the 620 the margin was chosen
#: on, ``experiments/intervals/auto_rule.md``), with 7 at 300 and 1,000 samples where the
#: old rule's choice is above 1.01x TS's test NLL.
REDUCED = ((300, (14, 15)), (1_000, (14, 15)), (5_000, (12,)))


@pytest.mark.slow
@pytest.mark.shared_data
def test_on_fresh_data_the_choice_is_never_worse_than_ts_by_more_than_1_percent() -> None:
    """Issue #43, item 6, reduced (``experiments/intervals/auto_rule.md``): the eight
    CIFAR-10 prediction files, a calibration set of 300, 1,000 or 5,000 samples and the rest
    of the file as a fresh test set, 40 draws. The default rule's choice never has a test
    NLL above 1.01x temperature scaling's; the old rule's (one standard error) does, and at
    5,000 samples the rule still picks the gains."""
    from calibkit.calibrators.logit.temperature import TemperatureScaling
    from calibkit.core.outputs import as_outputs

    files = sorted(shared_path("predictions").glob("cifar10_*.npz"))
    assert len(files) == 8
    new: dict[str, float] = {}
    old: dict[str, float] = {}
    for path in files:
        with np.load(path) as data:
            p, y = data["probs"].astype(np.float64), data["labels"]
        p /= p.sum(axis=1, keepdims=True)
        for n, reps in REDUCED:
            for rep in reps:
                name = f"{path.stem}-n{n}-r{rep}"
                cal_rows, test_rows = _split(path.stem, n, rep, y.shape[0])
                cal = as_outputs(y[cal_rows], probs=p[cal_rows])
                z_test, y_test = np.log(p[test_rows]), y[test_rows]
                ts = TemperatureScaling().fit(cal.as_logits(), cal.labels, input_kind="probs")
                base = nll(y_test, probs=ts.predict_proba(z_test))
                auto = AutoCalibrator().fit_outputs(cal)
                new[name] = nll(y_test, probs=auto.predict_proba(z_test)) / base
                was = choose(auto.cv_scores_, auto.paired_, "temperature", "one_se")
                if was == auto.chosen_:
                    old[name] = new[name]
                    continue
                # the same folds and fits: the old rule's choice, refitted as it refitted it
                then = AutoCalibrator(methods=["temperature", was], rule="one_se")
                then.fit_outputs(cal)
                assert then.chosen_ == was, name
                old[name] = nll(y_test, probs=then.predict_proba(z_test)) / base
    worst = max(new, key=lambda name: new[name])
    assert new[worst] <= 1.01, (worst, new[worst])
    assert sum(ratio > 1.01 for ratio in old.values()) >= 4, old  # the test can fail
    at_5000 = [ratio for name, ratio in new.items() if name.endswith("-n5000-r12")]
    assert float(np.median(at_5000)) < 0.99, at_5000
