"""The reporting layer: metric tables, figures and the report documents (Markdown, HTML,
JSON, CSV) of comparisons and studies.

Each name loads its module on first use (PEP 562), so that importing the package does not
load matplotlib. ``shift_report`` is a function of the module of the same name: it is
exported at the package root (``calibkit.shift_report``), not here, where importing the
module would hide the function behind it.
"""

from __future__ import annotations

from calibkit.core.lazy import lazy_exports

#: Each module -> the names it gives the package (loaded on first access).
_MODULES: dict[str, str] = {
    "calibkit.reporting.display": "ReliabilityDisplay",
    "calibkit.reporting.figures": "reliability_figure reliability_grid smooth_reliability_figure",
    "calibkit.reporting.figure_style": "save_figure",
    "calibkit.reporting.curves": "ece_temperature_figure risk_coverage_figure",
    "calibkit.reporting.compare_report": "write_compare_report",
    "calibkit.reporting.shift_report": "write_shift_report",
    "calibkit.reporting.document": "Document Figure Gallery Paragraph Section Table Verdict",
    "calibkit.reporting.render": "to_html to_markdown",
    "calibkit.reporting.evaluate_report": "evaluation_report",
    "calibkit.reporting.writer": "Report print_report write_report",
}
__all__, __getattr__ = lazy_exports(__name__, _MODULES)
