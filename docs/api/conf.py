"""Sphinx configuration of calibkit's API reference (``bash scripts/docs.sh`` builds it).

Every page documents names as ``calibkit.<name>``, the way users import them; the names load
lazily from the package root, so autodoc imports them through ``calibkit.__getattr__``. The
build is offline (no intersphinx) and treats every warning as an error (``-W``). A page lists
the calibrators of a kind with a ``.. catalog:: KIND`` line, which becomes the autosummary of
their classes read from ``calibkit.core.catalog`` (:func:`catalog_autosummary`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import calibkit
from calibkit.core import catalog

#: The package documented: the one imported (``scripts/docs.sh`` puts ``src`` first on the path).
PACKAGE = Path(calibkit.__file__).resolve().parent

project = "calibkit"
author = "calibkit contributors"
copyright = "calibkit contributors"
version = release = calibkit.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "myst_parser",
]
templates_path = ["_templates"]
exclude_patterns = ["_build"]
source_suffix = {".rst": "restructuredtext"}
root_doc = "index"

# One stub page per public name (docs/api/generated/, written at build time, git-ignored).
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"members": True, "member-order": "bysource"}
autodoc_typehints = "none"  # the signature shows the names; the docstring gives the types
autodoc_preserve_defaults = True
add_module_names = False

napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
napoleon_use_ivar = True

# Docstring examples are doctests: ``>>>`` blocks render as Python.
highlight_language = "python3"
# Option names in plain text (``labels beside --cal``) keep their two hyphens.
smartquotes = False
myst_heading_anchors = 3

# Sphinx's own theme: no extra package, and about half the build time of furo's (which
# computes its full navigation tree on each of the ~190 pages).
html_theme = "alabaster"
html_theme_options = {"page_width": "1240px", "sidebar_width": "260px", "fixed_sidebar": True}
html_title = f"calibkit {release} API reference"
html_static_path: list[str] = []
html_show_sourcelink = False
html_copy_source = False


def _attribute_docs() -> dict[str, list[str]]:
    """``#:`` comments of every module-level name in calibkit's source, by name."""
    from sphinx.pycode import ModuleAnalyzer

    docs: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        module = module.removesuffix(".__init__")
        try:
            found = ModuleAnalyzer.for_file(str(path), module).find_attr_docs()
        except Exception:  # a file the analyser cannot parse has no comments to give
            continue
        for (scope, name), lines in found.items():
            if scope == "":
                docs.setdefault(name, list(lines))
    return docs


_DATA_DOCS: dict[str, list[str]] = {}


def _data_docstring(
    app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]
) -> None:
    """A root constant (``calibkit.METRICS``) gets the ``#:`` comment of its definition."""
    if what != "data" or not name.startswith("calibkit."):
        return
    if not _DATA_DOCS:
        _DATA_DOCS.update(_attribute_docs())
    short = name.removeprefix("calibkit.")
    if short in calibkit.__all__ and short in _DATA_DOCS:
        lines[:] = [*_DATA_DOCS[short]]


def _public_bases(app: Any, name: str, obj: Any, options: Any, bases: list[Any]) -> None:
    """A base class that the package root exports is shown (and linked) as ``calibkit.X``."""
    for i, base in enumerate(bases):
        short = getattr(base, "__name__", "")
        if short in calibkit.__all__ and getattr(calibkit, short) is base:
            bases[i] = f"calibkit.{short}"


#: Class attributes of the post-hoc contract that say how the framework drives a class; the
#: class's docstring says what matters to a user.
_FRAMEWORK_ATTRIBUTES = frozenset(
    {
        "param_constraints",
        "state_constraints",
        "maps_logits",
        "accepts_sample_weight",
        "needs_model",
        "takes_groups",
        "name",
    }
)


def _skip_member(app: Any, what: str, name: str, obj: Any, skip: bool, options: Any) -> bool | None:
    """Skip the post-hoc framework's class attributes, scikit-learn's routing methods and
    what a class inherits from outside calibkit (class pages show inherited members:
    ``fit``, ``predict_proba``, ``save`` of the contract on every calibrator's page)."""
    if what == "class" and name in _FRAMEWORK_ATTRIBUTES:
        return True
    module = str(getattr(obj, "__module__", "") or "")
    if module.startswith("sklearn."):
        return True
    if what == "class" and module and not module.startswith("calibkit"):
        return True  # inherited from torch, dataclasses, ...: a class page shows calibkit's own
    return None


def _public_reference(app: Any, env: Any, node: Any, contnode: Any) -> Any:
    """Link a reference to a public name by its defining module's path
    (``calibkit.metrics.ece``, ``~calibkit.core.binning.BinStats``) to its ``calibkit.X`` page."""
    target = str(node.get("reftarget", ""))
    short = target.rsplit(".", 1)[-1]
    if node.get("refdomain") != "py" or short not in calibkit.__all__:
        return None
    if target == f"calibkit.{short}" or not target.startswith("calibkit."):
        return None
    domain = env.get_domain("py")
    return domain.resolve_xref(
        env, node["refdoc"], app.builder, node["reftype"], f"calibkit.{short}", node, contnode
    )


#: A page's line that lists the catalogued calibrators of a kind.
CATALOG_LINE = re.compile(r"^\.\. catalog:: (\w+)$", re.MULTILINE)


def catalog_autosummary(text: str) -> str:
    """``text`` (a page's source) with each ``.. catalog:: KIND`` line replaced by the
    autosummary of the public classes of the entries of ``KIND`` in the catalog, in its
    order."""

    def listing(match: re.Match[str]) -> str:
        entries = catalog.ENTRIES.values()
        names = [e.class_name for e in entries if e.exported and e.kind == match.group(1)]
        if not names:
            raise ValueError(f"no public calibrator of kind {match.group(1)!r}: {match.group(0)}")
        head = ".. autosummary::\n   :toctree: generated\n   :nosignatures:\n\n"
        return head + "\n".join(f"   {name}" for name in names)

    return CATALOG_LINE.sub(listing, text)


def _expand_catalog(app: Any, docname: str, source: list[str]) -> None:
    source[0] = catalog_autosummary(source[0])


def _catalog_stubs(app: Any) -> None:
    """The stub pages of the catalogued classes (autosummary's generator reads the pages'
    files as written, without their ``.. catalog::`` lines expanded)."""
    from sphinx.ext.autosummary.generate import generate_autosummary_docs

    kinds = dict.fromkeys(e.kind for e in catalog.ENTRIES.values() if e.exported)
    listing = Path(app.doctreedir) / "catalog.rst"
    listing.parent.mkdir(parents=True, exist_ok=True)
    text = ".. currentmodule:: calibkit\n\n" + "".join(f".. catalog:: {k}\n\n" for k in kinds)
    listing.write_text(catalog_autosummary(text), encoding="utf-8")
    generate_autosummary_docs(
        [str(listing)],
        output_dir=Path(app.srcdir) / "generated",
        app=app,
        imported_members=app.config.autosummary_imported_members,
        overwrite=app.config.autosummary_generate_overwrite,
    )


def setup(app: Any) -> None:
    app.connect("source-read", _expand_catalog)
    app.connect("builder-inited", _catalog_stubs, priority=400)  # before autosummary's
    app.connect("missing-reference", _public_reference)
    app.connect("autodoc-process-docstring", _data_docstring)
    app.connect("autodoc-process-bases", _public_bases)
    app.connect("autodoc-skip-member", _skip_member)
