"""``calibkit methods``: every name ``--methods`` and ``--method`` accept, grouped by kind.

The kinds and their headings are ``calibkit.calibrators.persistence.KINDS``; the names of a
kind are the registry's (``CALIBRATORS.names(kind=...)``), each with the one-sentence
description declared with its entry (``summary=`` in :mod:`calibkit.core.catalog`, read
by :func:`summary`), its notes (two classes only) and its aliases; ``none``, the model's own
probabilities, which ``--methods`` and ``--method`` also accept, comes first. A description
is never cut: it wraps at the terminal's width (:func:`line_width`), each continuation line
indented under the description column (a kind's heading stays on one line).
"""

from __future__ import annotations

import argparse
import inspect
import re
import shutil
import textwrap

from calibkit.cli.options import Subparsers

#: The longest first sentence :func:`first_sentence` gives a docstring without a recorded
#: summary (an entry registered outside calibkit): longer ones lose their asides.
SUMMARY_CHARS = 100
#: The narrowest and widest lines :func:`line_width` lets the terminal ask for.
MIN_WIDTH, MAX_WIDTH = 72, 120
#: Per kind, what ``calibkit`` does with it (shown under the kind's heading).
KIND_USE = {
    "logits": "calibkit fit / apply, compare",
    "groups": "calibkit fit / apply and compare, with --groups KEY",
    "model": "fitted with the model, in Python or by calibkit study; not by calibkit fit",
    "sets": "calibkit fit / apply, conformal",
    "priors": "calibkit fit / apply, labelshift",
}

_ROLE = re.compile(r":[a-z]+:`~?([^`]+)`")  # :class:`~a.b.C` -> C
_SEE = re.compile(r"\s*[(;,]?\s*(see )?the module doc(string)?\)?|\s*\(module doc(string)?\)")
_SENTENCE_END = re.compile(r"(?<!\bal)(?<!\be\.g)(?<!\bi\.e)\.(?=\s|$)")
_ASIDE = re.compile(r"\s+\([^()]*\)")  # " (a remark)"; never "softmax(z)"


def _plain(text: str) -> str:
    """``text`` without reST markup: roles as their target's last name, literals bare."""
    text = _ROLE.sub(lambda m: m.group(1).split(".")[-1], text)
    return text.replace("``", "").replace("`", "")


def summary(name: str) -> str:
    """One complete sentence in plain text saying what the method ``name`` is: the
    ``summary`` its registry entry records (every calibkit method records one), else
    :func:`first_sentence` of its class docstring (an entry registered elsewhere)."""
    from calibkit.calibrators import CALIBRATORS

    recorded = CALIBRATORS.fact(name, "summary")
    if isinstance(recorded, str):
        return recorded
    return first_sentence(inspect.getdoc(CALIBRATORS.get(name)) or "")


def first_sentence(doc: str) -> str:
    """The first sentence of ``doc`` in plain text, ending in a period: without markup and
    pointers to the module docstring, its asides in parentheses dropped (then its clauses
    after a ``;``) while it is :data:`SUMMARY_CHARS` characters or more.

    >>> first_sentence("Split ``q`` sets; see the module docstring. More.")
    'Split q sets.'
    >>> first_sentence("As :class:`~calibkit.X` (module doc), after Kumar et al. 2019. Then.")
    'As X, after Kumar et al. 2019.'
    """
    text = " ".join(_plain(doc.split("\n\n")[0]).split())
    text = _SEE.sub("", text)
    end = _SENTENCE_END.search(text)
    sentence = (text[: end.start()] if end else text).rstrip(" .;,")
    if len(sentence) >= SUMMARY_CHARS:
        sentence = _ASIDE.sub("", sentence)
    if len(sentence) >= SUMMARY_CHARS and ";" in sentence:
        sentence = sentence.split(";")[0].rstrip()
    return sentence + "."


