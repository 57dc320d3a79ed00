"""The study report: results.csv/json, tables, paired tests, figures, Markdown and HTML
(:mod:`.writer`), written from the records the store reads back (never from the runner).

A reproduction adds its own sections with a :data:`SectionBuilder`.
"""

from __future__ import annotations

from calibkit.study.report.writer import (
    ReportSection,
    SectionBuilder,
    report_sections,
    write_study_report,
)

__all__ = ["ReportSection", "SectionBuilder", "report_sections", "write_study_report"]
