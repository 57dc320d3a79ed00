"""Judge every post-hoc calibrator on the studies' saved runs; summarise in docs/.

For each study folder under ``--runs`` and each run ``runs/<label>/seed-<s>/logits.npz``
(``cal_logits``, ``cal_labels``, ``test_logits``, ``test_labels``), every applicable
registered calibrator, the named-only ones of issue 15 included, is fitted on the
calibration part and judged on the test part with :func:`calibkit.workflows.compare.compare`
(15 bins, no bootstrap). Runs whose training collapsed to near-uniform outputs (test
accuracy below ``1 / K + 0.10``; the collapsed DECE / DCA runs output near-equal logits) are
skipped and listed.

Per folder and method: mean +- std over runs of test NLL, ECE and Brier; the number of runs
on which the method has the best NLL and the best ECE; and a paired comparison (mean
difference over runs, paired t-test p) against temperature scaling and against the reference
with the lowest mean NLL among ms_odir / dirichlet (and platt / beta for two classes).
Per-run numbers are cached in ``<out>/<folder>.json`` so an interrupted run resumes; the
tables (copied into ``docs/study-runs-calibrators.md``) go to ``<out>/tables.md`` and the
aggregates to ``<out>/summary.json``.

    nice -n 5 .venv/bin/python scripts/judge_study_runs.py [--runs /work/runs] \
        [--out /work/runs/judge]
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from calibkit import Binning, Resampling
from calibkit.calibrators.logit.auto import named_only
from calibkit.core.outputs import as_outputs
from calibkit.study.store.run_folder import RunFolder
from calibkit.workflows.compare import compare
from calibkit.workflows.methods import applicable_methods

FOLDERS = (
    "wang2021_birdcat",
    "losses_survey",
    "guo2017_birdcat",
    "guo2017_cifar10",
    "nc_birdcat_lenet5",
)
METRICS = ("nll", "ece", "brier", "accuracy")
#: A run is collapsed when its test accuracy is below 1 / K plus this margin.
COLLAPSE_MARGIN = 0.10
_log = logging.getLogger("judge_study_runs")


#: The published vector, matrix, MS-ODIR and Dirichlet scalings, as the documented tables
#: were made (the library's default since issue 22 shrinks them towards temperature scaling).
UNSHRUNK: dict[str, dict[str, Any]] = {
    m: {"shrink": "none"} for m in ("vector", "matrix", "ms_odir", "dirichlet")
}


def judge_run(path: Path) -> dict[str, Any]:
    """Every applicable method's test metrics on one run's saved logits."""
    d = np.load(path)
    cal = as_outputs(d["cal_labels"], logits=d["cal_logits"])
    test = as_outputs(d["test_labels"], logits=d["test_logits"])
    methods = applicable_methods(cal.n_classes, cal.n_samples)
    methods += [m for m in ("matrix", *named_only()) if m not in methods]
    comp = compare(
        cal,
        test,
        methods,
        params=UNSHRUNK,
        binning=Binning(n_bins=15),
        resampling=Resampling(n_boot=0),
    )
    rows = {r.method: {k: float(r.evaluation.values[k]) for k in METRICS} for r in comp.rows}
    return {
        "n_classes": cal.n_classes,
        "n_cal": cal.n_samples,
        "n_test": test.n_samples,
        "rows": rows,
    }


def judge_folder(folder: Path, cache: Path) -> dict[str, Any]:
    """Per-run results of one study folder (cached in ``cache``)."""
    done: dict[str, Any] = json.loads(cache.read_text()) if cache.exists() else {}
    for path in sorted(folder.glob(f"{RunFolder.GLOB}/{RunFolder.LOGITS}")):
        key = f"{path.parts[-3]}/{path.parts[-2]}"
        if key in done:
            continue
        t0 = time.perf_counter()
        done[key] = judge_run(path)
        _log.info(f"{folder.name} {key}: {time.perf_counter() - t0:.1f} s")
        cache.write_text(json.dumps(done, indent=1))
    return done


def collapsed(run: dict[str, Any]) -> bool:
    """Whether the run's uncalibrated test accuracy is near chance."""
    return bool(run["rows"]["none"]["accuracy"] < 1 / run["n_classes"] + COLLAPSE_MARGIN)


