"""The command line's one vocabulary (``calibkit.cli.glossary``): every option of every
parser is in the glossary under one spelling with one meaning, the commands that should take
a shared option do, and ``docs/cli.md`` shows the glossary."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from calibkit.cli.glossary import GLOSSARY, glossary_markdown
from calibkit.cli.parser import COMMANDS, UsageError, build_parser

ROOT = Path(__file__).resolve().parents[2]


def _parsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {"": parser, **sub.choices}


def _options(p: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """Each visible long option of ``p``."""
    return {
        o: a
        for a in p._actions
        if a.help != argparse.SUPPRESS
        for o in a.option_strings
        if o.startswith("--") and o not in ("--help", "--version")
    }


def test_every_option_is_in_the_glossary_with_its_commands() -> None:
    seen: dict[str, set[str]] = {}
    for command, p in _parsers().items():
        for option in _options(p):
            assert option in GLOSSARY, f"{command or 'calibkit'} {option}: not in the glossary"
            seen.setdefault(option, set()).add(command)
    for option, term in GLOSSARY.items():
        where = seen.get(option, set()) - {""}
        assert where == set(term.commands), (
            f"{option}: in {sorted(where)}, glossary says {term.commands}"
        )


def test_one_spelling_per_concept() -> None:
    concepts = [t.concept for t in GLOSSARY.values()]
    twice = {c for c in concepts if concepts.count(c) > 1}
    assert not twice, f"concepts spelled twice: {twice}"


def test_one_meaning_per_spelling() -> None:
    """An option takes the same kind of value everywhere: same metavar, choices, type
    (``--out`` names a folder where a command writes a report, the file where fit and apply
    write theirs: one concept, where the output goes, with the metavar saying which)."""
    kinds: dict[str, set[tuple[object, ...]]] = {}
    for p in _parsers().values():
        for option, a in _options(p).items():
            metavar = None if option == "--out" else a.metavar
            kind = (
                metavar,
                tuple(a.choices or ()),
                getattr(a.type, "__qualname__", a.type),
                a.nargs,
            )
            kinds.setdefault(option, set()).add(kind)
    differing = {o: k for o, k in kinds.items() if len(k) > 1}
    assert not differing, f"options with two meanings: {differing}"


#: The spellings replaced before 0.1.0 (issue #45, item 4): no release had them, so none is
#: kept; each is refused as any unknown option (the abbreviation of a longer one included).
REMOVED = [
    ["compare", "f.npz", "--split", "0.3"],
    ["conformal", "f.npz", "--split", "0.3"],
    ["conformal", "f.npz", "--score", "lac"],
    ["conformal", "f.npz", "--calibrator", "temperature"],
    ["shift", "--model", "resnet20", "--weights", "w.pt", "--conformal", "lac"],
    ["fit", "f.npz", "--method", "temperature", "--output", "t.json"],
    ["apply", "t.json", "f.npz", "--output", "p.npz"],
    ["labelshift", "--cal", "a.npz", "--target", "b.npz", "--labels", "y.npy"],
    ["labelshift", "--cal", "a.npz", "--target", "b.npz", "--calibrator", "temperature"],
    ["labelshift", "a.npz", "b.npz"],
]


@pytest.mark.parametrize("argv", REMOVED, ids=lambda argv: " ".join(argv[:1] + argv[-2:]))
def test_a_removed_spelling_is_an_unrecognized_argument(argv: list[str]) -> None:
    with pytest.raises(UsageError, match=f"unrecognized arguments: {' '.join(argv[-2:])}"):
        build_parser().parse_args(argv)


def test_docs_cli_md_holds_the_glossary() -> None:
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert glossary_markdown() in text


def test_every_command_is_documented() -> None:
    assert set(COMMANDS) <= {c for t in GLOSSARY.values() for c in t.commands} | {"methods"}
