"""Every registered extra metric declares the options its function takes
(:attr:`calibkit.metrics.info.MetricInfo.options`), and :func:`calibkit.metrics.extras.extra_values`
passes exactly those."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from calibkit.core.errors import InputError
from calibkit.metrics import METRICS, brier_decomposition, extra_names, risk_at_coverage
from calibkit.metrics.extras import EXTRA_GROUPS, expand_extras, extra_results, extra_values

#: A value for each option an extra may declare (calibkit evaluate gives these).
VALUES = {"n_bins": 10, "mode": "top_label", "coverage": 0.5, "risk": 0.2}


def _data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    z = rng.normal(size=(200, 3)) * 2
    return z, rng.integers(0, 3, 200)


@pytest.mark.parametrize("name", extra_names())
def test_every_declared_option_is_accepted_by_its_function(name: str) -> None:
    info = METRICS.get(name)
    assert set(info.options) <= set(VALUES), f"{name}: an option evaluate does not give"
    params = inspect.signature(info.function).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    for option in info.options:
        assert takes_any or option in params, (name, option)
    z, y = _data()
    value = info(y, logits=z, **{k: VALUES[k] for k in info.options})  # called with them
    assert np.isfinite(value)


def test_extra_values_passes_exactly_the_declared_options() -> None:
    z, y = _data()
    got = extra_values(y, ["risk_at_coverage", "brier_reliability"], logits=z, **VALUES)
    assert got["risk_at_coverage"] == risk_at_coverage(y, logits=z, coverage=0.5)
    assert got["brier_reliability"] == brier_decomposition(y, logits=z, n_bins=10).reliability
    # an option the metric does not declare is not passed (nll_calibration takes no n_bins)
    assert set(extra_values(y, ["nll_calibration"], logits=z, n_bins=3)) == {"nll_calibration"}


def test_groups_expand_in_report_order_and_unknown_names_are_refused() -> None:
    assert expand_extras(["brier_refinement", "decomposition"]) == EXTRA_GROUPS["decomposition"]
    assert expand_extras(["tests"]) == EXTRA_GROUPS["tests"]
    with pytest.raises(InputError, match="'nope'"):
        expand_extras(["nope"])


def test_extra_results_marks_an_undefined_extra_and_computes_the_rest() -> None:
    y = np.array([0, 1, 1, 0, 1, 0])
    probs = np.tile([0.7, 0.3], (6, 1))  # one confidence: one group of risk
    names = ["hosmer_lemeshow_p", "spiegelhalter_statistic", "brier_uncertainty"]
    values, undefined = extra_results(y, names, probs, **VALUES)
    assert np.isnan(values["hosmer_lemeshow_p"])
    assert undefined == {
        "hosmer_lemeshow_p": "too few distinct confidences: 1 group of them, at least 2 needed"
    }
    # Spiegelhalter's Z by hand: correct = y == 0, sum (c - 0.7)(1 - 1.4) / sqrt(6 0.16 0.21)
    correct = (y == 0).astype(float)
    z = np.sum((correct - 0.7) * -0.4) / np.sqrt(6 * 0.16 * 0.21)
    assert values["spiegelhalter_statistic"] == pytest.approx(z, rel=1e-12)
    assert values["brier_uncertainty"] == pytest.approx(0.5, rel=1e-12)  # 3 of each class
    with pytest.raises(InputError, match="too few distinct"):  # extra_values still raises
        extra_values(y, names, probs, **VALUES)
