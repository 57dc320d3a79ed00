"""A report in the words of its input (calibkit.reporting.vocabulary)."""

from __future__ import annotations

from calibkit.reporting.document import Cell, Document, Figure, Paragraph, Section, Table, Verdict
from calibkit.reporting.vocabulary import VOCABULARIES, in_words, rewrite
from calibkit.reporting.writer import Report


def test_every_text_of_the_document_and_nothing_else() -> None:
    doc = Document(
        "Samples and classes",
        [
            Section(
                "Per-class results", [Table("Classes", ["Class", "Samples"], [[Cell("3 samples")]])]
            ),
            Figure("samples.png", "ECE of 10 samples", b""),
            Paragraph("Run `calibkit evaluate samples.npz --n-samples 3` on 5 samples."),
        ],
        Verdict("Overconfident on 10 samples.", "10 samples; sample size small"),
    )
    out = in_words(Report("evaluate", doc, {"n_samples": 10}, text="10 samples"), "options", ["n1"])
    d = out.document
    assert d.title == "Questions and options"
    section = d.body[0]
    assert isinstance(section, Section)
    assert section.title == "Per-option results"
    table = section.blocks[0]
    assert isinstance(table, Table)
    assert table.header == ["Option", "Questions"]
    assert table.rows[0][0].text == "3 questions"
    assert d.body[1].name == "samples.png"
    assert d.body[1].caption == "ECE of 10 questions"
    assert d.body[2].text == "Run `calibkit evaluate samples.npz --n-samples 3` on 5 questions."
    assert d.verdict == Verdict("Overconfident on 10 questions.", "10 questions; sample size small")
    assert out.results == {"n_samples": 10}  # numbers and keys untouched
    assert d.body[-1].title == "How the file was read"
    assert out.text.endswith("  n1")


def test_stated_confidence_words() -> None:
    assert rewrite("20 samples, 2 classes", VOCABULARIES["stated"]) == "20 answers, 2 outcomes"


def test_a_folded_section_stays_folded_in_other_words() -> None:
    doc = Document("r", [Section("Per-class samples", [Paragraph("3 samples")], folded=True)])
    out = in_words(Report("evaluate", doc, {}), "options").document.body[0]
    assert isinstance(out, Section)
    assert (out.title, out.folded) == ("Per-option questions", True)
