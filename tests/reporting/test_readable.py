"""Every figure reads on its own and every page shows everything: titles inside the figure,
the ends of the unit axes whole, a legend entry per colour; figures linked to their files,
tables without a scroller when they fit, the text agreeing with the CSS."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from matplotlib.text import Text

from calibkit import Resampling
from calibkit.core.binning import BinStats, bin_stats
from calibkit.core.outputs import as_outputs
from calibkit.core.splits import split_outputs
from calibkit.reporting.compare_report import write_compare_report
from calibkit.reporting.curves import ece_temperature_figure
from calibkit.reporting.document import Cell, Document, Section, Table
from calibkit.reporting.figures import reliability_figure, reliability_grid
from calibkit.reporting.render import CSS, TEXT_WIDTH, table_width, to_html
from calibkit.study.report.writer import HOW_TO_READ as STUDY_HOW_TO_READ
from calibkit.workflows.compare import compare

LONG = "/home/someone/experiments/2026/cifar10/resnet18/seed0/predictions_test_and_val.npz"


def stats() -> BinStats:
    rng = np.random.default_rng(0)
    conf = np.concatenate([rng.beta(5, 1.5, size=800), [1.0, 0.999]])
    outcome = (rng.random(conf.size) < conf**1.3).astype(np.float64)
    return bin_stats(conf, outcome, n_bins=15)


def figures() -> dict[str, Figure]:
    t = np.linspace(0.05, 5, 50)
    return {
        "single": reliability_figure(stats(), title=f"temperature: {LONG}", ece=0.1, subtitle="s"),
        "grid": reliability_grid([(f"m{i}", stats(), 0.1) for i in range(5)], title=LONG),
        "curve": ece_temperature_figure(t, np.abs(np.log(t)) / 10, fitted={"ts": 1.5}, title=LONG),
    }


def inside(text: Text, fig: Figure) -> bool:
    """Whether ``text``, as drawn, lies wholly inside the figure (half a pixel of slack)."""
    box = text.get_window_extent(fig.canvas.get_renderer())  # type: ignore[attr-defined]
    outer = fig.bbox.padded(0.5)
    across = outer.x0 <= box.x0 <= box.x1 <= outer.x1
    return bool(across and outer.y0 <= box.y0 <= box.y1 <= outer.y1)


@pytest.mark.parametrize("name", ["single", "grid", "curve"])
def test_titles_lie_inside_the_figure(name: str) -> None:
    fig = figures()[name]
    fig.canvas.draw()
    titles = [t for t in [fig._suptitle, *(ax.title for ax in fig.axes)] if t is not None]
    assert any(LONG in t.get_text().replace("\n", "") for t in titles)
    for t in titles:
        assert inside(t, fig), t.get_text()


@pytest.mark.parametrize("name", ["single", "grid"])
def test_unit_axes_show_one_and_its_tick_label(name: str) -> None:
    fig = figures()[name]
    fig.canvas.draw()
    shown = [ax for ax in fig.axes if ax.get_visible()]
    for ax in shown:
        assert ax.get_xlim()[1] > 1.0
    labels = [t for ax in shown for t in ax.get_xticklabels() if t.get_visible()]
    ones = [t for t in labels if t.get_text() == "1.0"]
    assert ones
    assert all(inside(t, fig) for t in ones)


def drawn_colours(fig: Figure) -> set[str]:
    colours = set()
    for ax in fig.axes:
        colours |= {to_hex(p.get_facecolor()) for p in ax.patches}
        colours |= {to_hex(line.get_color()) for line in ax.lines}
    return colours


def legend_colours(fig: Figure) -> set[str]:
    legends = [*fig.legends, *(ax.get_legend() for ax in fig.axes)]
    colours = set()
    for legend in legends:
        for handle in legend.legend_handles if legend is not None else []:
            get = getattr(handle, "get_color", None) or handle.get_facecolor  # type: ignore[union-attr]
            colours.add(to_hex(get()))
    return colours


@pytest.mark.parametrize("name", ["single", "grid", "curve"])
def test_every_drawn_colour_is_in_a_legend(name: str) -> None:
    fig = figures()[name]
    assert drawn_colours(fig) <= legend_colours(fig)


class Page(HTMLParser):
    """Images with the link around each, the classes of divs, and the visible text."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.images: list[str | None] = []  # the href of the enclosing link, or None
        self.divs: list[str] = []
        self.text: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "a":
            self.links.append(a.get("href") or "")
        elif tag == "img":
            self.images.append(self.links[-1] if self.links else None)
        elif tag == "div":
            self.divs.append(a.get("class") or "")
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        if tag == "a":
            self.links.pop()
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if not self._in_style:
            self.text.append(data)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = np.random.default_rng(0)
    z = rng.normal(size=(600, 10)) * 3.0
    y = np.argmax(z / 2.0 + rng.gumbel(size=z.shape), axis=1)
    cal, test = split_outputs(as_outputs(y, logits=z), 0.5, seed=0)
    methods = ["temperature", "vector", "ms_odir", "dirichlet", "histogram_classwise"]
    comp = compare(cal, test, methods, resampling=Resampling(n_boot=10))
    out = tmp_path_factory.mktemp("readable") / "rep"
    write_compare_report(comp, out, title=f"Calibration report: {LONG}", name="preds.npz")
    return out


def test_every_figure_links_to_its_full_size_file(report: Path) -> None:
    page = Page()
    page.feed((report / "report.html").read_text(encoding="utf-8"))
    assert len(page.images) == len(list((report / "figures").iterdir())) > 2
    for href in page.images:
        assert href is not None
        assert href.startswith("figures/")
        assert (report / href).is_file()


def test_compare_tables_fit_the_page_without_a_scroller(report: Path) -> None:
    page = Page()
    page.feed((report / "report.html").read_text(encoding="utf-8"))
    assert "scroll" not in page.divs


def test_only_a_table_wider_than_the_page_scrolls() -> None:
    narrow = Table("n", ["Method", "ECE"], [[Cell("a"), Cell("1.00%")]])
    wide = Table("w", ["Method", *map(str, range(80))], [[Cell("x" * 20)] * 81])
    assert table_width(narrow) < TEXT_WIDTH < table_width(wide)
    page = Page()
    page.feed(to_html(Document("t", [Section("n", [narrow]), Section("w", [wide])])))
    assert page.divs.count("scroll") == 1


def test_the_text_names_what_the_css_does_for_second_best() -> None:
    assert "td.second{font-style:italic}" in CSS
    assert "underline" not in CSS
    assert "italics the second best" in STUDY_HOW_TO_READ
