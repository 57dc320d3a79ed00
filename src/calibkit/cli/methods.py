"""``calibkit methods``: every registered method, grouped by kind, one line each.

The kinds and their headings are ``calibkit.calibrators.persistence.KINDS``; the names of a
kind are the registry's (``CALIBRATORS.names(kind=...)``), each with its one-sentence
summary (:func:`summary`).
"""

from __future__ import annotations

import argparse
import inspect
import re

from calibkit.cli.options import Subparsers

#: The longest summary :func:`summary` returns (a test holds every registered method to it).
SUMMARY_CHARS = 100
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
    """One complete sentence saying what the method ``name`` is, under
    :data:`SUMMARY_CHARS` characters, in plain text: the registry's ``summary`` metadata
    when the method records one, else :func:`first_sentence` of its class docstring."""
    from calibkit.calibrators import CALIBRATORS

    recorded = CALIBRATORS.info(name).get("summary")
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


def add_arguments(sub: Subparsers) -> None:
    """The ``methods`` subcommand."""
    sub.add_parser("methods", help="list every method by kind (calibrators, sets, priors)")


def run(args: argparse.Namespace) -> int:
    """Print each kind's heading, then each of its names and summaries (aliases after)."""
    from calibkit.calibrators import CALIBRATORS
    from calibkit.calibrators.persistence import KINDS

    width = max(len(n) for n in CALIBRATORS.names())
    first = True
    for kind, heading in KINDS.items():
        names = CALIBRATORS.names(kind=kind)
        if not names:
            continue
        print(("" if first else "\n") + f"{kind}: {heading}")
        print(f"  ({KIND_USE.get(kind, 'in Python')})")
        first = False
        for name in names:
            note = " [2 classes only]" if CALIBRATORS.get(name).binary_only else ""
            aliases = ", ".join(CALIBRATORS.info(name).get("aliases", ()))
            also = f" (also: {aliases})" if aliases else ""
            print(f"  {name:<{width}}  {summary(name)}{note}{also}")
    return 0
