"""How row keys are shown: labels, percent and ranking come from the metric registry."""

from __future__ import annotations

import pytest

from calibkit.metrics import METRICS
from calibkit.reporting.csv_text import csv_number, csv_text
from calibkit.reporting.document import Table
from calibkit.reporting.tables import (
    ROW_QUANTITIES,
    ColumnInfo,
    column_info,
    format_value,
    meaning,
    meanings,
    metric_keys,
)


@pytest.mark.parametrize("name", list(METRICS))
def test_metric_columns_come_from_the_registry(name: str) -> None:
    m = METRICS.get(name)
    assert column_info(name) == ColumnInfo(m.label, m.percent, m.better)
    assert column_info(f"{name}_floor") == ColumnInfo(f"{m.label} floor", m.percent, None)


def test_row_quantities_and_unknown_keys() -> None:
    assert column_info("temperature") == ColumnInfo("T", False, None)
    assert column_info("fit_seconds") == ColumnInfo("Fit time (s)", False, None)
    assert column_info("calibration_ece") == ColumnInfo("calibration_ece", False, None)
    assert not set(ROW_QUANTITIES) & set(METRICS)


def test_format_value_by_hand() -> None:
    assert format_value("ece", 0.05612) == "5.61%"
    assert format_value("ece_floor", 0.0123) == "1.23%"
    assert format_value("nll", 0.36909) == "0.3691"
    assert format_value("temperature", 1.5) == "1.5000"
    assert format_value("ks", float("nan")) == "n/a"


def test_csv_numbers_round_trip_and_blank_when_missing() -> None:
    assert csv_number(0.1) == "0.1"
    assert float(csv_number(1 / 3)) == 1 / 3
    assert [csv_number(x) for x in (None, float("nan"), float("inf"))] == ["", "", ""]
    assert csv_text(["a", "b"], [["x,y", "1"]]) == 'a,b\n"x,y",1\n'


def test_a_metrics_meaning_is_its_registry_summary_and_which_way_is_better() -> None:
    """Issue #46, item 6: a metric's meaning is declared once, on its registry entry, and
    read by the reports with the direction its entry ranks."""
    assert meaning("nll") == f"{METRICS.get('nll').summary}; lower is better"
    assert meaning("failure_auroc").endswith("; higher is better")
    assert meaning("entropy") == METRICS.get("entropy").summary  # not ranked
    assert meaning("ece_floor").startswith("the ECE a perfectly calibrated model")
    assert meaning("fit_seconds") == meaning("no_such_metric") == ""
    table = Table("t", ["Method", "Brier", "ECE floor", "Fit time (s)"], [])
    assert metric_keys(table) == ["brier"]
    assert meanings(metric_keys(table)) == [f"**Brier**: {meaning('brier')}."]
