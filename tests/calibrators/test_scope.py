"""The declared scope of a registered calibrator: where it is among the defaults."""

from __future__ import annotations

from calibkit.calibrators import CALIBRATORS
from calibkit.calibrators.scope import EVERYWHERE, Scope, declined, scope_of


def test_class_limit_and_samples_per_parameter() -> None:
    s = Scope(
        max_classes=50, reason="why", parameters=lambda k: k * (k + 1), samples_per_parameter=2
    )
    assert s.declines(49, 49 * 50 * 2) is None
    assert s.declines(49, 49 * 50 * 2 - 1) is not None
    assert s.declines(50, 10**9) == "declined from 50 classes on: why"
    assert s.declines(10, None) is None  # the sample count not known: no sample rule


def test_every_entry_declares_a_scope_or_none() -> None:
    for name in CALIBRATORS.names():
        assert isinstance(scope_of(name), Scope)
    assert scope_of("temperature") is EVERYWHERE


def test_declined_keeps_order_and_reasons() -> None:
    got = declined(["matrix", "temperature"], 100, 5000)
    assert list(got) == ["matrix"]
    assert "overfit" in got["matrix"]
    assert declined(["matrix"], 10, 5000) == {}


def test_the_matrix_and_structured_families_declare_their_class_limits() -> None:
    """Each limit as measured (calibrators/logit/linear.py, structured.py): the K x K maps
    with a cross-validated penalty from 200 classes, SMS's single fit from 200, vector
    scaling's cross-validated shrinkage from 500; SVS (diagonal, one fit) everywhere."""
    limits = {"ms_odir": 200, "dirichlet": 200, "sms_cv": 200, "sms": 200, "vector": 500}
    for name, limit in limits.items():
        scope = scope_of(name)
        assert scope.declines(limit - 1, 10**6) is None
        why = scope.declines(limit, 10**6)
        assert why is not None
        assert why.startswith(f"declined from {limit} classes on: ")
        assert "\n" not in why
    assert scope_of("svs") is EVERYWHERE
    at_imagenet = declined(["temperature", "vector", "ms_odir", "svs", "sms", "sms_cv"], 1000)
    assert list(at_imagenet) == ["vector", "ms_odir", "sms", "sms_cv"]


def test_the_structured_family_is_a_default_after_dirichlet() -> None:
    names = CALIBRATORS.names()
    assert {"svs", "sms", "sms_cv"} <= set(CALIBRATORS.defaults())
    assert names.index("dirichlet") < names.index("svs") < names.index("sms")
    assert names.index("sms") < names.index("sms_cv") < names.index("temperature_smoothed")


def test_sms_needs_twenty_samples_per_class() -> None:
    """auto's small-sample regression of issue 31 (docs/selection.md): SMS and SMS-CV at 100
    samples and 10 classes are no defaults; at 5,000 samples and 100 classes they are."""
    for name in ("sms", "sms_cv"):
        assert scope_of(name).declines(10, 199) == (
            "declined below 20 calibration samples per class (200 for 10 classes)"
        )
        assert scope_of(name).declines(10, 200) is None
        assert scope_of(name).declines(100, 5000) is None
    assert scope_of("matrix").declines(10, 219) is not None
    assert scope_of("svs").declines(10, 100) is None
