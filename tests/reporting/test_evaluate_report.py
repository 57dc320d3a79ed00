"""The evaluate report as a newcomer reads it (calibkit.reporting.evaluate_report)."""

from __future__ import annotations

import re

import numpy as np

from calibkit import Resampling
from calibkit.core.outputs import as_outputs
from calibkit.metrics import METRIC_NAMES
from calibkit.reporting.evaluate_report import RISK_COVERAGE, evaluation_report
from calibkit.reporting.render import to_html, to_markdown
from calibkit.reporting.tables import column_info, meaning
from calibkit.workflows.evaluate import evaluate_outputs


def test_each_metric_says_what_it_measures_and_the_rest_is_folded() -> None:
    """Issue #46, item 6: evaluate listed 18 metrics with no one-line meaning under a
    160-word guide. Each row now says what its metric measures (the registry's summary),
    the guide is at most 120 words, and the risk-coverage curves are folded; the terminal's
    table stays as it was, without meanings."""
    rng = np.random.default_rng(0)
    z = rng.normal(size=(800, 4)) * 3
    y = np.argmax(z / 3 + rng.gumbel(size=z.shape), axis=1)
    report = evaluation_report(
        evaluate_outputs(as_outputs(y, logits=z), resampling=Resampling(n_boot=20)), source="p.npz"
    )
    md = to_markdown(report.document)
    for name in METRIC_NAMES:
        assert f"| {column_info(name).label} | {meaning(name)} |" in md
    how = md.split("## How to read this\n\n", 1)[1].split("\n\n", 1)[0]
    assert len(how.split()) <= 120
    page = to_html(report.document)
    shown = re.sub(r"<details>.*?</details>", "", page, flags=re.DOTALL)
    assert RISK_COVERAGE not in shown
    assert RISK_COVERAGE in page
    assert shown.count("<img") == 1  # the reliability diagram
    assert meaning("nll") not in report.text
