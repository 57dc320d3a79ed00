"""core.registry: names, metadata and registration hooks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from calibkit.core.errors import UnknownNameError
from calibkit.core.registry import Registry


def test_register_get_and_info() -> None:
    reg: Registry[int] = Registry("widget")
    reg.register("a", size=2)(1)
    reg.register("b")(2)
    assert reg.get("a") == 1
    assert reg.names() == ["a", "b"]
    assert len(reg) == 2
    assert dict(reg.info("a")) == {"size": 2}
    assert dict(reg.info("b")) == {}
    assert "a" in reg
    assert list(reg) == ["a", "b"]
    with pytest.raises(TypeError):
        reg.info("a")["size"] = 3  # type: ignore[index]
    with pytest.raises(UnknownNameError, match=r"^widget: expected one of a, b, got 'c'"):
        reg.info("c")
    with pytest.raises(ValueError, match="already registered"):
        reg.register("a")(3)


def test_on_register_sees_each_entry() -> None:
    seen: list[tuple[str, int]] = []
    reg: Registry[int] = Registry("widget", on_register=lambda name, obj: seen.append((name, obj)))
    reg.register("x")(5)
    assert seen == [("x", 5)]


def test_order_and_default_are_metadata_on_the_entry() -> None:
    reg: Registry[int] = Registry("widget")
    reg.register("a")(1)
    reg.register("b", default=False)(2)
    reg.register("c", order=-1)(3)
    reg.register("d", order=0.5)(4)  # between the first (0) and the second (1) registered
    assert reg.names() == ["c", "a", "d", "b"]
    assert list(reg) == reg.names()
    assert reg.defaults() == ["c", "a", "d"]
    assert dict(reg.info("b")) == {"default": False}
    with pytest.raises(ValueError, match="order must be a number"):
        reg.register("e", order="first")
    with pytest.raises(ValueError, match="default must be True or False"):
        reg.register("e", default="no")
    assert reg.unregister("c") == 3
    assert reg.names() == ["a", "d", "b"]


def test_create_is_the_one_factory_verb() -> None:
    reg: Registry[type[list[int]]] = Registry("widget")
    reg.register("plain")(list)
    assert reg.create("plain", [1, 2]) == [1, 2]
    seen: list[tuple[str, object]] = []

    def build(name: str, obj: object, *args: object, **params: object) -> str:
        seen.append((name, obj))
        return f"{name}{args}{params}"

    checked: Registry[type[list[int]]] = Registry("widget", create=build)
    checked.register("x")(list)
    assert checked.create("x", 1, k=2) == "x(1,){'k': 2}"
    assert seen == [("x", list)]
    with pytest.raises(UnknownNameError, match=r"^widget: expected one of x, got 'y'"):
        checked.create("y")


def _registries() -> dict[str, dict[str, str]]:
    """Every registry's key -> the name of what it registers (class or function)."""
    import calibkit.calibrators as cal
    import calibkit.data as data
    import calibkit.losses as losses
    import calibkit.metrics as metrics
    import calibkit.models as models
    from calibkit.calibrators.sets.conformal_scores import SCORES

    found: dict[str, dict[str, str]] = {}
    registries = (cal.CALIBRATORS, SCORES, losses.LOSSES, losses.PENALTIES, models.MODELS)
    for reg in (*registries, data.DATASETS, data.CORRUPTIONS):
        found[reg.kind] = {key: reg.get(key).__name__ for key in reg.names()}  # type: ignore[attr-defined]
    found["metric"] = {k: metrics.METRICS.get(k).function.__name__ for k in metrics.METRIC_NAMES}
    found["metric"].update(
        {k: metrics.METRICS.get(k).function.__name__ for k in metrics.EXTRA_METRICS}
    )
    return found


def test_keys_follow_the_class_names_by_the_written_rule() -> None:
    from calibkit.core.registry import KEY_EXCEPTIONS, key_rule

    broken = []
    for kind, entries in _registries().items():
        for key, name in entries.items():
            if (kind, key) in KEY_EXCEPTIONS:
                # an exception that the rule would give is no exception: remove it
                assert key_rule(name, kind) != key, (kind, key)
            elif key_rule(name, kind) != key:
                broken.append(f"{kind} {key!r}: {name} gives {key_rule(name, kind)!r}")
    assert not broken, "keys off the rule (follow it, or list the key with a reason):\n" + (
        "\n".join(broken)
    )
    every = {(kind, key) for kind, entries in _registries().items() for key in entries}
    assert set(KEY_EXCEPTIONS) <= every  # no stale exception


