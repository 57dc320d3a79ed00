"""Parameters declared once: ``name: type = param(default=..., check=..., doc=...)``.

Every configurable object of calibkit declares each of its parameters in one line of its
class body: the type, the default, the :class:`~calibkit.core.validation.Constraint` that
checks a value and one sentence saying what it does. Everything else is derived from it:

- :class:`Declared` (the base of every fitted post-hoc object): the constructor (a real
  signature, so ``inspect``, ``help`` and scikit-learn's ``clone`` read it), the checks it
  runs, ``param_constraints`` (name -> constraint, what ``get_params``, ``set_params``, the
  command line, study files and saved documents read) and the docstring's ``Parameters``;
- :class:`Settings` (the frozen settings of the demo, shift studies, studies and training):
  a frozen dataclass whose fields are checked, and normalised, when it is made, and the
  docstring's ``Parameters``.

Checks of one value live in its constraint; a relation between values (``t_min < t_max``)
in the class's :meth:`~Declared._check_params`, which runs after every value is checked.
Type checkers see both bases as dataclasses (:func:`typing.dataclass_transform`).

>>> from calibkit.core.validation import N_BINS, POSITIVE
>>> class Smoothed(Declared):
...     '''A made-up calibrator.'''
...     n_bins: int = param(default=15, check=N_BINS, doc="Bins of the histogram.")
...     strength: float = param(default=1.0, check=POSITIVE, doc="How hard it smooths.")
>>> Smoothed(n_bins=10).n_bins, Smoothed.param_constraints["strength"] is POSITIVE
(10, True)
>>> import inspect
>>> [(p.name, p.default) for p in inspect.signature(Smoothed).parameters.values()]
[('n_bins', 15), ('strength', 1.0)]
>>> print(Smoothed.__doc__)  # doctest: +NORMALIZE_WHITESPACE
A made-up calibrator.
<BLANKLINE>
Parameters
----------
n_bins : int, default 15
    Bins of the histogram. Accepts an integer in [1, 100000].
strength : float, default 1.0
    How hard it smooths. Accepts a finite number > 0.
>>> Smoothed(strength=0)
Traceback (most recent call last):
...
calibkit.core.errors.InputError: strength: expected a finite number > 0, got 0
"""

from __future__ import annotations

import dataclasses
import inspect
import linecache
from collections.abc import Callable, Mapping
from dataclasses import MISSING, Field
from typing import Any, ClassVar, dataclass_transform

from calibkit.core.validation import Constraint, Constraints, check_params

#: The key under which a field's :class:`Param` is kept in its ``metadata``.
PARAM = "calibkit.param"


@dataclasses.dataclass(frozen=True)
class Param:
    """What :func:`param` declares besides the default: the check and the sentence."""

    check: Constraint
    doc: str
    #: False for a parameter only Python takes (the command line neither offers nor
    #: accepts it, and its messages never suggest it).
    cli: bool = True


def param(
    *,
    check: Constraint,
    doc: str,
    default: Any = MISSING,
    factory: Callable[[], Any] | Any = MISSING,
    cli: bool = True,
) -> Any:
    """Declare one parameter (see the module docstring): its ``default`` (or ``factory``
    for a mutable one; neither: required), its ``check`` and its ``doc``.

    ``cli=False`` marks a parameter only Python takes (a callable, a module)."""
    if not doc or not doc.strip().endswith("."):
        raise TypeError(f"param(doc=...) must be a sentence ending in '.', got {doc!r}")
    meta = {PARAM: Param(check, " ".join(doc.split()), cli)}
    return dataclasses.field(default=default, default_factory=factory, metadata=meta)


def _declared_field(value: object) -> bool:
    return isinstance(value, Field) and PARAM in value.metadata


def _type_name(annotation: object) -> str:
    return annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")


def _default_text(f: Field[Any]) -> str:
    if f.default is not MISSING:
        return f", default {f.default!r}"
    if f.default_factory is not MISSING:
        return f", default {f.default_factory()!r}"
    return ""


def parameters_section(fields: Mapping[str, Field[Any]], annotations: Mapping[str, Any]) -> str:
    """The numpydoc ``Parameters`` section of ``fields`` (name -> a :func:`param` field)."""
    lines = ["Parameters", "----------"]
    for name, f in fields.items():
        spec: Param = f.metadata[PARAM]
        kind = _type_name(annotations.get(name, ""))
        lines.append(f"{name} : {kind}{_default_text(f)}" if kind else name)
        lines.append(f"    {spec.doc} Accepts {spec.check.describe()}.")
    return "\n".join(lines)


#: The numpydoc sections that follow ``Parameters`` in a class docstring.
_LATER_SECTIONS = ("Attributes", "Methods", "See Also", "Notes", "References", "Examples")


def with_parameters(doc: str | None, section: str) -> str:
    """``doc`` (dedented) with ``section`` before the first section that follows
    ``Parameters`` in numpydoc's order (``Attributes`` ... ``Examples``), or at its end."""
    text = inspect.cleandoc(doc or "")
    lines = text.splitlines()
    for i, line in enumerate(lines[:-1]):
        if line in _LATER_SECTIONS and set(lines[i + 1]) == {"-"}:
            head, tail = "\n".join(lines[:i]).rstrip(), "\n".join(lines[i:])
            return f"{head}\n\n{section}\n\n{tail}"
    return f"{text.rstrip()}\n\n{section}\n" if text else section + "\n"


def _annotations(cls: type) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        merged.update(inspect.get_annotations(klass))
    return merged


