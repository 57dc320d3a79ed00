"""Every calibrator declares each parameter once (issue #45, item 2): one
``name: type = param(default=..., check=..., doc=...)`` line, from which its constructor,
``param_constraints`` and the docstring's ``Parameters`` section are derived
(:mod:`calibkit.core.params`)."""

from __future__ import annotations

import inspect
import re

import pytest

from calibkit.calibrators import CALIBRATORS

#: The kinds whose calibrators live in ``calibkit.calibrators.logit`` and ``.groups``.
LOGIT_AND_GROUP_NAMES = CALIBRATORS.names(kind=("logits", "groups"))
LOGIT_AND_GROUP_MODULES = ("calibkit.calibrators.logit.", "calibkit.calibrators.groups.")


@pytest.mark.parametrize("name", LOGIT_AND_GROUP_NAMES)
def test_logit_and_group_calibrators_declare_each_parameter_once(name: str) -> None:
    klass = CALIBRATORS.get(name)
    declared = klass.declared_params
    assert list(declared) == list(klass.param_constraints)
    # the constructor: exactly the declared parameters, in order, with their defaults
    signature = list(inspect.signature(klass).parameters.values())
    assert [p.name for p in signature] == list(declared)
    assert [p.default for p in signature] == [f.default for f in declared.values()]
    assert klass().get_params() == {k: f.default for k, f in declared.items()}
    # the docstring: a generated Parameters section (if any) naming each with its check
    doc = inspect.getdoc(klass) or ""
    assert bool(re.search(r"^Parameters\n-{10}$", doc, re.MULTILINE)) == bool(declared)
    for key, check in klass.param_constraints.items():
        entry = rf"^{key} : .+, default .+\n    .+ Accepts {re.escape(check.describe())}\.$"
        assert re.search(entry, doc, re.MULTILINE), f"{name}: {key}"
    # no bare annotation of a parameter (or of fitted state) in the classes it is built of
    for base in klass.__mro__:
        if base.__module__.startswith(LOGIT_AND_GROUP_MODULES):
            bare = [
                key
                for key, annotation in inspect.get_annotations(base).items()
                if not str(annotation).startswith("ClassVar") and key not in declared
            ]
            assert not bare, f"{base.__name__}: {bare}"
