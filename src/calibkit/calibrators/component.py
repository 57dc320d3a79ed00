"""Parts of a fitted object passed as objects: a conformity score, a prior estimator.

A :class:`Component` is a small named object that declares its own parameters with
:func:`~calibkit.core.params.param` (``RAPS(penalty=0.1, k_reg=1)``, ``EM(tol=1e-8)``), as
MAPIE passes a conformity score; two of one class with the same parameters are equal. The
fitted object that takes one declares the parameter with :class:`ComponentSpec`, which
accepts the object, its registered name (the part with its defaults: what the command line
and the shift studies pass) or its saved form ``{"name": ..., <parameters>}`` (what a
document holds: :meth:`Component.to_json`, read back and checked field by field by
:meth:`ComponentSpec.check`).

>>> from calibkit.calibrators.priors.estimators import ESTIMATORS, EM
>>> spec = ComponentSpec(ESTIMATORS)
>>> spec.check("estimator", "em")
EM(tol=1e-08, max_iter=10000)
>>> spec.encode(EM(tol=1e-6))
{'name': 'em', 'tol': 1e-06, 'max_iter': 10000}
>>> spec.check("params.estimator", {"name": "em", "tol": -1.0})
Traceback (most recent call last):
...
calibkit.core.errors.InputError: params.estimator.tol: expected a finite number > 0, got -1.0
"""

from __future__ import annotations

from typing import Any, ClassVar

from calibkit.core.errors import InputError, UnknownNameError
from calibkit.core.params import Declared
from calibkit.core.registry import Registry
from calibkit.core.validation import Constraint, check_params


class Component(Declared):
    """The base of a part passed as an object (see the module docstring): its registry
    sets :attr:`name`; its parameters are declared with :func:`~calibkit.core.params.param`.

    Examples
    --------
    >>> from calibkit.calibrators.sets.conformal_scores import RAPS
    >>> raps = RAPS(penalty=0.2)
    >>> raps.to_json(), raps.describe()
    ({'name': 'raps', 'penalty': 0.2, 'k_reg': 1}, 'raps (penalty=0.2, k_reg=1)')
    >>> raps == RAPS(penalty=0.2), raps == RAPS()
    (True, False)
    """

    #: The registered name (set by the registry).
    name: ClassVar[str] = "component"

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The declared parameters (``deep``: scikit-learn's flag; a part holds no other)."""
        return {key: getattr(self, key) for key in self.param_constraints}

    def to_json(self) -> dict[str, Any]:
        """The part as a saved document holds it: ``{"name": ..., <parameters>}``."""
        return {"name": self.name, **self.get_params()}

    def describe(self) -> str:
        """The part in words, as reports name it: ``raps (penalty=0.1, k_reg=1)``."""
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{self.name} ({params})" if params else self.name

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({params})"

    # a value: equal to a part of its class with the same parameters (a loaded one, a clone)
    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, Component)
        return self.to_json() == other.to_json()

    def __hash__(self) -> int:
        return hash((type(self), *self.get_params().items()))


def set_component_name(name: str, cls: type[Component]) -> None:
    """A registry's ``on_register`` for components: the class learns its name."""
    cls.name = name


class ComponentSpec(Constraint):
    """A component of ``registry``: an instance, a registered name (that component with its
    defaults) or its saved form ``{"name": ..., <parameters>}``; normalised to an instance
    (the caller's own instance is kept, so scikit-learn's ``clone`` finds it).

    Parameters
    ----------
    registry : Registry
        Where the components are registered by name.

    Examples
    --------
    >>> from calibkit.calibrators.sets.conformal_scores import SCORES
    >>> ComponentSpec(SCORES).check("conformity_score", "raps")
    RAPS(penalty=0.1, k_reg=1)
    """

    def __init__(self, registry: Registry[Any]) -> None:
        self.registry = registry

    def _klass(self, name: str, key: str) -> type[Component]:
        if key not in self.registry:
            raise UnknownNameError(name, key, self.registry.names())
        klass: type[Component] = self.registry.get(key)
        return klass

    def check(self, name: str, value: object) -> Any:
        if isinstance(value, str):
            return self._klass(name, value)()
        if isinstance(value, dict) and isinstance(value.get("name"), str):
            klass = self._klass(name, value["name"])
            params = {k: v for k, v in value.items() if k != "name"}
            checked = check_params(klass.param_constraints, params, name, prefix=f"{name}.")
            try:
                return klass(**checked)
            except InputError as exc:  # a relation between its parameters
                raise InputError(f"{name}.{exc.argument}", exc.expected, exc.got) from None
        if isinstance(value, Component) and self._registered(value):
            return value
        self.fail(name, value)

    def _registered(self, value: Component) -> bool:
        return value.name in self.registry and isinstance(value, self.registry.get(value.name))

    def describe(self) -> str:
        names = ", ".join(sorted(self.registry.names()))
        return f"a {self.registry.kind} object, or the name of one ({names})"

    @staticmethod
    def encode(value: object) -> object:
        """The component as a saved document holds it (:meth:`Component.to_json`)."""
        return value.to_json() if isinstance(value, Component) else value
