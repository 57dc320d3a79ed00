"""Run the compare workflow on every file in ../shared/data/predictions; summarise in docs/.

Each file is split 5,000 / 5,000 (seeded, stratified); every applicable calibrator, plus
unregularised matrix scaling and the named-only methods of ``EXTRA``, is fitted on the first
part and judged on the second. One report folder per model goes to
``runs/shared-predictions/<model>/`` (skipped when it already exists, so an interrupted run
resumes); the tables (test ECE, test NLL, the best method per file against MS-ODIR /
Dirichlet, a paired bootstrap of sms_cv minus MS-ODIR, and selective prediction: failure
AUROC, AURC and each method's confidence ranking against the uncalibrated model's; and
the calibration tests: KS and Spiegelhalter p-values of a few methods) are written to
``docs/shared-predictions.tables.md``.

    .venv/bin/python scripts/compare_shared_predictions.py [--data ../shared/data] [--n-boot 1000]
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from calibkit import Resampling
from calibkit.calibrators import create_calibrator
from calibkit.core.splits import split_outputs
from calibkit.io.atomic import atomic_write_text
from calibkit.io.predictions import load_predictions
from calibkit.metrics import ece
from calibkit.reporting.compare_report import write_compare_report
from calibkit.reporting.tables import format_p_value
from calibkit.workflows.compare import compare
from calibkit.workflows.methods import applicable_methods

ROOT = Path(__file__).resolve().parents[1]
SHOWN = (
    "none",
    "temperature",
    "temperature_ece",
    "vector",
    "matrix",
    "ms_odir",
    "dirichlet",
    "histogram",
    "histogram_classwise",
    "isotonic",
    "temperature_smoothed",
    "svs",
    "sms",
    "sms_cv",
    "scaling_binning",
    "venn_abers",
    "isotonic_centred",
    "spline",
)
#: The published vector, matrix, MS-ODIR and Dirichlet scalings, as the tables were made
#: (the library's default since issue 22 shrinks them towards temperature scaling; at
#: 5,000 calibration rows that changes their NLL by about 1%: docs/selection.md).
UNSHRUNK: dict[str, dict[str, Any]] = {
    m: {"shrink": "none"} for m in ("vector", "matrix", "ms_odir", "dirichlet")
}
#: Methods run besides compare's default list (issue 15's new calibrators).
EXTRA = (
    "temperature_smoothed",
    "svs",
    "sms",
    "sms_cv",
    "scaling_binning",
    "venn_abers",
    "isotonic_centred",
    "spline",
)


def run(data: Path, out: Path, n_boot: int, seed: int) -> list[dict[str, Any]]:
    files = sorted((data / "predictions").glob("*.npz"))
    if not files:
        sys.exit(f"no prediction files under {data / 'predictions'}")
    results = []
    for f in files:
        folder = out / f.stem
        if not (folder / "results.json").exists():
            t0 = time.perf_counter()
            cal, test = split_outputs(load_predictions(f), 5000, seed=seed)
            methods = applicable_methods(cal.n_classes, cal.labels.shape[0])
            # matrix too where compare leaves it out (100 classes): it shows what ODIR fixes
            methods += [m for m in ("matrix", *EXTRA) if m not in methods]
            comp = compare(
                cal,
                test,
                methods=methods,
                source=f"{f.name}, 5000/5000 split, seed {seed}",
                params=UNSHRUNK,
                resampling=Resampling(n_boot=n_boot, seed=seed),
            )
            write_compare_report(comp, folder, title=f"{f.stem}: post-hoc calibration")
            print(f"{f.stem}: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        results.append(json.loads((folder / "results.json").read_text()))
    return results


def pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * float(x):.2f}"


def summary(results: list[dict[str, Any]]) -> str:
    methods = [m for m in SHOWN if any(r2["method"] == m for r in results for r2 in r["methods"])]
    lines = [
        "| model | K | acc. % | floor % (none / TS) | " + " | ".join(methods) + " | best |",
        "|---" * (len(methods) + 5) + "|",
    ]
    for r in results:
        rows = {m["method"]: m for m in r["methods"]}
        eces = {m: rows[m]["values"]["ece"] for m in methods if m in rows}
        best = min((m for m in eces if m != "none"), key=lambda m: eces[m])
        none = rows["none"]["values"]
        cells = [
            f"{r['source'].split(',')[0].removesuffix('.npz')}",
            str(r["n_classes"]),
            pct(none["accuracy"]),
            f"{pct(none.get('ece_floor'))} / {pct(rows['temperature']['values'].get('ece_floor'))}",
        ]
        cells += [f"**{pct(eces[m])}**" if m == best else pct(eces.get(m)) for m in methods]
        cells.append(best)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def nll_summary(results: list[dict[str, Any]]) -> str:
    methods = [m for m in SHOWN if m in {x["method"] for r in results for x in r["methods"]}]
    lines = ["| model | " + " | ".join(methods) + " | best |", "|---" * (len(methods) + 2) + "|"]
    for r in results:
        rows = {m["method"]: m for m in r["methods"]}
        name = r["source"].split(",")[0].removesuffix(".npz")
        nlls = {m: rows[m]["values"]["nll"] for m in methods if m in rows and m != "none"}
        best = min(nlls, key=lambda m: nlls[m])
        vals = [
            "–"
            if m not in rows
            else f"**{nlls[m]:.4f}**"
            if m == best
            else f"{rows[m]['values']['nll']:.4f}"
            for m in methods
        ]
        lines.append(f"| {name} | " + " | ".join(vals) + f" | {best} |")
    return "\n".join(lines)


def best_summary(results: list[dict[str, Any]]) -> str:
    """Per file: the best method by test NLL and by test ECE, against MS-ODIR / Dirichlet."""
    head = (
        "| model | best by NLL | best by ECE (%) | MS-ODIR / Dirichlet NLL | its ECE (%) "
        "| best beats its NLL without a worse ECE |"
    )
    lines = [head, "|---" * 6 + "|"]
    for r in results:
        rows = {m["method"]: m["values"] for m in r["methods"] if m["method"] in SHOWN}
        name = r["source"].split(",")[0].removesuffix(".npz")
        shown = [m for m in rows if m != "none"]
        by_nll = min(shown, key=lambda m: rows[m]["nll"])
        by_ece = min(shown, key=lambda m: rows[m]["ece"])
        ref = min(("ms_odir", "dirichlet"), key=lambda m: rows[m]["nll"])
        best, odir = rows[by_nll], rows[ref]
        if by_nll in ("ms_odir", "dirichlet"):
            verdict = "– (it is the best)"
        elif best["ece"] <= odir["ece"]:
            verdict = "yes"
        else:
            verdict = f"no: ECE {pct(best['ece'])}"
        lines.append(
            f"| {name} | {by_nll} ({best['nll']:.4f}) | {by_ece} ({pct(rows[by_ece]['ece'])}) "
            f"| {odir['nll']:.4f} | {pct(odir['ece'])} | {verdict} |"
        )
    return "\n".join(lines)


def selective_summary(results: list[dict[str, Any]], metric: str, better: str) -> str:
    """One test-half metric of selective prediction (in %) per file and method, the best
    calibrated one in bold."""
    methods = [m for m in SHOWN if m in {x["method"] for r in results for x in r["methods"]}]
    lines = ["| model | " + " | ".join(methods) + " | best |", "|---" * (len(methods) + 2) + "|"]
    for r in results:
        values = {m["method"]: m["values"][metric] for m in r["methods"] if m["method"] in SHOWN}
        name = r["source"].split(",")[0].removesuffix(".npz")
        pick = max if better == "max" else min
        best = pick((m for m in values if m != "none"), key=lambda m: values[m])
        cells = [f"**{pct(values[m])}**" if m == best else pct(values.get(m)) for m in methods]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {best} |")
    return "\n".join(lines)


def ranking_summary(results: list[dict[str, Any]]) -> str:
    """Kendall's tau-b between each method's test confidences and the uncalibrated ones
    ("same": the very same ranking, ties included)."""
    methods = [m for m in SHOWN[1:] if m in {x["method"] for r in results for x in r["methods"]}]
    lines = ["| model | " + " | ".join(methods) + " |", "|---" * (len(methods) + 1) + "|"]
    for r in results:
        rows = {m["method"]: m.get("ranking") for m in r["methods"]}
        name = r["source"].split(",")[0].removesuffix(".npz")
        cells = []
        for m in methods:
            rk = rows.get(m)
            cells.append(
                "–" if rk is None else "same" if rk["same_as_none"] else f"{rk['kendall_tau']:.3f}"
            )
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


#: The methods of the calibration-test table: the model, temperature scaling, a matrix
#: family and a non-parametric one.
TESTED = ("none", "temperature", "ms_odir", "isotonic", "sms_cv")


def tests_summary(results: list[dict[str, Any]]) -> str:
    """The cumulative-difference KS test's and Spiegelhalter's Z test's p-values (test half,
    top-label) of a few methods per file ("–": no such row)."""
    lines = ["| model | " + " | ".join(TESTED) + " |", "|---" * (len(TESTED) + 1) + "|"]
    for r in results:
        rows = {m["method"]: m.get("tests") or {} for m in r["methods"]}
        name = r["source"].split(",")[0].removesuffix(".npz")
        cells = []
        for m in TESTED:
            tests = rows.get(m, {})
            if "ks" not in tests or "spiegelhalter" not in tests:
                cells.append("–")
                continue
            ks, sp = (tests[t]["p_value"] for t in ("ks", "spiegelhalter"))
            cells.append(f"{format_p_value(ks)} / {format_p_value(sp)}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def paired_summary(data: Path, n_boot: int, seed: int) -> str:
    """sms_cv minus MS-ODIR on each file: test NLL and ECE, with paired bootstrap intervals
    (the same test resamples for both; the calibration half is not resampled)."""
    lines = [
        "| model | NLL difference [95% interval] | ECE difference, points [95% interval] |",
        "|---|---|---|",
    ]
    for f in sorted((data / "predictions").glob("*.npz")):
        cal, test = split_outputs(load_predictions(f), 5000, seed=seed)
        y, n = test.labels, test.labels.shape[0]
        probs = [
            create_calibrator(m, **UNSHRUNK.get(m, {}))
            .fit(cal.as_logits(), cal.labels)
            .predict_proba(test.as_logits())
            for m in ("sms_cv", "ms_odir")
        ]
        losses = [-np.log(np.maximum(p[np.arange(n), y], 1e-300)) for p in probs]
        rng = np.random.default_rng(seed)
        d_nll, d_ece = [], []
        for _ in range(n_boot):
            i = rng.integers(0, n, n)
            d_nll.append(losses[0][i].mean() - losses[1][i].mean())
            d_ece.append(100 * (ece(y[i], probs[0][i]) - ece(y[i], probs[1][i])))
        nll_lo, nll_hi = np.quantile(d_nll, [0.025, 0.975])
        ece_lo, ece_hi = np.quantile(d_ece, [0.025, 0.975])
        diff_nll = losses[0].mean() - losses[1].mean()
        diff_ece = 100 * (ece(y, probs[0]) - ece(y, probs[1]))
        lines.append(
            f"| {f.stem} | {diff_nll:+.4f} [{nll_lo:+.4f}, {nll_hi:+.4f}] "
            f"| {diff_ece:+.2f} [{ece_lo:+.2f}, {ece_hi:+.2f}] |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / "shared-predictions")
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--doc", type=Path, default=ROOT / "docs" / "shared-predictions.tables.md")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="  %(message)s")  # compare's progress
    args.out.mkdir(parents=True, exist_ok=True)
    results = run(args.data, args.out, args.n_boot, args.seed)
    text = (
        "<!-- generated by scripts/compare_shared_predictions.py; do not edit -->\n\n"
        "### Test ECE (%), 15 equal-width bins, top-label\n\n" + summary(results) + "\n\n"
        "### Test NLL\n\n" + nll_summary(results) + "\n\n"
        "### Best method per file\n\n" + best_summary(results) + "\n\n"
        "### sms_cv minus MS-ODIR, paired bootstrap of the test half\n\n"
        + paired_summary(args.data, args.n_boot, args.seed)
        + "\n\n"
        "### Test failure AUROC (%): the confidence separating right from wrong predictions\n\n"
        + selective_summary(results, "failure_auroc", "max")
        + "\n\n"
        "### Test AURC (%), ties entering together (lower is better)\n\n"
        + selective_summary(results, "aurc", "min")
        + "\n\n"
        "### Kendall's tau of each method's test confidences against the uncalibrated ones\n\n"
        + ranking_summary(results)
        + "\n\n"
        "### Calibration tests on the test half: KS p-value / Spiegelhalter p-value\n\n"
        + tests_summary(results)
        + "\n"
    )
    atomic_write_text(args.doc, text)
    print(text)


if __name__ == "__main__":
    main()
