"""``calibkit methods`` lists every kind the registry holds, each name with a complete
one-line summary; the name lists the CLI spells (for import speed) equal the library's."""

from __future__ import annotations

import re

import pytest

from calibkit.calibrators import CALIBRATORS, Calibrator
from calibkit.calibrators.persistence import KINDS
from calibkit.cli import main
from calibkit.cli.methods import KIND_USE, MIN_WIDTH, first_sentence, summary
from calibkit.workflows.methods import UNCALIBRATED, UNCALIBRATED_SUMMARY


def _listing(capsys: pytest.CaptureFixture[str], width: int = 100) -> str:
    capsys.readouterr()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COLUMNS", str(width))
        assert main(["methods"]) == 0
    return capsys.readouterr().out


def _entries(out: str) -> dict[str, dict[str, str]]:
    """Per kind, each listed name and its text (continuation lines joined)."""
    kind, name = "", ""
    listed: dict[str, dict[str, str]] = {}
    for line in out.splitlines():
        if line and not line.startswith(" "):
            kind = line.split(":")[0]
        elif line.startswith("  (") or not line.strip():
            continue
        elif not line.startswith("   "):  # a name, then its text
            name, text = line.split(maxsplit=1)
            listed.setdefault(kind, {})[name] = text
        else:
            listed[kind][name] += " " + line.strip()
    return listed


def _accepted_names() -> set[str]:
    """Every name --methods (compare, shift, demo) or --method (fit, conformal, labelshift)
    takes: the registry's names and aliases, and 'none'."""
    return {*CALIBRATORS.names(), *CALIBRATORS._aliases, UNCALIBRATED}


def test_every_kind_under_its_heading(capsys: pytest.CaptureFixture[str]) -> None:
    out = _listing(capsys)
    headings = [line for line in out.splitlines() if line and not line.startswith(" ")]
    assert headings == [f"{kind}: {KINDS[kind]}" for kind in KINDS if CALIBRATORS.names(kind)]
    listed = {k: list(v) for k, v in _entries(out).items()}
    expected = {k: CALIBRATORS.names(kind=k) for k in KINDS if CALIBRATORS.names(kind=k)}
    expected["logits"] = [UNCALIBRATED, *expected["logits"]]  # the model as it came, first
    assert listed == expected
    for name in ("nc_ce", "nc_fast", "nc_fl", "ts_focal", "conformal", "prior_shift"):
        assert name in listed[CALIBRATORS.kind_of(name)]


def test_every_accepted_name_is_listed_once(capsys: pytest.CaptureFixture[str]) -> None:
    """Registered names as entries, aliases in their entry's text ('Also named: ...')."""
    entries = {n: t for kind in _entries(_listing(capsys)).values() for n, t in kind.items()}
    aliases = {a for n, t in entries.items() for a in re.findall(r"Also named: ([^.]+)\.", t)}
    assert set(entries) | {a.strip() for a in ",".join(aliases).split(",")} == _accepted_names()
    assert len(entries) == len(CALIBRATORS.names()) + 1
    assert "(also" not in "".join(entries.values())
    assert entries["bias_corrected_temperature"].endswith("Also named: bcts.")
    assert entries["platt"].endswith("Two classes only.")


@pytest.mark.parametrize("width", [72, 100, 120])
def test_lines_fit_the_width_and_descriptions_are_whole(
    capsys: pytest.CaptureFixture[str], width: int
) -> None:
    out = _listing(capsys, width)
    entries = [line for line in out.splitlines() if line.startswith("  ") and "  (" not in line]
    assert max(len(line) for line in entries) <= width  # headings are one line each
    for kind in _entries(out).values():
        for name, text in kind.items():
            expected = summary(name) if name != UNCALIBRATED else UNCALIBRATED_SUMMARY
            assert text.startswith(expected), (name, text)  # wrapped, never cut


