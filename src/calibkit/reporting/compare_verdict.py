"""The verdict of a comparison (``calibkit compare``, ``calibkit demo``) and the words
around it.

The verdict (:func:`compare_verdict`) comes first in the report: which calibrator to use
(chosen on the calibration part alone, :class:`~calibkit.workflows.recommendation.Recommendation`)
and what it buys on the test part in NLL and ECE against temperature scaling (against the
uncalibrated model when temperature scaling is the choice). With groups it also names the
calibrator with the smallest worst-group ECE gap on the test part
(:attr:`~calibkit.workflows.comparison.Comparison.smallest_gap`) with both gaps. Below it:
the rule's numbers on the calibration part (:func:`recommendation_table`) and the longer
explanation (:func:`recommendation_paragraphs`). :mod:`calibkit.reporting.compare_report`
puts them in the report; a method is named as :func:`named` says everywhere a verdict names
one (the study's too).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from calibkit.calibrators.logit.auto import MARGIN_SE, enters_unshrunk
from calibkit.core.catalog import title as method_title
from calibkit.reporting.document import Cell, Table, Verdict
from calibkit.reporting.per_group import per_group_help
from calibkit.reporting.tables import column_info, format_points, format_value
from calibkit.workflows.comparison import Comparison


def metric_change(name: str, before: float, after: float) -> str:
    """'lowers NLL from 0.2410 to 0.2262' (raises, or leaves it at, as the numbers say).

    >>> metric_change("ece", 0.0121, 0.0084), metric_change("nll", 0.2, 0.2)
    ('lowers ECE from 1.21% to 0.84%', 'leaves NLL at 0.2000')
    """
    label = column_info(name).label
    a, b = format_value(name, before), format_value(name, after)
    if a == b:
        return f"leaves {label} at {b}"
    return f"{'lowers' if after < before else 'raises'} {label} from {a} to {b}"


def nll_ece_change(before: Mapping[str, float], after: Mapping[str, float]) -> str:
    """How NLL and ECE change from ``before`` to ``after``, in one phrase.

    >>> nll_ece_change({"nll": 0.25, "ece": 0.02}, {"nll": 0.23, "ece": 0.01})
    'lowers NLL from 0.2500 to 0.2300 and ECE from 2.00% to 1.00%'
    """
    nll, ece = (
        metric_change(n, before.get(n, math.nan), after.get(n, math.nan)) for n in ("nll", "ece")
    )
    verb = nll.split(" ", 1)[0]
    if verb != "leaves" and ece.startswith(verb + " "):  # 'lowers NLL from a to b and ECE ...'
        ece = ece.removeprefix(verb + " ")
    return f"{nll} and {ece}"


def named(method: str) -> str:
    """A method as a verdict names it: its key in code with its declared title
    (:func:`calibkit.core.catalog.title`), a combination ``a+b`` by its parts; the
    key alone for a method declared nowhere (a plug-in's).

    >>> named("ms_odir")
    '`ms_odir` (matrix scaling with off-diagonal and intercept regularisation)'
    >>> named("bcts"), named("someone_elses")
    ('`bcts` (bias-corrected temperature scaling)', '`someone_elses`')
    """
    parts = [method_title(p) for p in method.split("+")]
    if not all(parts):
        return f"`{method}`"
    return f"`{method}` ({', then '.join(p for p in parts if p)})"


def _buys(comp: Comparison, method: str) -> str:
    """What ``method`` does on the test part against temperature scaling (or against the
    uncalibrated model, for temperature scaling or when it was not compared)."""
    rows = {r.method: r.evaluation.values for r in comp.rows}
    base = "temperature" if method != "temperature" and "temperature" in rows else "none"
    against = "temperature scaling" if base == "temperature" else "the uncalibrated model"
    return f"on the test part it {nll_ece_change(rows[base], rows[method])} against {against}"


def paired_nll_sentence(comp: Comparison, method: str) -> str:
    """The paired NLL change on the test part from the row ``_buys`` compares ``method``
    with, with its interval and whether the test part tells the two apart; empty without
    intervals."""
    names = [r.method for r in comp.rows]
    base = "temperature" if method != "temperature" and "temperature" in names else "none"
    ci = comp.nll_change(method, base) if method in names else None
    if ci is None:
        return ""
    against = "temperature scaling" if base == "temperature" else "the uncalibrated model"
    text = (
        f"Paired NLL change on the test part against {against}: {ci.estimate:+.4f} "
        f"({ci.level:.0%} CI [{ci.low:+.4f}, {ci.high:+.4f}])"
    )
    if ci.low <= 0.0 <= ci.high:
        return text + ": the test part cannot tell their NLLs apart."
    return text + "."


def _gap_text(comp: Comparison, method: str) -> str:
    row = comp.row(method)
    assert row.groups is not None
    return format_points(row.groups.gap)  # a difference of percentages


def _gaps_overlap(comp: Comparison, a: str, b: str) -> bool | None:
    ca, cb = comp.row(a).groups, comp.row(b).groups
    if ca is None or cb is None or ca.gap_ci is None or cb.gap_ci is None:
        return None
    return ca.gap_ci[0] <= cb.gap_ci[1] and cb.gap_ci[0] <= ca.gap_ci[1]


def compare_verdict(comp: Comparison) -> Verdict:
    """The verdict of a comparison: the calibrator to use and what it buys on the test part
    (NLL and ECE against temperature scaling, or against the uncalibrated model when
    temperature scaling is the choice); with groups, the calibrator with the smallest
    worst-group ECE gap too; the rule and its numbers on the calibration part below."""
    rec, names = comp.recommendation, [r.method for r in comp.rows]
    if rec is None:
        return Verdict(
            f"No method was chosen: the tables judge {len(names) - 1} calibrators on the test "
            "part (compare(..., recommend=True) chooses one on the calibration part).",
            "Do not pick by the lowest test ECE: step maps such as histogram binning reach it "
            "by luck.",
        )
    use = f"Use {named(rec.method)}"
    buys = _buys(comp, rec.method) if rec.method in names else ""
    detail = [f"Chosen on the calibration part alone: {rec.reason}."]
    if paired := paired_nll_sentence(comp, rec.method):
        detail.append(paired)
    if rec.method not in names:
        detail.append(f"{rec.method} was not among the compared methods: no test numbers.")
    else:
        v = comp.row(rec.method).evaluation.values
        if v.get("ece", math.inf) < v.get("ece_floor", -math.inf):
            floor = format_value("ece", v["ece_floor"])
            detail.append(
                f"Its test ECE is below its noise floor ({floor}): as small as "
                "this test part can measure."
            )
    if helps := per_group_help(comp):
        detail.append(helps)
    gap = comp.smallest_gap
    if gap is None:
        return Verdict(f"{use}: {buys}." if buys else f"{use}.", " ".join(detail))
    if gap == rec.method:
        head = (
            f"{use}: {buys}; it also has the smallest worst-group ECE gap ({_gap_text(comp, gap)})."
        )
        return Verdict(head, " ".join(detail))
    overlap = rec.method in names and _gaps_overlap(comp, gap, rec.method)
    if overlap:  # the test part cannot tell the two gaps apart: no second recommendation
        head = f"{use}: {buys}" if buys else use
        head += (
            f"; its worst-group ECE gap ({_gap_text(comp, rec.method)}) cannot be told apart "
            f"on the test part from the smallest, `{gap}`'s ({_gap_text(comp, gap)})."
        )
        detail.append(
            f"The two gaps' {_level(comp)} intervals overlap, so the test part does not say "
            f"that {named(gap)} is fairer across the groups; more test samples per group "
            "would."
        )
        return Verdict(head, " ".join(detail))
    if buys:  # the headline is about the groups; what the choice buys overall goes below
        detail.insert(0, f"Overall, {buys.removeprefix('on the test part it ')} on the test part.")
        detail[0] = f"Overall, `{rec.method}` " + detail[0].removeprefix("Overall, ")
    head = f"{use} overall; for the groups, {named(gap)} "
    head += f"has the smallest worst-group ECE gap on the test part: {_gap_text(comp, gap)}"
    if rec.method in names and comp.row(rec.method).groups is not None:
        head += f" against {_gap_text(comp, rec.method)} for `{rec.method}`"
        if overlap is False:
            detail.append(
                f"The two gaps' {_level(comp)} intervals do not overlap: the test part tells "
                "them apart."
            )
    detail.append(
        "The overall choice ignores the groups; the smallest gap is read on the test part."
    )
    return Verdict(head + ".", " ".join(detail))


def _level(comp: Comparison) -> str:
    """The intervals' level in words (``95%``)."""
    return f"{comp.rows[0].evaluation.level:.0%}"


def recommendation_paragraphs(comp: Comparison) -> list[str]:
    """The longer explanation below the verdict: the recommended method's test numbers
    beside temperature scaling's, and the methods whose ECE is below its noise floor (not
    better than each other at this size: not crowned)."""
    rec = comp.recommendation
    if rec is None:
        return []
    rows = {r.method: r.evaluation for r in comp.rows}
    text = []
    chosen, ts = rows.get(rec.method), rows.get("temperature")
    if chosen is not None:
        v = chosen.values
        line = (
            f"{rec.method} on the test part: NLL {v['nll']:.4f}, ECE {100 * v['ece']:.2f}% "
            f"(noise floor {100 * v.get('ece_floor', math.nan):.2f}%)"
        )
        if ts is not None and rec.method != "temperature":
            t = ts.values
            line += f"; temperature scaling NLL {t['nll']:.4f}, ECE {100 * t['ece']:.2f}%"
        text.append(line + ".")
    for name, why in rec.not_cross_fitted.items():
        text.append(f"Not a candidate of the recommendation: {name} ({why}).")
    below = [
        r.method
        for r in comp.rows
        if r.evaluation.values.get("ece", math.inf) < r.evaluation.values.get("ece_floor", 0.0)
    ]
    if below:
        text.append(
            "ECE below its noise floor (indistinguishable from calibrated at this test size, "
            "so not better than each other by ECE; compare NLL and Brier): "
            + ", ".join(below)
            + "."
        )
    return text


def recommendation_table(comp: Comparison) -> Table | None:
    """The rule's numbers on the calibration part: each candidate's mean cross-fitted NLL
    and its paired difference from temperature scaling (lowest NLL first; None when
    nothing was cross-fitted)."""
    rec = comp.recommendation
    if rec is None or not rec.scores:
        return None
    rows = []
    for name, score in sorted(rec.scores.items(), key=lambda item: item[1]):
        d = rec.paired.get(name)
        diff = "" if d is None else f"{d[0]:+.4f} ± {d[1]:.4f}"
        beats = "" if d is None else ("yes" if d[0] + MARGIN_SE * d[1] < 0 else "no")
        mark = "chosen" if name == rec.method else ""
        label = f"{name} (unshrunk)" if enters_unshrunk(name) else name
        rows.append(
            [
                Cell(label),
                Cell(f"{score:.4f}", best=name == rec.method),
                Cell(diff),
                Cell(beats),
                Cell(mark),
            ]
        )
    header = [
        "Method",
        "Cross-fitted NLL",
        "Its NLL minus temperature's (± one standard error)",
        f"Beats temperature by > {MARGIN_SE:g} SE",
        "",
    ]
    title = "The rule on the calibration part (cross-fitted NLL)"
    return Table(title, header, rows)


def unshrunk_note(comp: Comparison) -> str:
    """Why a row of the rule's table marked ``(unshrunk)`` does not have the cross-fitted
    NLL its row of the other tables would suggest: the rule cross-fits those methods in
    their published form (:func:`calibkit.calibrators.logit.auto.candidate`), while the
    comparison fits them shrunk towards temperature scaling; empty when none is."""
    rec = comp.recommendation
    marked = [n for n in (rec.scores if rec is not None else {}) if enters_unshrunk(n)]
    if not marked:
        return ""
    return (
        f"Marked (unshrunk): {', '.join(marked)}. The rule cross-fits "
        f"{'this method' if len(marked) == 1 else 'these methods'} in the published form, not "
        "shrunk towards temperature scaling (its paired comparison with temperature scaling "
        "is the guard the shrinkage is elsewhere), so this table's NLL is not that of the map "
        "in the other tables, which are fitted shrunk by a cross-validated strength: vector "
        "and matrix scaling unshrunk have no penalty at all (on few samples per parameter "
        "matrix scaling overfits, hence an NLL far above its row's), MS-ODIR and Dirichlet "
        "calibration keep their penalty but towards the identity map. Where the other "
        "tables say two methods fit the same map, that is of their shrunk fits."
    )
