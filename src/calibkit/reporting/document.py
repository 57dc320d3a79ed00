"""The report document model: a title, a verdict, and blocks (paragraphs, tables, figures,
sections).

A report is built once as a :class:`Document` and rendered by :mod:`calibkit.reporting.render`
to Markdown (figures linked from ``figures/``) and to self-contained HTML, and its verdict and
tables as plain text by :mod:`calibkit.reporting.text`; :mod:`calibkit.reporting.writer` writes
the report folder. The document holds text, never markup: the renderers escape it (a
paragraph may hold inline ``**bold**`` and ```code```, rendered as such in HTML).

Every report opens with its :class:`Verdict`: the answer in plain words (``headline``: is the
model overconfident, which calibrator to use, ...) and the statistics behind it one line
below (``detail``).

>>> doc = Document("Demo", [Section("Results", [Table("t", ["Method", "ECE"], [[Cell("ts"),
...     Cell("1.00%", best=True)]])])])
>>> [type(b).__name__ for b in doc.body[0].blocks]
['Table']
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TypeAlias


@dataclass(frozen=True)
class Cell:
    """A table cell: its text, and whether it holds the best or second-best value."""

    text: str
    best: bool = False
    second: bool = False  # second best: italic (Markdown and HTML)


@dataclass(frozen=True)
class Table:
    """A table of text cells; the first ``n_left`` columns are text (left-aligned), the rest
    numbers. ``title`` names the table (a report shows it as the heading of its section).

    Examples
    --------
    >>> from calibkit import to_markdown
    >>> table = Table("ECE", ["Method", "ECE"], [[Cell("ts"), Cell("1.00%", best=True)]])
    >>> to_markdown(Document("Demo", [table])).splitlines()[2:5]
    ['| Method | ECE |', '|:---|---:|', '| ts | **1.00%** |']
    """

    title: str
    header: list[str]
    rows: list[list[Cell]]
    n_left: int = 1


@dataclass(frozen=True)
class Paragraph:
    """A paragraph of plain text; ``meta`` paragraphs (sources, sizes) are shown muted.

    Examples
    --------
    >>> Paragraph("Computed on 1,000 test samples.", meta=True).meta
    True
    """

    text: str
    meta: bool = False


@dataclass(frozen=True)
class Figure:
    """A PNG figure: its file name under ``figures/``, its caption and its bytes.

    Examples
    --------
    >>> Figure("reliability.png", "Reliability diagram", b"")  # the bytes are not shown
    Figure(name='reliability.png', caption='Reliability diagram')
    """

    name: str
    caption: str
    png: bytes = field(repr=False)


@dataclass(frozen=True)
class Gallery:
    """Figures shown side by side (as many per row as fit).

    Examples
    --------
    >>> row = Gallery([Figure("a.png", "Before", b""), Figure("b.png", "After", b"")])
    >>> [figure.name for figure in Document("Demo", [row]).figures()]
    ['a.png', 'b.png']
    """

    figures: list[Figure]


@dataclass(frozen=True)
class Section:
    """A heading and its blocks; a section inside a section is one heading level lower.
    A ``folded`` section shows its heading only until the reader opens it (HTML
    ``<details>``; in Markdown its blocks in a ``<details>`` element under the heading):
    what a report holds beyond its verdict, the table that decides and its figure.

    Examples
    --------
    >>> from calibkit import to_markdown
    >>> doc = Document("Demo", [Section("Results", [Section("Details", [Paragraph("...")])])])
    >>> [line for line in to_markdown(doc).splitlines() if line.startswith("#")]
    ['# Demo', '## Results', '### Details']
    >>> md = to_markdown(Document("Demo", [Section("More", [Paragraph("...")], folded=True)]))
    >>> md.splitlines()[2:9]
    ['## More', '', '<details><summary>Show</summary>', '', '...', '', '</details>']
    """

    title: str
    blocks: list[Block]
    folded: bool = False


#: What a document or a section holds.
Block: TypeAlias = Paragraph | Table | Figure | Gallery | Section


@dataclass(frozen=True)
class Verdict:
    """What a report concludes: the answer in plain words, then the statistics behind it.

    >>> Verdict("The model is overconfident.", "ECE 4.1% against a noise floor of 0.6%.").headline
    'The model is overconfident.'
    """

    headline: str
    detail: str = ""


@dataclass(frozen=True)
class Document:
    """A report: its title, its verdict (shown first), and its blocks, in reading order.

    Examples
    --------
    >>> doc = Document("Demo", [Paragraph("TS wins.")], verdict=Verdict("Use ts.", "ECE 1%"))
    >>> doc.verdict.headline, [type(block).__name__ for block in doc.body]
    ('Use ts.', ['Paragraph'])
    """

    title: str
    body: list[Block]
    verdict: Verdict | None = None

    def figures(self) -> Iterator[Figure]:
        """Every figure of the document, in reading order."""
        yield from _figures(self.body)


def _figures(blocks: list[Block]) -> Iterator[Figure]:
    for block in blocks:
        if isinstance(block, Figure):
            yield block
        elif isinstance(block, Gallery):
            yield from block.figures
        elif isinstance(block, Section):
            yield from _figures(block.blocks)


def table_section(table: Table) -> Section:
    """A section holding ``table`` alone, headed by its title."""
    return Section(table.title, [table])
