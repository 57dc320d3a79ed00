"""Name -> object registries (models, losses, calibrators, datasets, metrics).

Configs and the CLI refer to components by name; an unknown name raises
:class:`~calibkit.core.errors.UnknownNameError` listing the valid ones. Every entry is
registered with the :meth:`Registry.register` decorator, which can also record facts about
the entry (its metadata, read back with :meth:`Registry.info`) beside it. Two facts every
registry reads the same way, so that no consumer keeps its own list:

- ``order`` (a number; by default the registration index): the place of the entry in
  :meth:`Registry.names`, which is the order of reports and of default lists;
- ``default`` (by default True): whether the entry runs when the caller names none
  (:meth:`Registry.defaults`); ``default=False`` keeps an entry to be run only when named.

Keys follow the names of what they register by one rule, :func:`key_rule` (checked for
every registry by ``tests/core/test_registry.py``): the words of the class or function
name in snake_case, without the words that only say what kind of thing it is
(:data:`KIND_WORDS`: ``Scaling``, ``Calibration``, ``Loss``, ``load_``, ...), a leading
modifier (:data:`MODIFIERS`: ``Smoothed``, ``Classwise``, ...) moved to the end so that a
variant sorts beside its base: ``TemperatureScaling`` -> ``temperature``,
``ClasswiseHistogramBinning`` -> ``histogram_classwise``, ``load_cifar10`` -> ``cifar10``.
The keys that configs, papers and documents already use otherwise are
:data:`KEY_EXCEPTIONS`, each with its reason; a new key follows the rule.

>>> r: Registry[int] = Registry("widget")
>>> @r.register("one", size=1)
... def make_one() -> int:
...     return 1
>>> r.get("one")(), r.info("one")["size"]
(1, 1)
>>> @r.register("zero", order=-1, default=False)
... def make_zero() -> int:
...     return 0
>>> r.names(), r.defaults()
(['zero', 'one'], ['one'])
>>> r.create("one")
1
>>> r.get("two")
Traceback (most recent call last):
...
calibkit.core.errors.UnknownNameError: widget: expected one of one, zero, got 'two'

An entry can also be *declared* (:meth:`Registry.declare`) before its module is imported:
its name, kind, order, ``default`` and the facts a listing reads (:meth:`Registry.fact`) are
known at once, and :meth:`Registry.get` imports the module (whose ``register`` call then
gives the object) only when the object itself is wanted. ``calibkit methods`` lists every
calibrator, and ``calibkit fit`` / ``apply`` of a numpy-only one run, without importing the
torch-based modules (:mod:`calibkit.core.catalog` declares them).

>>> r.declare("two", "calibkit.core.no_such_module", summary="Two.", order=0.5)
>>> r.names(), r.fact("two", "summary"), r.is_loaded("two"), "two" in r
(['zero', 'one', 'two'], 'Two.', False, True)
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import Any, Generic, TypeVar

from calibkit.core.errors import UnknownNameError

T = TypeVar("T")

#: Per registry kind, the words that say only what kind of entry a name is; :func:`key_rule`
#: drops them.
KIND_WORDS: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "calibrator": frozenset(
            {"scaling", "calibration", "calibrator", "binning", "classifier", "adapter"}
        ),
        "loss": frozenset({"loss"}),
        "penalty": frozenset({"loss"}),
        "dataset": frozenset({"load"}),
        "metric": frozenset({"error"}),
    }
)
#: Leading modifiers; :func:`key_rule` moves them to the end of the key.
MODIFIERS = frozenset({"smoothed", "classwise", "groupwise", "centred", "debiased"})
#: ``(registry kind, key)`` -> why the key departs from :func:`key_rule` (public keys that
#: configs, documents or papers use; never renamed).
KEY_EXCEPTIONS: Mapping[tuple[str, str], str] = MappingProxyType(
    {
        ("calibrator", "ms_odir"): "Kull et al. 2019's name for MatrixScalingODIR",
        ("calibrator", "svs"): "the structured-scaling paper's abbreviation",
        ("calibrator", "sms"): "the structured-scaling paper's abbreviation",
        ("calibrator", "sms_cv"): "the structured-scaling paper's abbreviation, with CV",
        ("calibrator", "scaling_binning"): "Kumar et al. 2019's method: both words are its name",
        ("calibrator", "nc_ce"): "the Neural Clamping paper's ablation names",
        ("calibrator", "nc_fl"): "the Neural Clamping paper's ablation names",
        ("calibrator", "nc_fast"): "the Neural Clamping paper's ablation names",
        ("calibrator", "ts_focal"): "the Neural Clamping paper's ablation names",
        ("penalty", "l1_norm"): "Wang et al. 2021's name for the L1 logit-norm penalty",
        ("dataset", "cifar10-jpeg"): "the dataset's name in configs (CIFAR-10 as JPEG files)",
        ("dataset", "imagenet-val"): "the dataset's name in configs (ImageNet's validation set)",
        ("metric", "risk_at_cov80"): "risk_at_coverage at 80% coverage, one of its settings",
        ("metric", "cov_at_risk5"): "coverage_at_risk at 5% risk, one of its settings",
    }
)


def key_rule(name: str, kind: str) -> str:
    """The key that the class or function ``name`` gets in the registry of ``kind`` by the
    rule (see the module docstring).

    Parameters
    ----------
    name : str
        A class name (CamelCase, acronyms kept whole) or a function name (snake_case).
    kind : str
        The registry's kind (``Registry.kind``: ``"calibrator"``, ``"loss"``, ...).

    Returns
    -------
    str
        Its words in lower case joined by ``_``, without the :data:`KIND_WORDS` of
        ``kind``, a leading
        word of :data:`MODIFIERS` moved to the end.

    Examples
    --------
    >>> key_rule("TemperatureScalingECE", "calibrator")
    'temperature_ece'
    >>> key_rule("ClasswiseHistogramBinning", "calibrator")
    'histogram_classwise'
    >>> key_rule("DualFocalTwoTermLoss", "loss"), key_rule("load_cifar10", "dataset")
    ('dual_focal_two_term', 'cifar10')
    >>> key_rule("debiased_ece", "metric"), key_rule("ks_error", "metric")
    ('ece_debiased', 'ks')
    """
    words = [w.lower() for w in re.findall(r"[A-Z]+(?![a-z])|[A-Z][a-z0-9]*|[a-z0-9]+", name)]
    drop = KIND_WORDS.get(kind, frozenset())
    words = [w for w in words if w not in drop]
    if len(words) > 1 and words[0] in MODIFIERS:
        words = [*words[1:], words[0]]
    return "_".join(words)


class Registry(Generic[T]):
    """A mapping from names to objects (classes or factories) of one kind.

    ``on_register(name, obj)``, if given, is called as each object is registered (e.g. to
    set a class's ``name`` attribute); ``create(name, obj, *args, **params)``, if given, is
    how :meth:`create` builds an entry; ``kind_of(obj)``, if given, tells an entry's kind,
    which :meth:`names` and :meth:`defaults` can select (``names(kind="sets")``). An entry
    registered with ``aliases=(...)`` is found by :meth:`get` under those names too, which
    :meth:`names` does not list.
    """

    def __init__(
        self,
        kind: str,
        on_register: Callable[[str, T], None] | None = None,
        create: Callable[..., Any] | None = None,
        kind_of: Callable[[T], str] | None = None,
    ) -> None:
        self.kind = kind
        self._create = create
        self._kind_of = kind_of
        self._aliases: dict[str, str] = {}
        self._items: dict[str, T] = {}
        self._info: dict[str, Mapping[str, Any]] = {}
        self._order: dict[str, float] = {}
        self._on_register = on_register
        #: Declared entries not yet imported: name -> (module, kind, attributes).
        self._declared: dict[str, tuple[str, str | None, Mapping[str, Any]]] = {}

    def register(self, name: str, **info: Any) -> Callable[[T], T]:
        """Decorator that registers ``obj`` under ``name`` (names are unique) with ``info``
        (``order`` and ``default``: see the module docstring); a declared entry
        (:meth:`declare`) keeps its declared place and metadata: it is registered by its
        name, with only the metadata its declaration does not give (a dataset's loader, its
        classes)."""
        declared_info = self._info.get(name, {}) if name in self._declared else None
        if declared_info is not None:
            again = sorted({"order", "default", "aliases", *declared_info} & set(info))
            if again:
                raise ValueError(
                    f"{self.kind} {name!r} is declared with its {', '.join(again)}: register"
                    " it without them"
                )
        order = self._check_info(name, info)
        aliases = tuple(info.get("aliases", ()))

        def add(obj: T) -> T:
            declared = name in self._declared
            if name in self._items or (name in self._aliases and not declared):
                raise ValueError(f"{self.kind} {name!r} is already registered")
            for alias in aliases:
                if alias in self._items or self._aliases.get(alias, name) != name:
                    raise ValueError(f"{self.kind} alias {alias!r} is already registered")
                self._aliases[alias] = name
            if declared:  # its declaration placed it and gave its declared metadata
                self._declared.pop(name)
                self._info[name] = MappingProxyType({**self._info[name], **info})
            else:
                self._order[name] = float(order)
                self._info[name] = MappingProxyType(dict(info))
            if self._on_register is not None:
                self._on_register(name, obj)
            self._items[name] = obj
            return obj

        return add

    def _check_info(self, name: str, info: Mapping[str, Any]) -> float:
        """The entry's order (by default the next index), ``order`` and ``default`` checked."""
        order = info.get("order", len(self._order))
        if isinstance(order, bool) or not isinstance(order, int | float):
            raise ValueError(f"{self.kind} {name!r}: order must be a number, not {order!r}")
        if not isinstance(info.get("default", True), bool):
            raise ValueError(f"{self.kind} {name!r}: default must be True or False")
        return float(order)

    def declare(
        self,
        name: str,
        module: str,
        *,
        kind: str | None = None,
        attributes: Mapping[str, Any] | None = None,
        **info: Any,
    ) -> None:
        """Declare the entry ``name``, which importing ``module`` registers (or, given as
        ``"module:attribute"``, whose ``attribute`` is registered once imported), without
        importing it: :meth:`names`, :meth:`defaults`, :meth:`kind_of` (``kind``), ``in`` and
        :meth:`fact` (``info`` and the object's ``attributes``) answer from the declaration;
        :meth:`get`, :meth:`info` and :meth:`create` import ``module`` first. ``info`` is the
        part of the ``register`` call's metadata that can be read early (its ``order`` is
        the entry's place, kept when the module registers it)."""
        if name in self._items or name in self._aliases or name in self._declared:
            raise ValueError(f"{self.kind} {name!r} is already registered")
        self._order[name] = self._check_info(name, info)
        for alias in info.get("aliases", ()):
            if alias in self._items or alias in self._aliases:
                raise ValueError(f"{self.kind} alias {alias!r} is already registered")
            self._aliases[alias] = name
        self._declared[name] = (module, kind, MappingProxyType(dict(attributes or {})))
        self._info[name] = MappingProxyType(dict(info))

    def is_loaded(self, name: str) -> bool:
        """Whether the object of ``name`` is registered (its module imported), not only
        declared."""
        return self._aliases.get(name, name) in self._items

    def fact(self, name: str, key: str, default: Any = None) -> Any:
        """What the entry ``name`` says about ``key`` without importing a declared entry's
        module: its metadata's ``key``, else its object's attribute ``key`` (the declared
        ``attributes`` while only declared), else ``default``."""
        name = self.canonical(name)
        if name in self._declared:
            _, _, attributes = self._declared[name]
            return self._info[name].get(key, attributes.get(key, default))
        if key in self._info[name]:
            return self._info[name][key]
        return getattr(self._items[name], key, default)

    def info(self, name: str) -> Mapping[str, Any]:
        """The metadata registered with ``name`` (read-only; empty if none was given); a
        declared entry's module is imported first (all of its metadata)."""
        self.get(name)
        return self._info[self._aliases.get(name, name)]

    def get(self, name: str) -> T:
        """The object registered under ``name`` (or an alias of it); an unknown name lists
        the valid ones and suggests the nearest. A declared entry's module is imported."""
        key = self._aliases.get(name, name) if isinstance(name, str) else name
        if isinstance(key, str) and key in self._declared:
            module = self._declared[key][0]
            path, _, attribute = module.partition(":")
            loaded = importlib.import_module(path)
            if key in self._declared and attribute:  # the object the declaration names
                self.register(key)(getattr(loaded, attribute))
            if key in self._declared:
                raise RuntimeError(
                    f"{self.kind} {key!r} is declared in {module}, which did not register it"
                )
        try:
            return self._items[key]
        except (KeyError, TypeError):
            raise UnknownNameError(self.kind, name, self.names()) from None

    def canonical(self, name: str) -> str:
        """The registered name of ``name`` (itself, or the entry an alias names); a declared
        entry's module is not imported."""
        if name not in self:
            raise UnknownNameError(self.kind, name, self.names())
        return self._aliases.get(name, name)

    def kind_of(self, name: str) -> str:
        """The kind of the entry ``name`` (the registry's ``kind_of``; its kind if none; a
        declared entry's declared kind, without importing it)."""
        declared = self._declared.get(self._aliases.get(name, name))
        if declared is not None and declared[1] is not None:
            return declared[1]
        obj = self.get(name)
        return self.kind if self._kind_of is None else self._kind_of(obj)

    def names(self, kind: str | tuple[str, ...] | None = None) -> list[str]:
        """Registered names by their ``order`` (registration order unless an entry gave one;
        ties keep registration order); only those of ``kind`` (one or several) if given."""
        last = float(len(self._order))  # an entry put in by hand (a test's stand-in): last
        ordered = sorted([*self._items, *self._declared], key=lambda n: self._order.get(n, last))
        if kind is None:
            return ordered
        kinds = (kind,) if isinstance(kind, str) else kind
        return [n for n in ordered if self.kind_of(n) in kinds]

    def defaults(self, kind: str | tuple[str, ...] | None = None) -> list[str]:
        """The names of :meth:`names` (of ``kind`` if given) registered without
        ``default=False``."""
        return [n for n in self.names(kind) if self._info.get(n, {}).get("default", True)]

    def create(self, name: str, /, *args: Any, **params: Any) -> Any:
        """The one factory verb: a new object from the entry ``name`` and ``params``.

        ``obj(*args, **params)`` for the object registered under ``name``, unless the
        registry was made with ``create=``, which then builds it as
        ``create(name, obj, *args, **params)`` (declared-parameter checks, a model, ...).
        The public ``create_*`` functions (``create_calibrator``, ``create_loss``,
        ``create_model``) call it.
        """
        obj = self.get(name)
        if self._create is not None:
            return self._create(name, obj, *args, **params)
        assert callable(obj), f"{self.kind} {name!r} is not callable"
        return obj(*args, **params)

    def unregister(self, name: str) -> T:
        """Remove the entry ``name`` (registered by the caller, e.g. a test's toy entry) and
        return it."""
        obj = self.get(name)
        name = self.canonical(name)
        del self._items[name], self._info[name], self._order[name]
        self._aliases = {a: n for a, n in self._aliases.items() if n != name}
        return obj

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        return name in self._items or name in self._aliases or name in self._declared

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._items) + len(self._declared)