def test_a_narrow_terminal_wraps_at_the_narrowest_width(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = _listing(capsys, 20)
    entries = [line for line in out.splitlines() if line.startswith("   ")]
    assert max(len(line) for line in entries) <= MIN_WIDTH


MARKUP = re.compile(r"``|`|\*|:[a-z]+:|\bsee the module\b|\bmodule doc")


@pytest.mark.parametrize("name", CALIBRATORS.names())
def test_every_method_records_a_full_plain_description(name: str) -> None:
    """Recorded beside its entry point (no docstring fallback for calibkit's own), one
    plain sentence (or two clauses) ending in a full stop."""
    text = CALIBRATORS.info(name).get("summary")
    assert isinstance(text, str), f"{name} declares no summary in calibkit.core.catalog"
    assert summary(name) == text
    assert "\n" not in text
    assert text.endswith("."), text
    assert not text.endswith(".."), text
    assert not text.endswith(("e.g.", "i.e.", "et al.")), text  # cut mid-sentence
    assert text[0].isupper(), text
    assert not MARKUP.search(text), text
    assert text.count("(") == text.count(")"), text


def test_no_line_of_the_listing_has_markup(capsys: pytest.CaptureFixture[str]) -> None:
    out = _listing(capsys)
    assert not [line for line in out.splitlines() if MARKUP.search(line)]


def test_a_summary_recorded_in_the_registry_wins() -> None:
    temperature = CALIBRATORS.get("temperature")

    @CALIBRATORS.register("toy_summary", summary="A toy, for this test.", default=False)
    class ToySummary(temperature):  # type: ignore[valid-type,misc]
        """A first sentence that would otherwise be taken, ``marked up``."""

    try:
        assert summary("toy_summary") == "A toy, for this test."
    finally:
        CALIBRATORS.unregister("toy_summary")


def test_an_entry_without_a_summary_gets_its_docstring_first_sentence() -> None:
    temperature = CALIBRATORS.get("temperature")

    @CALIBRATORS.register("toy_plain", default=False)
    class ToyPlain(temperature):  # type: ignore[valid-type,misc]
        """A toy with ``markup``. A second sentence."""

    try:
        assert summary("toy_plain") == "A toy with markup."
    finally:
        CALIBRATORS.unregister("toy_plain")


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ("Split ``q`` sets; see the module docstring.", "Split q sets."),
        (
            "Uses :class:`~calibkit.calibrators.TemperatureScaling` (module doc).",
            "Uses TemperatureScaling.",
        ),
        (
            "Kumar et al. 2019, e.g. here, on\ntwo lines. Then more.",
            "Kumar et al. 2019, e.g. here, on two lines.",
        ),
        ("First.\n\nA second paragraph.", "First."),
        ("A (short aside) kept; and a clause kept.", "A (short aside) kept; and a clause kept."),
        (
            "Long "
            + "word " * 15
            + "(an aside that is "
            + "long " * 10
            + ") end; more "
            + "x " * 30,
            "Long " + "word " * 15 + "end.",
        ),
    ],
)
def test_the_first_sentence_of_a_docstring(doc: str, expected: str) -> None:
    """Markup, pointers to the module docstring and later sentences are dropped; so are,
    only while too long, asides and then the clauses after a semicolon."""
    assert first_sentence(doc) == expected


def test_kind_uses_cover_every_kind() -> None:
    assert set(KIND_USE) == set(KINDS)


# ----- the kinds the CLI spells, so that building the parser imports no numpy ---------------
def test_cli_calibrator_kinds_are_the_calibrator_classes_kinds() -> None:
    from calibkit.cli import common

    # the kinds a calibrating command takes: those of the Calibrator classes (logits ->
    # probabilities) but the model kind
    calibrators = {n for n in CALIBRATORS.names() if issubclass(CALIBRATORS.get(n), Calibrator)}
    assert set(common.CALIBRATOR_KINDS) == {CALIBRATORS.kind_of(n) for n in calibrators} - {"model"}


def test_format_json_lists_the_same_entries(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    capsys.readouterr()
    assert main(["methods", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    listed = {n for kind in _entries(_listing(capsys)).values() for n in kind}
    by_kind = [n for kind in KINDS for n in CALIBRATORS.names(kind=kind)]
    assert [r["name"] for r in rows] == [UNCALIBRATED, *by_kind]
    assert {r["name"] for r in rows} == listed
    by_name = {r["name"]: r for r in rows}
    assert by_name["bias_corrected_temperature"]["aliases"] == ["bcts"]
    assert by_name["platt"]["binary_only"] is True
    assert by_name["nc_ce"]["kind"] == "model"
    assert all(r["description"] == summary(r["name"]) for r in rows[1:])
