"""Base against instruction-tuned: how calibrated is each model's answer to multiple-choice
questions, does one temperature fix it, and does one temperature per task help more?

    python experiments/lm/base_vs_instruct.py BASE INSTRUCT --out OUT [--seed 0]

``BASE`` and ``INSTRUCT`` are the folders lm-evaluation-harness wrote with
``--log_samples`` (``samples_<task>_<date>.jsonl``, one per task), read as ``calibkit
--layout lm-eval`` reads them (the harness's log-likelihoods, its ``acc``). For each model
the questions are split once (seeded, stratified, half to calibrate), as ``calibkit compare
--groups task`` does, and ``temperature`` (one temperature) and ``temperature_groupwise``
(one per task) are fitted on the calibration half and judged on the test half:

- the test ECE with the interval of its true value and the NLL, before and after each;
- the fitted temperature;
- the paired change in test NLL of one temperature against none, and of one per task
  against one (``Comparison.nll_change``: a Student-t interval of the difference between
  the fitted maps), and whether the test half can tell them apart;
- the worst-task ECE gap before and after, with the interval of the true gap.

``OUT`` (written whole, a folder calibkit wrote or a new one) gets ``results.md`` (the
table and the sentences the page quotes) and ``results.json`` (every number).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: the repository root on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from calibkit import Resampling
from experiments._driver import driver_parser, input_folder, run_driver

METHODS = ("temperature", "temperature_groupwise")


def judge(folder: Path, seed: int = 0, n_boot: int = 200) -> dict[str, Any]:
    """One model's numbers (the module docstring) from its samples folder."""
    import calibkit as ck
    from calibkit.workflows.compare import compare_parts

    out = ck.load_predictions(folder, layout="lm-eval")
    tasks = ck.load_groups(folder, "task", out.n_samples, layout="lm-eval")
    comp = compare_parts(
        out, groups=tasks, methods=list(METHODS), resampling=Resampling(n_boot=n_boot, seed=seed)
    )
    rows: dict[str, Any] = {}
    for r in comp.rows:
        v, ci = r.evaluation.values, r.evaluation.ci
        assert r.groups is not None
        rows[r.method] = {
            "ece": v["ece"],
            "ece_ci": list(ci["ece"]),
            "ece_floor": v["ece_floor"],
            "nll": v["nll"],
            "accuracy": v["accuracy"],
            "confidence": float(r.reliability.confidence_sum.sum() / r.reliability.total),
            "worst_task_gap": r.groups.gap,
            "worst_task_gap_ci": None if r.groups.gap_ci is None else list(r.groups.gap_ci),
            "worst_task": r.groups.worst_group,
            "params": dict(r.params),
        }
    changes = {}
    for method, against in (("temperature", "none"), ("temperature_groupwise", "temperature")):
        c = comp.nll_change(method, against)
        assert c is not None
        changes[f"{method}_vs_{against}"] = {"estimate": c.estimate, "low": c.low, "high": c.high}
    return {
        "n_questions": out.n_samples,
        "n_tasks": len(set(tasks.tolist())),
        "n_cal": comp.n_cal,
        "n_test": comp.n_test,
        "rows": rows,
        "nll_change": changes,
    }


def _pct(x: float) -> str:
    return f"{100 * x:.2f}%"


def _change(c: dict[str, float]) -> str:
    said = f"{c['estimate']:+.4f} [{c['low']:+.4f}, {c['high']:+.4f}]"
    if c["high"] < 0:
        return said + " (lower)"
    if c["low"] > 0:
        return said + " (higher)"
    return said + " (cannot tell)"


def results_markdown(models: dict[str, dict[str, Any]]) -> str:
    """The table of the page and one sentence per model."""
    head = (
        "| model | questions (tasks) | accuracy | confidence | T | ECE none | ECE temperature "
        "| ECE per task | NLL none | NLL temperature | NLL per task | NLL change: temperature "
        "vs none | NLL change: per task vs temperature | worst-task gap none | temperature | "
        "per task |"
    )
    lines = [head, "|" + "---|" * 16]
    for name, m in models.items():
        r = m["rows"]
        none, ts, gw = r["none"], r["temperature"], r["temperature_groupwise"]

        def ece(row: dict[str, Any]) -> str:
            lo, hi = row["ece_ci"]
            return f"{_pct(row['ece'])} [{_pct(lo)}, {_pct(hi)}]"

        def gap(row: dict[str, Any]) -> str:
            ci = row["worst_task_gap_ci"]
            return f"{100 * row['worst_task_gap']:.1f} pp [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"

        c = m["nll_change"]
        lines.append(
            f"| {name} | {m['n_questions']:,} ({m['n_tasks']}) | {_pct(none['accuracy'])} | "
            f"{_pct(none['confidence'])} | {ts['params']['temperature']:.3f} | {ece(none)} | "
            f"{ece(ts)} | {ece(gw)} | {none['nll']:.4f} | {ts['nll']:.4f} | {gw['nll']:.4f} | "
            f"{_change(c['temperature_vs_none'])} | "
            f"{_change(c['temperature_groupwise_vs_temperature'])} | {gap(none)} | {gap(ts)} | "
            f"{gap(gw)} |"
        )
    notes = [
        "",
        "Test half of each model's questions (the other half calibrates); brackets: 95% "
        "intervals (ECE: of the true ECE; NLL change: paired Student-t interval of the "
        "difference between the fitted maps; gap: of the true worst-task gap, Bonferroni).",
    ]
    return "\n".join(lines + notes) + "\n"


def work(args: argparse.Namespace) -> None:
    from calibkit.io.atomic import atomic_directory, check_replaceable_folder

    out = check_replaceable_folder(Path(args.out), "--out")
    folders = {
        "base": input_folder(args.base, "BASE"),
        "instruct": input_folder(args.instruct, "INSTRUCT"),
    }
    models = {name: judge(folder, args.seed) for name, folder in folders.items()}
    with atomic_directory(out) as tmp:
        (tmp / "results.md").write_text(results_markdown(models), encoding="utf-8")
        (tmp / "results.json").write_text(json.dumps(models, indent=1) + "\n", encoding="utf-8")
    print(results_markdown(models))


def main(argv: list[str] | None = None) -> int:
    parser = driver_parser(__file__, __doc__)
    parser.add_argument("base", metavar="BASE", help="the base model's samples folder")
    parser.add_argument("instruct", metavar="INSTRUCT", help="the tuned model's samples folder")
    parser.add_argument("--out", required=True, help="the results folder (written whole)")
    parser.add_argument("--seed", type=int, default=0, help="the split's seed")
    return run_driver(parser, work, argv)


if __name__ == "__main__":
    sys.exit(main())