def _make_init(cls: type, fields: Mapping[str, Field[Any]]) -> Callable[..., None]:
    """A constructor with the declared signature that stores the values through
    ``self._set_params`` and then runs ``self._check_params()``."""
    annotations = _annotations(cls)
    defaults: dict[str, Any] = {}
    listed = []
    for name, f in fields.items():
        if f.default_factory is not MISSING:
            raise TypeError(f"{cls.__name__}.{name}: a parameter's default must be a value")
        if f.default is MISSING:
            if defaults:
                raise TypeError(f"{cls.__name__}.{name}: a required parameter after a default")
            listed.append(name)
        else:
            defaults[f"_d_{name}"] = f.default
            listed.append(f"{name}=_d_{name}")
    names = ", ".join(f"{n}={n}" for n in fields)
    source = (
        f"def __init__(self{''.join(', ' + p for p in listed)}):\n"
        f"    self._set_params({names})\n"
        "    self._check_params()\n"
    )
    namespace: dict[str, Any] = {}
    # compiled from a named source kept in linecache, as dataclasses does: inspect.getsource,
    # tracebacks and TorchScript find the text of the constructor
    filename = f"<calibkit.core.params {cls.__module__}.{cls.__qualname__}.__init__>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), defaults, namespace)
    init: Callable[..., None] = namespace["__init__"]
    init.__declared__ = True  # type: ignore[attr-defined]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__annotations__ = {n: annotations[n] for n in fields if n in annotations}
    init.__annotations__["return"] = "None"
    return init


def _inherits_own_init(cls: type) -> bool:
    """Whether the nearest ``__init__`` above ``cls`` is one a :class:`Declared` class wrote
    by hand (one that also takes a model): its subclasses keep it."""
    for klass in cls.__mro__[1:]:
        init = klass.__dict__.get("__init__")
        if init is not None:
            return issubclass(klass, Declared) and not getattr(init, "__declared__", False)
    return False


@dataclass_transform(field_specifiers=(param,))
class Declared:
    """The base of a class whose constructor parameters are declared with :func:`param`
    (see the module docstring). A subclass that writes its own ``__init__`` (one that also
    takes a model) stores its parameters with :meth:`_set_params` itself."""

    #: The declared parameters (name -> field), inherited ones first, in signature order.
    declared_params: ClassVar[Mapping[str, Field[Any]]] = {}
    #: name -> constraint of every declared parameter, in signature order.
    param_constraints: ClassVar[Constraints] = {}
    #: Parameters only Python takes (``param(..., cli=False)``).
    python_only: ClassVar[tuple[str, ...]] = ()
    name: ClassVar[str] = "base"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = {k: v for k, v in cls.__dict__.items() if _declared_field(v)}
        fields = {**cls.declared_params, **own}
        for key in own:
            delattr(cls, key)
        cls.declared_params = fields
        cls.param_constraints = {k: f.metadata[PARAM].check for k, f in fields.items()}
        cls.python_only = tuple(k for k, f in fields.items() if not f.metadata[PARAM].cli)
        if "__init__" not in cls.__dict__ and not _inherits_own_init(cls):
            setattr(cls, "__init__", _make_init(cls, fields))  # noqa: B010
        if fields and not getattr(cls, "__abstractmethods__", None):
            section = parameters_section(fields, _annotations(cls))
            cls.__doc__ = with_parameters(cls.__doc__, section)

    def _set_params(self, **params: Any) -> None:
        """Check ``params`` against :attr:`param_constraints` and store them."""
        checked = check_params(self.param_constraints, params, self.name)
        for name, value in checked.items():
            # keep the caller's object when checking did not change it (clone needs that)
            setattr(self, name, params[name] if same_value(value, params[name]) else value)

    def _check_params(self) -> None:
        """Relations between parameters (each value is already checked); none by default."""


def same_value(a: object, b: object) -> bool:
    """Whether ``a`` and ``b`` are equal values of the same types (element-wise for lists)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


@dataclass_transform(field_specifiers=(param,), frozen_default=True)
class Settings:
    """The base of calibkit's frozen settings (see the module docstring): a subclass is made
    a frozen dataclass; every field is declared with :func:`param` and checked (and
    normalised: numpy scalars become Python ones) when the settings are made, then
    :meth:`_check_params` checks relations between fields.

    >>> from calibkit.core.validation import EPOCHS, FRACTION
    >>> class Fit(Settings):
    ...     '''How long to fit.'''
    ...     epochs: int = param(default=10, check=EPOCHS, doc="Passes over the data.")
    ...     holdout: float = param(default=0.0, check=FRACTION, doc="Rows held out.")
    >>> Fit(epochs=3)
    Fit(epochs=3, holdout=0.0)
    >>> Fit(holdout=1.0)
    Traceback (most recent call last):
    ...
    calibkit.core.errors.InputError: holdout: expected a finite number in [0, 1), got 1.0
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        undeclared = [
            k
            for k, v in inspect.get_annotations(cls).items()
            if not str(v).startswith(("ClassVar", "typing.ClassVar"))
            and not _declared_field(cls.__dict__.get(k))
        ]
        if undeclared:
            raise TypeError(f"{cls.__name__}: declare {', '.join(undeclared)} with param()")
        dataclasses.dataclass(frozen=True)(cls)
        fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        cls.__doc__ = with_parameters(cls.__doc__, parameters_section(fields, _annotations(cls)))

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = f.metadata[PARAM].check.check(f.name, getattr(self, f.name))
            if not same_value(value, getattr(self, f.name)):
                object.__setattr__(self, f.name, value)
        self._check_params()

    def _check_params(self) -> None:
        """Relations between fields (each value is already checked); none by default."""