def line_width() -> int:
    """The width the listing wraps at: the terminal's (``COLUMNS`` when set, 100 when
    stdout is not a terminal), kept within [:data:`MIN_WIDTH`, :data:`MAX_WIDTH`]."""
    columns = shutil.get_terminal_size((100, 24)).columns
    return min(max(columns, MIN_WIDTH), MAX_WIDTH)


def entry_lines(name: str, text: str, name_width: int, width: int) -> list[str]:
    """``name`` and ``text`` as lines of at most ``width`` characters: the name in a column
    of ``name_width``, the text wrapped under its own column (never cut).

    >>> entry_lines("ts", "One temperature for all classes.", 4, 30)
    ['  ts    One temperature for', '        all classes.']
    """
    indent = " " * (2 + name_width + 2)
    first = f"  {name:<{name_width}}  "
    wrapped = textwrap.wrap(
        text, width, initial_indent=first, subsequent_indent=indent, break_on_hyphens=False
    )
    return wrapped or [first.rstrip()]


def listing(width: int) -> list[str]:
    """Every line of ``calibkit methods`` wrapped at ``width``."""
    from calibkit.calibrators import CALIBRATORS
    from calibkit.calibrators.persistence import KINDS
    from calibkit.workflows.methods import UNCALIBRATED, UNCALIBRATED_SUMMARY

    name_width = max(len(n) for n in [*CALIBRATORS.names(), UNCALIBRATED])
    lines: list[str] = []
    for kind, heading in KINDS.items():
        names = CALIBRATORS.names(kind=kind)
        if not names:
            continue
        lines += [
            *([""] if lines else []),
            f"{kind}: {heading}",
            f"  ({KIND_USE.get(kind, 'in Python')})",
        ]
        if kind == "logits":
            lines += entry_lines(UNCALIBRATED, UNCALIBRATED_SUMMARY, name_width, width)
        for name in names:
            text = summary(name)
            if CALIBRATORS.fact(name, "binary_only"):
                text += " Two classes only."
            aliases = ", ".join(CALIBRATORS.fact(name, "aliases", ()))
            if aliases:
                text += f" Also named: {aliases}."
            lines += entry_lines(name, text, name_width, width)
    return lines


def entries() -> list[dict[str, object]]:
    """Every accepted name as ``calibkit methods --format json`` gives it: name, kind,
    description, aliases, whether it takes two classes only and runs by default (``none``
    first, of kind ``logits``).

    >>> first, temperature = entries()[:2]
    >>> first["name"], temperature["name"], temperature["kind"], temperature["aliases"]
    ('none', 'temperature', 'logits', [])
    """
    from calibkit.calibrators import CALIBRATORS
    from calibkit.calibrators.persistence import KINDS
    from calibkit.workflows.methods import UNCALIBRATED, UNCALIBRATED_SUMMARY

    none = {"name": UNCALIBRATED, "kind": "logits", "description": UNCALIBRATED_SUMMARY}
    rows: list[dict[str, object]] = [{**none, "aliases": [], "binary_only": False, "default": True}]
    for kind in KINDS:
        for name in CALIBRATORS.names(kind=kind):
            rows.append(
                {
                    "name": name,
                    "kind": kind,
                    "description": summary(name),
                    "aliases": list(CALIBRATORS.fact(name, "aliases", ())),
                    "binary_only": bool(CALIBRATORS.fact(name, "binary_only")),
                    "default": bool(CALIBRATORS.fact(name, "default", True)),
                }
            )
    return rows


def add_arguments(sub: Subparsers) -> None:
    """The ``methods`` subcommand."""
    p = sub.add_parser(
        "methods", help="list every method --methods and --method accept, by kind, described"
    )
    text = "stdout: the listing, or a JSON list of the methods (default %(default)s)"
    p.add_argument("--format", choices=("table", "json"), default="table", help=text)


def run(args: argparse.Namespace) -> int:
    """Print each kind's heading, then each of its names with its description and notes
    (``--format json``: :func:`entries` as JSON)."""
    if getattr(args, "format", "table") == "json":
        import json

        print(json.dumps(entries(), indent=2))
    else:
        print("\n".join(listing(line_width())))
    return 0