def _paired(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """Mean of ``a - b`` and the paired t-test p (nan when undefined)."""
    diff = a - b
    if len(diff) < 2 or np.allclose(diff, diff[0]):
        return float(diff.mean()), math.nan
    return float(diff.mean()), float(stats.ttest_rel(a, b).pvalue)


def summarise(runs: dict[str, Any]) -> dict[str, Any]:
    """Mean / std / wins / paired comparisons over the kept runs of one folder."""
    kept = {k: r for k, r in runs.items() if not collapsed(r)}
    methods = list(next(iter(kept.values()))["rows"])
    arr = {
        m: {k: np.array([r["rows"][m][k] for r in kept.values()]) for k in METRICS} for m in methods
    }
    fitted = [m for m in methods if m != "none"]
    wins = {k: dict.fromkeys(methods, 0) for k in ("nll", "ece")}
    for r in kept.values():
        for k in wins:
            scores = {m: r["rows"][m][k] for m in fitted}
            wins[k][min(scores, key=scores.__getitem__)] += 1
    binary = next(iter(kept.values()))["n_classes"] == 2
    refs = ["ms_odir", "dirichlet", *(["platt", "beta"] if binary else [])]
    ref = min(refs, key=lambda m: arr[m]["nll"].mean())
    table = {}
    for m in methods:
        row = {f"{k}_{s}": float(getattr(arr[m][k], s)()) for k in METRICS for s in ("mean", "std")}
        row |= {f"wins_{k}": wins[k][m] for k in wins}
        for name, base in (("ts", "temperature"), ("ref", ref)):
            for k in ("nll", "ece"):
                row[f"d{k}_{name}"], row[f"p{k}_{name}"] = _paired(arr[m][k], arr[base][k])
        table[m] = row
    skipped = sorted(k for k in runs if k not in kept)
    return {
        "n_runs": len(kept),
        "skipped": skipped,
        "ref": ref,
        "table": table,
        "skipped_acc": {k: runs[k]["rows"]["none"]["accuracy"] for k in skipped},
    }


def _p(p: float) -> str:
    return "-" if math.isnan(p) else (f"{p:.0e}" if p < 1e-3 else f"{p:.3f}")


def render_folder(name: str, s: dict[str, Any]) -> list[str]:
    """Markdown table of one folder, rows sorted by mean test NLL."""
    ref = s["ref"]
    lines = [f"### {name} ({s['n_runs']} runs)", ""]
    if s["skipped"]:
        acc = ", ".join(f"{k} ({100 * a:.1f}%)" for k, a in s["skipped_acc"].items())
        lines += [f"Skipped (collapsed, test accuracy near chance): {acc}.", ""]
    lines += [
        f"| method | NLL | ECE (%) | Brier | best NLL | best ECE | dNLL vs TS (p) "
        f"| dECE vs TS (p) | dNLL vs {ref} (p) | dECE vs {ref} (p) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    order = sorted(s["table"], key=lambda m: s["table"][m]["nll_mean"])
    for m in order:
        r = s["table"][m]
        cells = [
            f"{r['nll_mean']:.4f} ± {r['nll_std']:.4f}",
            f"{100 * r['ece_mean']:.2f} ± {100 * r['ece_std']:.2f}",
            f"{r['brier_mean']:.4f} ± {r['brier_std']:.4f}",
            str(r["wins_nll"]),
            str(r["wins_ece"]),
        ]
        for name_ in ("ts", "ref"):
            cells.append(f"{r[f'dnll_{name_}']:+.4f} ({_p(r[f'pnll_{name_}'])})")
            cells.append(f"{100 * r[f'dece_{name_}']:+.2f} ({_p(r[f'pece_{name_}'])})")
        lines.append(f"| `{m}` | " + " | ".join(cells) + " |")
    return [*lines, ""]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=Path, default=Path("/work/runs"))
    ap.add_argument("--out", type=Path, default=Path("/work/runs/judge"))
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    logging.getLogger("calibkit").setLevel(logging.WARNING)
    args.out.mkdir(parents=True, exist_ok=True)
    lines: list[str] = []
    summary = {}
    for name in FOLDERS:
        runs = judge_folder(args.runs / name, args.out / f"{name}.json")
        summary[name] = summarise(runs)
        lines += render_folder(name, summary[name])
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1))
    (args.out / "tables.md").write_text("\n".join(lines))
    _log.info(f"wrote {args.out / 'tables.md'}")


if __name__ == "__main__":
    main()
