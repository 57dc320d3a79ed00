"""The study's verdict: for each model the calibrator its runs recommend (each seed's choice
by ``auto``'s rule on its calibration part alone) and what it buys in mean test NLL and ECE
over the seeds (:func:`study_verdict`); the report opens with it and results.json holds it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from calibkit.calibrators.logit.auto import margin_words
from calibkit.reporting.compare_verdict import named, nll_ece_change
from calibkit.reporting.document import Verdict
from calibkit.study.store.record import RunRecord

__all__ = ["recommended", "seeds_text", "study_verdict"]


def recommended(runs: Sequence[RunRecord], by_cal: dict[str, Any]) -> tuple[str, str]:
    """The calibrator a model's runs recommend (each run's choice by ``auto``'s rule on its
    calibration part alone), and how many seeds chose it: the most chosen; on a tie,
    temperature scaling if it is among them, else the lowest mean test NLL. Never crowned
    by ECE, which histogram binning games."""
    chosen = Counter(r.recommended for r in runs if r.recommended)
    if not chosen:
        return "–", ""
    top = max(chosen.values())
    tied = [m for m, c in chosen.items() if c == top]
    nll = {m: by_cal.get(m, {}).get("nll", (math.inf, 0.0))[0] for m in tied}
    best = "temperature" if "temperature" in tied else min(tied, key=lambda m: nll[m])
    return best, f"{chosen[best]}/{len(runs)}"


def seeds_text(chosen: str) -> str:
    """``"2/3"`` (seeds that chose a method, of all) as ``2/3 seeds``, ``1/1 seed``."""
    return f"{chosen} {'seed' if chosen.endswith('/1') else 'seeds'}"


def _buys(model: str, method: str, by_cal: dict[str, Any]) -> str:
    """What ``method`` does to ``model``'s mean test NLL and ECE over the seeds, against
    temperature scaling (against the uncalibrated model for temperature scaling)."""
    base = "temperature" if method != "temperature" and "temperature" in by_cal else "none"
    if method not in by_cal or base not in by_cal:
        return ""
    against = "temperature scaling" if base == "temperature" else "the uncalibrated model"
    means = {
        m: {k: by_cal[m][k][0] for k in ("nll", "ece") if k in by_cal[m]} for m in (base, method)
    }
    return f"it {nll_ece_change(means[base], means[method])} against {against}"


def study_verdict(records: Sequence[RunRecord], stats: dict[str, Any], smoke: str = "") -> Verdict:
    """The study's verdict: for each model the calibrator its runs recommend
    (:func:`recommended`: each seed's choice on its calibration part alone) and what it buys
    in mean test NLL and ECE over the seeds against temperature scaling (against the
    uncalibrated model when temperature scaling is the choice). ``smoke``: the smoke run's
    summary (:meth:`~calibkit.study.definition.config.StudyConfig.smoke_summary`), when it
    is one: the headline then says that its numbers are not advice, and the detail why."""
    verdict = _study_verdict(records, stats)
    if not smoke:
        return verdict
    head = verdict.headline.removeprefix("Use ")
    if head != verdict.headline:
        head = "at toy size the rule picked " + head
    return Verdict(
        f"Smoke run, not advice: {head[0].lower()}{head[1:]}", f"{smoke} {verdict.detail}"
    )


def _study_verdict(records: Sequence[RunRecord], stats: dict[str, Any]) -> Verdict:
    choices = []
    for model, by_cal in stats.items():
        runs = [r for r in records if r.model == model]
        best, seeds = recommended(runs, by_cal)
        choices.append((model, best, seeds, _buys(model, best, by_cal)))
    rule = (
        "Each seed's run chose on its calibration part alone (cross-fitted NLL; temperature "
        f"scaling unless a richer method beats it by more than {margin_words()}); the most "
        "chosen wins (a tie: temperature scaling, else the lowest mean test NLL). Numbers are "
        "means over the seeds on the test part."
    )
    chosen = [c for c in choices if c[2]]
    if not chosen:
        return Verdict(
            "The runs hold no recommendation: compare the calibrators in the tables "
            "(mean ± std over the seeds), by NLL rather than by the lowest ECE.",
            "Runs written by an older calibkit did not choose a calibrator.",
        )
    if len(choices) == 1:
        model, best, seeds, buys = choices[0]
        head = f"Use {named(best)} for {model}" + (f": over the seeds {buys}." if buys else ".")
        return Verdict(head, f"{seeds_text(seeds)} chose it. {rule}")
    head = "Use " + ", ".join(f"{named(b)} for {m}" for m, b, _, _ in chosen) + "."
    per_model = [f"{m} ({seeds_text(s)}): {buys}." for m, _, s, buys in chosen if buys]
    return Verdict(head, " ".join([*per_model, rule]))
