"""``calibkit methods`` lists every kind the registry holds, each name with a complete
one-line summary; the name lists the CLI spells (for import speed) equal the library's."""

from __future__ import annotations

import re

import pytest

from calibkit.calibrators import CALIBRATORS, Calibrator
from calibkit.calibrators.persistence import KINDS
from calibkit.cli import main
from calibkit.cli.methods import KIND_USE, SUMMARY_CHARS, first_sentence, summary


def _listing(capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    assert main(["methods"]) == 0
    return capsys.readouterr().out


def test_every_kind_under_its_heading(capsys: pytest.CaptureFixture[str]) -> None:
    lines = _listing(capsys).splitlines()
    headings = [line for line in lines if line and not line.startswith(" ")]
    assert headings == [f"{kind}: {KINDS[kind]}" for kind in KINDS if CALIBRATORS.names(kind)]
    kind = None
    listed: dict[str, list[str]] = {}
    for line in lines:
        if line and not line.startswith(" "):
            kind = line.split(":")[0]
        elif line.startswith("  ") and not line.startswith("  ("):
            assert kind is not None
            listed.setdefault(kind, []).append(line.split()[0])
    assert listed == {k: CALIBRATORS.names(kind=k) for k in KINDS if CALIBRATORS.names(kind=k)}
    for name in ("nc_ce", "nc_fast", "nc_fl", "ts_focal", "conformal", "prior_shift"):
        assert name in listed[CALIBRATORS.kind_of(name)]


def test_each_line_is_the_name_its_summary_and_its_notes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = _listing(capsys)
    for name in CALIBRATORS.names():
        line = next(line for line in out.splitlines() if line.split()[:1] == [name])
        assert f"  {summary(name)}" in line
    bcts = next(line for line in out.splitlines() if "bias_corrected_temperature " in line)
    assert bcts.endswith("(also: bcts)")
    assert next(line for line in out.splitlines() if "platt " in line).endswith("[2 classes only]")


MARKUP = re.compile(r"``|`|:[a-z]+:|\bsee the module\b|\bmodule doc")


@pytest.mark.parametrize("name", CALIBRATORS.names())
def test_every_method_has_a_one_line_summary(name: str) -> None:
    text = summary(name)
    assert "\n" not in text
    assert text.endswith("."), text
    assert not text.endswith(".."), text
    assert not text.endswith(("e.g.", "i.e.", "et al.")), text  # cut mid-sentence
    assert text[0].isupper(), text
    assert not MARKUP.search(text), text
    assert len(text) < SUMMARY_CHARS, (len(text), text)
    assert text.count("(") == text.count(")"), text


def test_a_summary_recorded_in_the_registry_wins() -> None:
    temperature = CALIBRATORS.get("temperature")

    @CALIBRATORS.register("toy_summary", summary="A toy, for this test.", default=False)
    class ToySummary(temperature):  # type: ignore[valid-type,misc]
        """A first sentence that would otherwise be taken, ``marked up``."""

    try:
        assert summary("toy_summary") == "A toy, for this test."
    finally:
        CALIBRATORS.unregister("toy_summary")


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


# ----- the name lists the CLI spells, so that building the parser imports no numpy ---------
def test_cli_name_lists_equal_the_library() -> None:
    # the name lists of calibkit.cli.glossary.NAME_LISTS: tests/cli/test_glossary.py
    from calibkit.cli import common, fit

    assert tuple(k for k in KINDS if k != "model") == fit.FIT_KINDS
    # the kinds a calibrating command takes: those of the Calibrator classes (logits ->
    # probabilities) but the model kind
    calibrators = {n for n in CALIBRATORS.names() if issubclass(CALIBRATORS.get(n), Calibrator)}
    assert set(common.CALIBRATOR_KINDS) == {CALIBRATORS.kind_of(n) for n in calibrators} - {"model"}
