"""Render a :class:`~calibkit.reporting.document.Document` as Markdown or as HTML.

Markdown: GitHub-flavoured; figures are linked from ``figures/<name>``; best cells are
bold, second-best italic. HTML: one self-contained page (inline CSS, figures as base64
data URIs, every text escaped); best cells get ``class="best"`` (bold), second best
``class="second"`` (italic, as in Markdown). Both end with the calibkit version that wrote
them.

Every HTML figure is a link to its full-size file, ``figures/<name>``, written beside the
page by every calibkit report. A gallery shows two figures per row at 1,400 px, each at (or
near) its own size; a figure wider than :data:`WIDE_PX` takes a whole row. Headers wrap; a
table is wrapped in a horizontal scroller only when its estimated width (:func:`table_width`)
exceeds the page's :data:`TEXT_WIDTH`, so at 1,400 px every column of a table that fits is in
view.

>>> from calibkit.reporting.document import Cell, Document, Paragraph, Section, Table
>>> table = Table("Errors", ["Method", "ECE"], [[Cell("a|b"), Cell("1.00%", best=True)]])
>>> doc = Document("Demo", [Paragraph("x < y"), Section("Errors", [table])])
>>> print(to_markdown(doc).replace(__version__, "V"))
# Demo
<BLANKLINE>
x < y
<BLANKLINE>
## Errors
<BLANKLINE>
| Method | ECE |
|:---|---:|
| a\\|b | **1.00%** |
<BLANKLINE>
Written by calibkit V.
<BLANKLINE>
>>> "<p>x &lt; y</p>" in to_html(doc)
True
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Callable
from dataclasses import dataclass

from calibkit.core.version import __version__
from calibkit.reporting import document

#: Width (CSS pixels) of the page's text column: ``max-width`` of the body.
TEXT_WIDTH = 1320
#: Conservative width of one character of a table cell (13.6 px font) and a cell's padding.
_CHAR_PX, _PAD_PX = 8.0, 20.0
CSS = """
body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:1320px;padding:0 1rem;color:#222}
h1{font-size:1.6rem}h2{font-size:1.2rem;margin-top:2rem}p.meta{color:#555}.scroll{overflow-x:auto}
table{border-collapse:collapse;font-size:.85rem;font-variant-numeric:tabular-nums}
th,td{padding:.3rem .6rem;border-bottom:1px solid #ddd;text-align:right;white-space:nowrap}
th{background:#f3f5f8;border-bottom:2px solid #bbb;white-space:normal}th.l,td.l{text-align:left}
tbody tr:nth-child(even){background:#fafbfc}td.best{font-weight:700;color:#1b5e20}
td.second{font-style:italic}
figcaption{color:#555;font-size:.85rem}img{max-width:100%;height:auto}
.gallery{display:flex;flex-wrap:wrap;gap:1.5rem 1rem;align-items:flex-start}
.gallery figure{flex:0 1 calc(50% - .5rem);min-width:0;margin:0}
.gallery figure.wide{flex-basis:100%}
.verdict{border-left:4px solid #1b5e20;background:#f1f8f2;padding:.6rem 1rem;margin:1rem 0}
.verdict p{margin:.3rem 0}.verdict .headline{font-size:1.15rem;font-weight:600}
.verdict .detail{color:#444}
code{background:#f3f5f8;padding:0 .2rem;border-radius:3px;white-space:nowrap}
details{margin:.4rem 0}summary{cursor:pointer;color:#1a4d8f}
summary h2,summary h3,summary h4{display:inline;font-size:1.05rem;margin:0}
details[open]>summary{margin-bottom:.6rem}
"""
_e = html.escape


@dataclass(frozen=True)
class _Format:
    """How each kind of block is written in one output format."""

    heading: Callable[[str, int], str]
    #: A folded section: its heading and its rendered blocks, joined.
    folded: Callable[[str, int, list[str]], str]
    table: Callable[[document.Table], str]
    figure: Callable[[document.Figure], str]
    gallery: Callable[[list[str]], str]
    paragraph: Callable[[document.Paragraph], str]
    separator: str


def _render(block: document.Block, level: int, fmt: _Format) -> str:
    """``block`` in ``fmt``; a section's heading is of ``level``, its blocks one below."""
    if isinstance(block, document.Section):
        inner = [_render(b, level + 1, fmt) for b in block.blocks]
        if block.folded:
            return fmt.folded(block.title, level, inner)
        return fmt.separator.join([fmt.heading(block.title, level), *inner])
    if isinstance(block, document.Table):
        return fmt.table(block)
    if isinstance(block, document.Figure):
        return fmt.figure(block)
    if isinstance(block, document.Gallery):
        return fmt.gallery([fmt.figure(f) for f in block.figures])
    return fmt.paragraph(block)


# ----- Markdown -------------------------------------------------------------------------------
def _markdown_verdict(verdict: document.Verdict | None) -> list[str]:
    if verdict is None:
        return []
    return [f"**{verdict.headline}**", *([verdict.detail] if verdict.detail else [])]


def to_markdown(doc: document.Document) -> str:
    """The document as Markdown: the verdict first (its headline bold), then the blocks
    separated by blank lines, figures linked.

    Examples
    --------
    >>> from calibkit import Document, Paragraph, Verdict
    >>> doc = Document("Demo", [Paragraph("TS wins.")], verdict=Verdict("Use ts.", "ECE 1%"))
    >>> to_markdown(doc).splitlines()[:7]
    ['# Demo', '', '**Use ts.**', '', 'ECE 1%', '', 'TS wins.']
    """
    parts = [
        f"# {doc.title}",
        *_markdown_verdict(doc.verdict),
        *(_render(b, 2, _MARKDOWN) for b in doc.body),
    ]
    parts.append(f"Written by calibkit {__version__}.")
    return "\n\n".join(parts) + "\n"


def _md_cell(cell: document.Cell) -> str:
    text = cell.text.replace("|", "\\|")
    if cell.best and text:
        return f"**{text}**"
    return f"_{text}_" if cell.second and text else text


def markdown_table(table: document.Table) -> str:
    """A GitHub-flavoured Markdown table (text columns left-aligned, numbers right)."""
    n_right = len(table.header) - table.n_left
    lines = [
        "| " + " | ".join(table.header) + " |",
        "|" + "|".join([":---"] * table.n_left + ["---:"] * n_right) + "|",
    ]
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in table.rows]
    return "\n".join(lines)


# ----- HTML -----------------------------------------------------------------------------------
def to_html(doc: document.Document) -> str:
    """The document as one self-contained HTML page (inline CSS, figures as data URIs).

    Examples
    --------
    >>> from calibkit import Document, Section
    >>> page = to_html(Document("Demo", [Section("Results", [])]))
    >>> page.startswith("<!DOCTYPE html>"), "<h2>Results</h2>" in page
    (True, True)
    """
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{_e(doc.title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{_e(doc.title)}</h1>",
        *_html_verdict(doc.verdict),
        *(_render(b, 2, _HTML) for b in doc.body),
        f'<p class="meta">Written by calibkit {_e(__version__)}.</p>',
        "</body></html>",
        "",
    ]
    return "\n".join(parts)


def _html_verdict(verdict: document.Verdict | None) -> list[str]:
    if verdict is None:
        return []
    detail = f'<p class="detail">{inline_html(verdict.detail)}</p>' if verdict.detail else ""
    return [
        f'<div class="verdict"><p class="headline">{inline_html(verdict.headline)}</p>'
        f"{detail}</div>"
    ]


#: A figure wider than this (pixels) would shrink below ~80% of its size at two per gallery
#: row, so it takes a row of its own (class ``wide``): at 1,400 px every figure is readable.
WIDE_PX = 820


def png_width(png: bytes) -> int:
    """The width in pixels of a PNG (from its header; 0 if ``png`` is not one).

    >>> png_width(b"\\x89PNG\\r\\n\\x1a\\n" + bytes(8) + (624).to_bytes(4, "big"))
    624
    """
    return int.from_bytes(png[16:20], "big") if png[:8] == b"\x89PNG\r\n\x1a\n" else 0


def _html_figure(block: document.Figure) -> str:
    data = base64.b64encode(block.png).decode("ascii")
    wide = ' class="wide"' if png_width(block.png) > WIDE_PX else ""
    return (
        f'<figure{wide}><a href="figures/{_e(block.name)}" title="full size">'
        f'<img src="data:image/png;base64,{data}" alt="{_e(block.caption)}"></a>'
        f"<figcaption>{_e(block.caption)}</figcaption></figure>"
    )


#: The inline Markdown a paragraph may hold, rendered in HTML: ``**bold**`` and
#: ```code``` (after escaping, so no text becomes markup).
_INLINE = (
    (re.compile(r"\*\*(\S(?:.*?\S)?)\*\*"), r"<strong>\1</strong>"),
    (re.compile(r"`([^`]+)`"), r"<code>\1</code>"),
)


def inline_html(text: str) -> str:
    """``text`` escaped, with its inline Markdown (bold, code) as HTML elements.

    >>> inline_html("**Use ms_odir.** It beats `temperature` & 2 * 3 < 7.")
    '<strong>Use ms_odir.</strong> It beats <code>temperature</code> &amp; 2 * 3 &lt; 7.'
    """
    out = _e(text)
    for pattern, element in _INLINE:
        out = pattern.sub(element, out)
    return out


def _html_paragraph(block: document.Paragraph) -> str:
    text = inline_html(block.text)
    return f'<p class="meta">{text}</p>' if block.meta else f"<p>{text}</p>"


def table_width(table: document.Table) -> float:
    """Estimated width in CSS pixels of ``table`` as :data:`CSS` lays it out: each column as
    wide as its longest cell (headers wrap at spaces, so their longest word counts).

    >>> table_width(document.Table("t", ["Method", "ECE"], [[document.Cell("ab")]]))
    112.0
    """
    total = 0.0
    for i, head in enumerate(table.header):
        widths = [len(w) for w in head.split()] + [len(r[i].text) for r in table.rows if i < len(r)]
        total += max(widths, default=0) * _CHAR_PX + _PAD_PX
    return total


def html_table(table: document.Table) -> str:
    """An HTML table with escaped cells (its title is the heading of its section); wrapped
    in a horizontal scroller only if it is wider than the text column."""

    def attr(i: int, best: bool = False, second: bool = False) -> str:
        flags = (("l", i < table.n_left), ("best", best), ("second", second))
        classes = " ".join(c for c, on in flags if on)
        return f' class="{classes}"' if classes else ""

    head = "".join(f"<th{attr(i)}>{_e(h)}</th>" for i, h in enumerate(table.header))
    body = "".join(
        "<tr>"
        + "".join(f"<td{attr(i, c.best, c.second)}>{_e(c.text)}</td>" for i, c in enumerate(row))
        + "</tr>\n"
        for row in table.rows
    )
    text = f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}</tbody></table>"
    return f'<div class="scroll">{text}</div>' if table_width(table) > TEXT_WIDTH else text


def _markdown_folded(title: str, level: int, blocks: list[str]) -> str:
    """A folded section in Markdown: its heading (kept, for the outline and plain-text
    readers), then its blocks inside ``<details>`` (GitHub shows them folded)."""
    parts = [f"{'#' * level} {title}", "<details><summary>Show</summary>", *blocks, "</details>"]
    return "\n\n".join(parts)


def _html_folded(title: str, level: int, blocks: list[str]) -> str:
    """A folded section in HTML: a ``<details>`` element whose summary is the heading."""
    summary = f"<summary><h{level}>{_e(title)}</h{level}></summary>"
    return "\n".join([f"<details>{summary}", *blocks, "</details>"])


_MARKDOWN = _Format(
    heading=lambda title, level: f"{'#' * level} {title}",
    folded=_markdown_folded,
    table=markdown_table,
    figure=lambda f: f"![{f.caption}](figures/{f.name})",
    gallery="\n\n".join,
    paragraph=lambda p: p.text,
    separator="\n\n",
)
_HTML = _Format(
    heading=lambda title, level: f"<h{level}>{_e(title)}</h{level}>",
    folded=_html_folded,
    table=html_table,
    figure=_html_figure,
    gallery=lambda figures: '<div class="gallery">' + "".join(figures) + "</div>",
    paragraph=_html_paragraph,
    separator="\n",
)