def test_the_public_factories_are_registry_create(monkeypatch: pytest.MonkeyPatch) -> None:
    """create_calibrator, create_loss, create_model and load_dataset build through the one
    verb, Registry.create."""
    import calibkit as ck

    kinds: list[str] = []
    create = Registry.create

    def spy(self: Registry[object], name: str, /, *args: object, **params: object) -> object:
        kinds.append(self.kind)
        return create(self, name, *args, **params)

    monkeypatch.setattr(Registry, "create", spy)
    assert ck.create_calibrator("temperature").name == "temperature"
    ck.create_loss("focal", gamma=2.0, penalty={"name": "mdca"})
    ck.create_model("lenet5", 3)
    ck.load_dataset("digits")
    assert kinds == ["calibrator", "loss", "loss", "model", "dataset"]


def test_a_declared_entry_is_listed_without_its_module_and_loaded_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue #46, item 11: names, kinds, defaults and the listing's facts come from the
    declaration; ``get`` imports the module, whose ``register`` (by name alone: issue #45,
    item 1) keeps the declared place and metadata."""
    import sys
    import types

    module = "declared_widget_module"
    (tmp_path / f"{module}.py").write_text(
        "from declared_widget_registry import WIDGETS\n"
        "@WIDGETS.register('late')\n"
        "class Late:\n    colour = 'red'\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    widgets: Registry[Any] = Registry("widget")
    holder = types.ModuleType("declared_widget_registry")
    holder.WIDGETS = widgets  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "declared_widget_registry", holder)

    @widgets.register("first")
    class First:
        colour = "blue"

    widgets.declare(
        "late", module, kind="round", attributes={"colour": "red"},
        default=False, summary="Late.", aliases=("lt",),
    )  # fmt: skip

    @widgets.register("last")
    class Last:
        colour = "green"

    assert module not in sys.modules
    assert widgets.names() == ["first", "late", "last"]
    assert widgets.defaults() == ["first", "last"]
    assert ("late" in widgets, "lt" in widgets, len(widgets)) == (True, True, 3)
    assert widgets.kind_of("lt") == "round"
    assert widgets.canonical("lt") == "late"
    assert (widgets.fact("lt", "summary"), widgets.fact("late", "colour")) == ("Late.", "red")
    assert widgets.fact("first", "colour") == "blue"
    assert not widgets.is_loaded("late")
    assert module not in sys.modules  # nothing above imported it

    late = widgets.get("lt")
    assert module in sys.modules
    assert widgets.is_loaded("late")
    assert late.colour == "red"
    assert widgets.names() == ["first", "late", "last"]  # the declared place kept
    assert widgets.info("late")["summary"] == "Late."
    monkeypatch.delitem(sys.modules, module)


def test_a_declared_module_that_registers_nothing_is_named() -> None:
    widgets: Registry[Any] = Registry("widget")
    widgets.declare("ghost", "calibkit.core.errors", summary="Never registered.")
    with pytest.raises(RuntimeError, match=r"'ghost' is declared in calibkit.core.errors"):
        widgets.get("ghost")
    with pytest.raises(ValueError, match="already registered"):
        widgets.declare("ghost", "calibkit.core.errors")


def test_a_declared_entry_is_described_once() -> None:
    """Issue #45, item 1: the declaration holds an entry's metadata; registering it again
    with metadata it declares (a second copy) is refused, by name alone it keeps the
    declared."""
    widgets: Registry[Any] = Registry("widget")
    widgets.declare("one", "calibkit.core.errors", summary="One.", default=False)
    with pytest.raises(ValueError, match="'one' is declared with its summary: register it"):
        widgets.register("one", summary="One.")
    with pytest.raises(ValueError, match="'one' is declared with its default, order"):
        widgets.register("one", order=3, default=True, size=1)
    widgets.register("one")(int)
    assert (widgets.get("one"), widgets.info("one")["summary"], widgets.defaults()) == (
        int,
        "One.",
        [],
    )


def test_a_declared_name_takes_the_metadata_its_declaration_does_not_give() -> None:
    """Issue #45, item 1: a name declared alone (a dataset of ``calibkit.core.names``) is
    registered with what only its module knows (its loader's facts), in its declared place."""
    widgets: Registry[Any] = Registry("widget")
    widgets.declare("one", "calibkit.core.errors")
    widgets.declare("two", "calibkit.core.errors", summary="Two.")
    widgets.register("two", size=2)(float)
    widgets.register("one", size=1)(int)
    assert widgets.names() == ["one", "two"]
    assert (widgets.info("one"), widgets.info("two")) == (
        {"size": 1},
        {"summary": "Two.", "size": 2},
    )


def test_a_declared_attribute_is_registered_when_its_module_is_imported() -> None:
    """``"module:attribute"``: the module registers nothing, the declaration names the
    object (a model factory of the catalog)."""
    widgets: Registry[Any] = Registry("widget")
    widgets.declare("dumps", "json:dumps", summary="Text.")
    assert not widgets.is_loaded("dumps")
    import json

    assert widgets.get("dumps") is json.dumps
    assert widgets.info("dumps")["summary"] == "Text."
    widgets.declare("nothing", "json:no_such_function")
    with pytest.raises(AttributeError, match="no_such_function"):
        widgets.get("nothing")
