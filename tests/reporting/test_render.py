"""The document model rendered to Markdown and to self-contained HTML: structure, escaping."""

from __future__ import annotations

import base64
import re

from calibkit.core.version import __version__
from calibkit.reporting.document import (
    Cell,
    Document,
    Figure,
    Gallery,
    Paragraph,
    Section,
    Table,
    table_section,
)
from calibkit.reporting.render import CSS, html_table, markdown_table, to_html, to_markdown

PNG = b"\x89PNG\r\n\x1a\nfake"
TABLE = Table(
    "Errors <1>",
    ["Method", "Params", "ECE"],
    [
        [Cell("a|b"), Cell("x=1"), Cell("1.00%", best=True)],
        [Cell("<i>c</i>"), Cell("–"), Cell("2.00%", second=True)],
        [Cell("d"), Cell(""), Cell("", best=True)],
    ],
    n_left=2,
)


def _doc() -> Document:
    inner = Section("Inner & deep", [Paragraph("finding")])
    return Document(
        'Title <b>"A" & B</b>',
        [
            Paragraph("Source: x<y>.npz", meta=True),
            Section("How to read this", [Paragraph("It's 5 < 6 & 7 > 3.")]),
            Section("Objectives", [inner, table_section(TABLE)]),
            Section(
                "Figures",
                [Figure("big.png", "Big <one>", PNG), Gallery([Figure("s1.png", "S1", b"1")])],
            ),
        ],
    )


def test_markdown_table_aligns_and_marks_best_and_second() -> None:
    assert markdown_table(TABLE).splitlines() == [
        "| Method | Params | ECE |",
        "|:---|:---|---:|",
        "| a\\|b | x=1 | **1.00%** |",
        "| <i>c</i> | – | _2.00%_ |",
        "| d |  |  |",
    ]


def test_markdown_document_layout() -> None:
    md = to_markdown(_doc())
    assert md == (
        '# Title <b>"A" & B</b>\n\n'
        "Source: x<y>.npz\n\n"
        "## How to read this\n\nIt's 5 < 6 & 7 > 3.\n\n"
        "## Objectives\n\n### Inner & deep\n\nfinding\n\n"
        "### Errors <1>\n\n"
        + markdown_table(TABLE)
        + "\n\n## Figures\n\n![Big <one>](figures/big.png)\n\n![S1](figures/s1.png)\n\n"
        + f"Written by calibkit {__version__}.\n"
    )


def test_html_escapes_every_text() -> None:
    page = to_html(_doc())
    assert "<b>" not in page
    assert "<i>" not in page
    assert "<y>" not in page
    assert "<title>Title &lt;b&gt;&quot;A&quot; &amp; B&lt;/b&gt;</title>" in page
    assert "<h1>Title &lt;b&gt;&quot;A&quot; &amp; B&lt;/b&gt;</h1>" in page
    assert '<p class="meta">Source: x&lt;y&gt;.npz</p>' in page
    assert "<p>It&#x27;s 5 &lt; 6 &amp; 7 &gt; 3.</p>" in page
    assert "<td>&lt;i&gt;c&lt;/i&gt;</td>" not in page  # a text column is left-aligned
    assert '<td class="l">&lt;i&gt;c&lt;/i&gt;</td>' in page
    assert 'alt="Big &lt;one&gt;"' in page


def test_html_headings_follow_the_nesting() -> None:
    page = to_html(_doc())
    assert "<h2>Objectives</h2>\n<h3>Inner &amp; deep</h3>\n<p>finding</p>" in page
    assert "<h3>Errors &lt;1&gt;</h3>\n" + html_table(TABLE) in page


def test_html_table_marks_best_and_second() -> None:
    text = html_table(TABLE)
    assert '<th class="l">Method</th><th class="l">Params</th><th>ECE</th>' in text
    assert '<td class="best">1.00%</td>' in text
    assert '<td class="second">2.00%</td>' in text
    assert text.count("<tr>") == 4


def test_html_is_self_contained() -> None:
    page = to_html(_doc())
    assert page.startswith("<!DOCTYPE html>\n")
    assert page.endswith("</body></html>\n")
    assert f"<style>{CSS}</style>" in page
    srcs = re.findall(r'src="([^"]+)"', page)
    assert [base64.b64decode(s.split(",", 1)[1]) for s in srcs] == [PNG, b"1"]
    assert '<div class="gallery"><figure>' in page
    assert f'<p class="meta">Written by calibkit {__version__}.</p>' in page


def test_document_lists_its_figures_in_reading_order() -> None:
    assert [f.name for f in _doc().figures()] == ["big.png", "s1.png"]


def test_html_renders_inline_bold_and_code_after_escaping() -> None:
    from calibkit.reporting.document import Document, Paragraph

    page = to_html(Document("t", [Paragraph("**Use <x>.** `a*b` & 2 ** 3", meta=False)]))
    assert "<p><strong>Use &lt;x&gt;.</strong> <code>a*b</code> &amp; 2 ** 3</p>" in page
    assert "<x>" not in page


def test_a_folded_section_shows_its_heading_and_folds_its_blocks() -> None:
    """Issue #46, item 6: what a report holds beyond its first screen is folded: an HTML
    ``<details>`` headed by the section's title; in Markdown the heading, then the blocks
    in ``<details>`` (GitHub folds them)."""
    doc = Document("d", [Section("More <x>", [Paragraph("hidden"), TABLE], folded=True)])
    page = to_html(doc)
    assert "<details><summary><h2>More &lt;x&gt;</h2></summary>\n<p>hidden</p>\n" in page
    assert page.index(html_table(TABLE)) < page.index("</details>")
    md = to_markdown(doc)
    folded = "## More <x>\n\n<details><summary>Show</summary>\n\nhidden\n\n"
    assert folded + markdown_table(TABLE) + "\n\n</details>\n\n" in md
