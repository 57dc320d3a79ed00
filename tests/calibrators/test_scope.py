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
