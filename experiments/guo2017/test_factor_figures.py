"""The one-factor-at-a-time study (Guo et al. 2017, Figures 2 and 3): factors read from the
config, tables with Welch tests and rank correlations, figures plotting their inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from calibkit.core.errors import InputError
from calibkit.study.definition.config import DataConfig, ModelSpec, StudyConfig
from experiments.guo2017.factor_figures import (
    epoch_table,
    factor_figure,
    factor_levels,
    factor_table,
    nll_accuracy_epochs_figure,
    overfitting_summary,
    overfitting_table,
    trend,
    trend_table,
)

DATA = DataConfig(dataset="cifar10-jpeg:bird,cat")
MODELS = (
    ModelSpec("lenet5", "base"),
    ModelSpec("lenet5", "width_2", params={"width": 2.0}),
    ModelSpec("lenet5", "width_0.5", params={"width": 0.5}),
    ModelSpec("lenet5", "bn", params={"batch_norm": True}),
    ModelSpec("lenet5", "wd", training={"weight_decay": 0.005}),
)
ECES = {"base": [0.02, 0.03, 0.025], "width_2": [0.05, 0.06, 0.055], "width_0.5": [0.01] * 3}
ECES |= {"bn": [0.02, 0.04, 0.03], "wd": [0.021, 0.029, 0.026]}


def _rows() -> list[dict[str, object]]:
    return [
        {"model": m, "seed": s, "calibrator": "none", "ece": e, "nll": 0.4 + e, "accuracy": 0.8}
        | {"ece_floor": 0.01}
        for m, values in ECES.items()
        for s, e in enumerate(values)
    ]


def test_factor_levels_read_from_the_config() -> None:
    levels = factor_levels(StudyConfig("s", DATA, MODELS))
    assert levels == {
        "width": [(0.5, "width_0.5"), (1.0, "base"), (2.0, "width_2")],
        "batch_norm": [(0.0, "base"), (1.0, "bn")],
        "weight_decay": [(0.0, "base"), (0.005, "wd")],
    }


@pytest.mark.parametrize(
    "variant",
    [
        ModelSpec("lenet5", "two", params={"width": 2.0, "batch_norm": True}),
        ModelSpec("lenet5", "none", params={"width": 1.0}),
        ModelSpec("resnet20", "other"),
    ],
)
def test_a_variant_must_change_exactly_one_setting(variant: ModelSpec) -> None:
    with pytest.raises(InputError, match=r"models\[1\]"):
        factor_levels(StudyConfig("s", DATA, (MODELS[0], variant)))


def test_factor_table_welch_against_the_base() -> None:
    levels = factor_levels(StudyConfig("s", DATA, MODELS))
    table = factor_table(_rows(), levels, "base")
    width_2 = next(r for r in table.rows if r[2].text == "width_2")
    assert width_2[4].text == "5.50 ± 0.50"  # mean and std (ddof 1) of 5, 6, 5.5 percent
    p = stats.ttest_ind(ECES["width_2"], ECES["base"], equal_var=False).pvalue
    assert width_2[6].text == f"{p:.3f} ↑"
    assert width_2[6].best
    assert next(r for r in table.rows if r[2].text == "base")[6].text == "base"


def test_trend_is_spearman_over_all_runs() -> None:
    pairs = [(0.5, "width_0.5"), (1.0, "base"), (2.0, "width_2")]
    rho, p = trend(_rows(), pairs, "ece", "none")
    x = [0.5] * 3 + [1.0] * 3 + [2.0] * 3
    expected = stats.spearmanr(x, ECES["width_0.5"] + ECES["base"] + ECES["width_2"])
    assert rho == pytest.approx(expected.statistic)
    assert p == pytest.approx(expected.pvalue)
    assert math.isnan(trend(_rows(), pairs, "accuracy", "none")[0])  # constant accuracy
    table = trend_table(_rows(), factor_levels(StudyConfig("s", DATA, MODELS)))
    assert table.rows[0][0].text == "width"
    assert table.rows[0][3].best


def test_factor_figure_plots_the_means() -> None:
    levels = factor_levels(StudyConfig("s", DATA, MODELS))
    fig = factor_figure(_rows(), levels)
    ece_width = fig.axes[3]  # row ECE, column width (row-major: 3 columns per row)
    y = np.asarray(ece_width.lines[0].get_ydata(), dtype=np.float64)
    expected = np.array([np.mean(ECES[k]) for k in ("width_0.5", "base", "width_2")])
    np.testing.assert_allclose(y, expected)


HISTORY = [
    {"epoch": 1, "test_nll": 0.6, "test_accuracy": 0.70, "test_ece": 0.03},
    {"epoch": 2, "test_nll": 0.5, "test_accuracy": 0.75, "test_ece": 0.02},
    {"epoch": 3, "test_nll": 0.7, "test_accuracy": 0.78, "test_ece": 0.06},
]


def test_overfitting_summary_and_table() -> None:
    s = overfitting_summary(HISTORY)
    assert (s["nll_best_epoch"], s["accuracy_best_epoch"]) == (2, 3)
    assert s["nll_rise"] == pytest.approx(0.2)
    assert s["accuracy_after"] == pytest.approx(0.03)
    assert (s["ece_at_best_nll"], s["ece_last"]) == (0.02, 0.06)
    table = overfitting_table({"m": [HISTORY, HISTORY]})
    assert table.rows[0][1].text == "2.0 ± 0.0"
    assert table.rows[0][-1].text == "2/2"
    with pytest.raises(InputError, match="history"):
        overfitting_summary([])


def test_epoch_figure_and_table() -> None:
    fig = nll_accuracy_epochs_figure({"m": [HISTORY, HISTORY]})
    y = np.asarray(fig.axes[0].lines[0].get_ydata(), dtype=np.float64)
    np.testing.assert_allclose(y, np.array([0.6, 0.5, 0.7]))
    table = epoch_table([HISTORY], "m")
    assert [r[2].text for r in table.rows] == ["3.00 ± 0.00", "2.00 ± 0.00", "6.00 ± 0.00"]
