"""Parameters declared once (core/params.py): what a class's one line per parameter gives."""

from __future__ import annotations

import dataclasses
import inspect
from typing import ClassVar

import pytest
from sklearn.base import clone

from calibkit.core.errors import InputError
from calibkit.core.params import Declared, Settings, param
from calibkit.core.validation import N_BINS, POSITIVE, ListOf, Real, String


class Base(Declared):
    """A base.

    Attributes
    ----------
    fitted_ : float
        Something fitted.

    Examples
    --------
    >>> 1
    1
    """

    name: ClassVar[str] = "base_made_up"
    low: float = param(default=0.1, check=POSITIVE, doc="The lowest value.")
    high: float = param(default=10.0, check=POSITIVE, doc="The highest value.")

    def _check_params(self) -> None:
        if not self.low < self.high:
            raise InputError("high", f"a value above low ({self.low:g})", f"{self.high:g}")

    def get_params(self, deep: bool = True) -> dict[str, object]:
        return {k: getattr(self, k) for k in self.param_constraints}

    def set_params(self, **params: object) -> Base:
        for k, v in params.items():
            setattr(self, k, v)
        return self


class Child(Base):
    """A child with one more parameter and a new default for an inherited one."""

    grid: tuple[float, ...] = param(default=(1.0, 2.0), check=ListOf(Real(0, 5)), doc="A grid.")
    high: float = param(default=5.0, check=POSITIVE, doc="The highest value, lower here.")


def test_the_signature_is_the_declaration_inherited_first_an_override_in_place() -> None:
    params = inspect.signature(Child).parameters
    assert [(p.name, p.default) for p in params.values()] == [
        ("low", 0.1),
        ("high", 5.0),
        ("grid", (1.0, 2.0)),
    ]
    assert list(Child.param_constraints) == ["low", "high", "grid"]
    assert (
        Child.param_constraints["grid"]
        is Child.declared_params["grid"].metadata["calibkit.param"].check
    )
    assert not hasattr(Child, "grid")  # no class attribute shadows a missing instance value


def test_values_are_checked_then_relations() -> None:
    with pytest.raises(InputError, match=r"^low: expected a finite number > 0, got -1$"):
        Base(low=-1)
    with pytest.raises(InputError, match=r"^high: expected a value above low \(3\), got 2$"):
        Base(3.0, 2.0)  # positional, in declared order
    with pytest.raises(TypeError, match="unexpected keyword argument 'hi'"):
        Base(hi=2.0)  # type: ignore[call-arg]
    normalised = Child(grid=[3, 4])  # type: ignore[arg-type]  # a list, as the check allows
    assert normalised.grid == (3.0, 4.0)


def test_the_callers_object_is_kept_when_checking_changes_nothing() -> None:
    grid = (1.0, 3.0)
    assert Child(grid=grid).grid is grid
    assert clone(Child(grid=grid)).grid == grid  # clone refuses a constructor that copies


def test_the_docstring_lists_each_parameter_before_attributes() -> None:
    doc = Child.__doc__ or ""
    assert "low : float, default 0.1\n    The lowest value. Accepts a finite number > 0." in doc
    assert "high : float, default 5.0\n    The highest value, lower here." in doc
    assert "grid : tuple[float, ...], default (1.0, 2.0)" in doc
    doc = Base.__doc__ or ""
    assert doc.index("Parameters\n----------") < doc.index("Attributes\n----------")
    assert doc.index("Attributes") < doc.index("Examples\n--------")


def test_a_declaration_without_a_sentence_or_out_of_order_is_refused() -> None:
    with pytest.raises(TypeError, match="a sentence"):
        param(default=1, check=N_BINS, doc="no full stop")
    with pytest.raises(TypeError, match="a required parameter after a default"):

        class Bad(Declared):
            a: int = param(default=1, check=N_BINS, doc="A.")
            b: int = param(check=N_BINS, doc="B.")  # type: ignore[misc]

    with pytest.raises(TypeError, match="must be a value"):

        class Mutable(Declared):
            a: list[int] = param(factory=list, check=ListOf(N_BINS), doc="A.")


class Options(Settings):
    """Some settings."""

    label: str = param(check=String(), doc="What the run is called.")
    n_bins: int = param(default=15, check=N_BINS, doc="Bins.")
    names: tuple[str, ...] = param(factory=tuple, check=ListOf(String()), doc="Names.")

    def _check_params(self) -> None:
        if self.label in self.names:
            raise InputError("names", "names other than the label", repr(self.label))


def test_settings_are_frozen_checked_fields_with_their_docs() -> None:
    s = Options("run", names=["a", "b"])  # type: ignore[arg-type]
    assert s.names == ("a", "b")
    assert s.n_bins == 15
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.n_bins = 3  # type: ignore[misc]
    with pytest.raises(InputError, match=r"^n_bins: expected an integer in"):
        Options("run", n_bins=0)
    with pytest.raises(InputError, match=r"^names: expected names other than the label"):
        Options("a", names=("a",))
    with pytest.raises(InputError, match=r"^n_bins:"):
        dataclasses.replace(s, n_bins=True)  # replace() checks as the constructor does
    assert "n_bins : int, default 15\n    Bins. Accepts an integer in" in (Options.__doc__ or "")
    assert "names : tuple[str, ...], default ()" in (Options.__doc__ or "")


def test_a_settings_field_without_a_declaration_is_refused() -> None:
    with pytest.raises(TypeError, match="declare n_bins with param"):

        class Loose(Settings):
            n_bins: int = 15
