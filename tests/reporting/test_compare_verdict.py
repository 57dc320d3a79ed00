"""The verdict of a comparison (``calibkit.reporting.compare_verdict``): what to use, what it
buys, and no method crowned for an ECE below its noise floor."""

from __future__ import annotations

import dataclasses

from calibkit.core.options import Resampling
from calibkit.workflows.comparison import Comparison


def test_the_report_says_what_to_use_and_does_not_crown_an_ece_below_its_floor() -> None:
    import numpy as np

    from calibkit.core.outputs import as_outputs
    from calibkit.reporting.compare_report import results_dict
    from calibkit.reporting.compare_verdict import compare_verdict, recommendation_paragraphs
    from calibkit.workflows.compare import compare

    rng = np.random.default_rng(0)
    z = rng.normal(size=(2000, 3)) * 2
    p = np.exp(z / 1.5) / np.exp(z / 1.5).sum(axis=1, keepdims=True)
    y = np.array([rng.choice(3, p=row) for row in p])
    cal, test = as_outputs(y[:1000], logits=z[:1000]), as_outputs(y[1000:], logits=z[1000:])
    comp = compare(
        cal, test, ["histogram"], resampling=Resampling(n_boot=0, seed=0), recommend=True
    )
    assert comp.recommendation is not None
    text = recommendation_paragraphs(comp)
    verdict = compare_verdict(comp)
    assert verdict.headline.startswith(f"Use `{comp.recommendation.method}`")
    assert verdict.detail.startswith("Chosen on the calibration part alone: ")
    if comp.recommendation.method in [r.method for r in comp.rows]:
        assert text[0].startswith(f"{comp.recommendation.method} on the test part: NLL")
    else:  # chosen among the candidates and temperature scaling, which was not compared
        assert "was not among the compared methods" in verdict.detail
    below = [
        r.method for r in comp.rows if r.evaluation.values["ece"] < r.evaluation.values["ece_floor"]
    ]
    if below:
        assert ", ".join(below) in text[-1]
        assert "noise floor" in text[-1]
    assert results_dict(comp, "t")["recommendation"]["method"] == comp.recommendation.method


def test_the_verdict_says_what_temperature_scaling_buys_against_the_model(
    chosen: Comparison,
) -> None:
    from calibkit.reporting.compare_verdict import compare_verdict
    from calibkit.workflows.recommendation import Recommendation

    rec = Recommendation("temperature", "no candidate beat temperature", "")
    verdict = compare_verdict(dataclasses.replace(chosen, recommendation=rec))
    none, ts = chosen.rows[0].evaluation.values, chosen.row("temperature").evaluation.values
    assert verdict.headline == (
        "Use `temperature` (temperature scaling): on the test part it lowers NLL from "
        f"{none['nll']:.4f} to "
        f"{ts['nll']:.4f} and ECE from {100 * none['ece']:.2f}% to {100 * ts['ece']:.2f}% "
        "against the uncalibrated model."
    )
