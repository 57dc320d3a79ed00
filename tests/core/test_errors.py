"""calibkit's error types cross process boundaries intact (workers and Ray send them pickled)."""

from __future__ import annotations

import pickle

import pytest

from calibkit.calibrators.estimator import _NoTransformError
from calibkit.cli.parser import UsageError
from calibkit.core.errors import CalibkitError, InputError, NotFittedError, UnknownNameError
from calibkit.metrics.calibration_tests import UndefinedTestError
from calibkit.study.run.executors import StudyFailed


@pytest.mark.parametrize(
    "error",
    [
        InputError("n_bins", "an integer >= 2", "1"),
        UnknownNameError("method", "tempreature", ["temperature", "histogram"]),
        NotFittedError("temperature: call fit first"),
        UsageError("unrecognized arguments: --x"),
        _NoTransformError("transform", "a calibrator that outputs logits", "isotonic"),
        StudyFailed([("mlp seed 1", "RuntimeError: boom")], 1),
        UndefinedTestError("hosmer_lemeshow", "too few distinct confidences"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_every_error_type_survives_pickling(error: CalibkitError) -> None:
    error.add_note("a note added on the way")
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is type(error)
    assert str(back) == str(error)
    assert back.args == error.args
    assert vars(back) == vars(error)  # argument, expected, got (or kind, name, valid), notes
    if isinstance(error, InputError):
        assert (back.argument, back.expected, back.got) == (
            error.argument,
            error.expected,
            error.got,
        )


def test_every_calibkit_error_class_is_covered() -> None:
    """A new error type joins the round-trip above (its module named here)."""
    import calibkit.calibrators.estimator
    import calibkit.cli.parser
    import calibkit.study.run.executors  # noqa: F401 (defines StudyFailed)

    def subclasses(cls: type) -> set[type]:
        found = set(cls.__subclasses__())
        return found | {s for c in found for s in subclasses(c)}

    # calibkit's own (an experiment beside the library may define its own in this process)
    names = {c.__name__ for c in subclasses(CalibkitError) if c.__module__.startswith("calibkit")}
    covered = {"InputError", "UnknownNameError", "NotFittedError", "UsageError"}
    assert names <= covered | {"_NoTransformError", "StudyFailed", "UndefinedTestError"}, names


def test_an_unknown_name_suggests_the_nearest_only_when_one_is_near() -> None:
    from calibkit.core.errors import UnknownNameError

    near = UnknownNameError("calibrator", "temprature", ["temperature", "vector", "matrix"])
    assert str(near).endswith("got 'temprature' (did you mean 'temperature'?)")
    far = UnknownNameError("calibrator", "xyz", ["temperature", "vector", "matrix"])
    assert str(far).endswith("got 'xyz'")
    assert far.valid == ["temperature", "vector", "matrix"]


@pytest.mark.parametrize(
    ("name", "suggestion"),
    [
        ("TEMPERATURE", "temperature"),
        ("Temperature", "temperature"),
        ("SMS", "sms"),  # too short for difflib's ratio once the case differs
        ("Sms_Cv", "sms_cv"),
        ("TEMPRATURE", "temperature"),  # a typo in another case
        ("LAC", "lac"),
    ],
)
def test_a_wrong_case_name_is_suggested(name: str, suggestion: str) -> None:
    """Issue 42: 'TEMPERATURE' or 'SMS' got no suggestion (difflib compares case)."""
    valid = ["temperature", "sms", "sms_cv", "svs", "vector", "lac", "aps"]
    err = UnknownNameError("--method", name, valid)
    assert err.suggestion == suggestion
    assert str(err).endswith(f"got {name!r} (did you mean {suggestion!r}?)")


def test_names_equal_but_for_case_suggest_the_one_spelled_alike() -> None:
    from calibkit.core.errors import nearest_name

    assert nearest_name("Ab", ["ab", "AB", "Ab"]) == "Ab"
    assert nearest_name("xyz", ["XYZW", "abc"]) == "XYZW"  # near ignoring case


def test_long_integers_in_messages_are_compact() -> None:
    """Issue 42: alpha=1e-300's message held a 300-digit row count."""
    from calibkit.calibrators import CALIBRATORS
    from calibkit.core.validation import N_BINS

    with pytest.raises(InputError) as info:
        CALIBRATORS.create("conformal", alpha=1e-300, calibrator=None).fit(
            [[0.0, 1.0]] * 20, [0, 1] * 10
        )
    assert "expected at least 1e+300 calibration rows for the quantile for alpha=1e-300" in str(
        info.value
    )
    with pytest.raises(InputError) as info:
        N_BINS.check("n_bins", -(10**400))
    assert str(info.value) == "n_bins: expected an integer in [1, 100000], got -1e+400"
    err = InputError("x", f"at most {10**25 + 123456789}", f"{2**64 - 1} and '{10**30}'")
    assert (err.expected, err.got) == ("at most 1e+25", f"{2**64 - 1} and '{10**30}'")
    back = pickle.loads(pickle.dumps(err))
    assert (str(back), vars(back)) == (str(err), vars(err))
