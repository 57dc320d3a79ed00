"""Which calibrator to trust on a small calibration set: every method and ``auto`` against
temperature scaling, on the nine shared prediction files.

    .venv/bin/python benchmarks/bench_selection.py [--n-cal 100 300 1000 5000]
        [--seeds 0 1 2 3 4] [--files cifar10_resnet18 ...] [--out docs/selection/selection.csv]
        [--extra-candidates svs sms sms_cv] [--rules one_se lowest] [--nested]

For each file, calibration size ``n`` and split seed: one seeded permutation, the first
``n`` samples to calibrate and the rest to judge; every method is fitted on the calibration
part and its test NLL and ECE written as ratios to temperature scaling's on the same split,
with ``auto`` under its rules (``one_se``, the default: TS unless a richer method beats it
by more than one standard error of the cross-fitted paired NLL; ``lowest``: the lowest
cross-fitted NLL, as before), fitted on the file's probabilities (``fit_outputs``: kind
``probs``, so Dirichlet shares MS-ODIR's fits) with its default candidates for the split's
classes and size (``AutoCalibrator.candidates``: the declared scopes applied) plus
``--extra-candidates`` (the structured family before it was among the defaults).
``--nested`` adds ``auto_nested``: the same candidates and rule, but each fold running
the candidates' own penalty search as before issue 31 (instead of tuning it once on the
whole calibration set). A method that refuses the data is written as refused, with its
message. The rows go to ``--out`` (CSV) one split at a time: a run that is stopped
resumes where it was. ``--table`` prints the medians over seeds as Markdown from that file
without fitting anything; ``--picks`` how often ``auto`` chose each method.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

import numpy as np
from _bench import machine, table

from calibkit.calibrators import AutoCalibrator, Calibrator, create_calibrator
from calibkit.core.errors import InputError
from calibkit.core.outputs import as_outputs
from calibkit.metrics import ece, nll

METHODS = (
    "temperature",
    "svs",
    "vector",
    "matrix",
    "ms_odir",
    "dirichlet",
    "sms",
    "sms_cv",
    "histogram",
    "isotonic",
)
FIELDS = ("file", "n_cal", "seed", "method", "chosen", "nll", "ece", "nll_ratio", "ece_ratio")
#: A method this much above TS's NLL counts as worse.
WORSE = 1.01


class NestedAuto(AutoCalibrator):
    """``auto`` as before issue 31: every fold runs the candidates' own penalty search."""

    def _tune_once(self, *args: object) -> dict[str, Calibrator]:
        return {}


def _auto_methods(k: int, n: int, extra: list[str]) -> list[str]:
    """``auto``'s default candidates for ``k`` classes and ``n`` samples, plus ``extra``."""
    names = AutoCalibrator().candidates(k, n_samples=n)
    return names + [m for m in extra if m not in names]


def _split_rows(
    p: np.ndarray, y: np.ndarray, name: str, n: int, seed: int, args: argparse.Namespace
) -> list[dict]:
    z = np.log(np.maximum(p.astype(np.float64), 1e-300))
    perm = np.random.default_rng(seed).permutation(len(y))
    cal, test = perm[:n], perm[n:]
    fitted: dict[str, tuple[str, object]] = {}
    for method in METHODS:
        try:
            fitted[method] = (method, create_calibrator(method).fit(z[cal], y[cal]))
        except InputError as exc:
            fitted[method] = (f"refused: {exc}", None)
    out = as_outputs(y[cal], probs=p[cal])
    methods = _auto_methods(p.shape[1], n, args.extra_candidates)
    autos = {f"auto_{rule}": AutoCalibrator(methods, rule=rule, seed=seed) for rule in args.rules}
    if args.nested:
        autos["auto_nested"] = NestedAuto(methods, seed=seed)
    for label, auto in autos.items():
        t0 = time.perf_counter()
        auto.fit_outputs(out)
        print(f"  {label}: {time.perf_counter() - t0:.1f}s, {auto.chosen_}", file=sys.stderr)
        fitted[label] = (auto.chosen_, auto)
    base = fitted["temperature"][1]
    assert base is not None
    p_ts = base.predict_proba(z[test])  # type: ignore[attr-defined]
    ts_nll, ts_ece = nll(y[test], probs=p_ts), ece(y[test], probs=p_ts)
    rows = []
    for method, (chosen, cal_) in fitted.items():
        row = {"file": name, "n_cal": n, "seed": seed, "method": method, "chosen": chosen}
        if cal_ is None:
            row.update(nll="", ece="", nll_ratio="", ece_ratio="")
        else:
            p = cal_.predict_proba(z[test])  # type: ignore[attr-defined]
            v_nll, v_ece = nll(y[test], probs=p), ece(y[test], probs=p)
            row.update(
                nll=f"{v_nll:.6g}",
                ece=f"{v_ece:.6g}",
                nll_ratio=f"{v_nll / ts_nll:.6g}",
                ece_ratio=f"{v_ece / ts_ece:.6g}",
            )
        rows.append(row)
    return rows


def _done(out: Path) -> set[tuple[str, int, int]]:
    """The splits already in ``out`` (a file of this benchmark's rows; any other is refused,
    never appended to)."""
    if not out.exists():
        return set()
    with out.open(newline="") as f:
        reader = csv.DictReader(f)
        if tuple(reader.fieldnames or ()) != FIELDS:
            print(
                f"bench_selection: --out: expected a file of its rows, got {out}", file=sys.stderr
            )
            sys.exit(2)
        return {(r["file"], int(r["n_cal"]), int(r["seed"])) for r in reader}


def summary(out: Path) -> str:
    """Medians over the split seeds: per n, each method's median NLL ratio over the files,
    its worst file, how many files it is worse than TS on (> 1.01x), and refusals."""
    with out.open(newline="") as f:
        rows = list(csv.DictReader(f))
    ns = sorted({int(r["n_cal"]) for r in rows})
    methods = list(dict.fromkeys(r["method"] for r in rows))
    headers = ["n_cal", *methods]
    lines = []
    for n in ns:
        cells = [f"{n:,}"]
        for m in methods:
            by_file: dict[str, list[float]] = {}
            refused = 0
            for r in rows:
                if int(r["n_cal"]) == n and r["method"] == m:
                    if r["nll_ratio"]:
                        by_file.setdefault(r["file"], []).append(float(r["nll_ratio"]))
                    else:
                        refused += 1
            if not by_file:
                cells.append(f"refused ({refused})")
                continue
            med = {f: float(np.median(v)) for f, v in by_file.items()}
            worst = max(med, key=lambda f: med[f])
            worse = sum(v > WORSE for v in med.values())
            middle = float(np.median(list(med.values())))
            text = f"{middle:.3f}x, worst {med[worst]:.2f}x, worse {worse}/{len(med)}"
            cells.append(text + (f", refused {refused}" if refused else ""))
        lines.append(cells)
    return table(headers, lines)


def picks(out: Path) -> str:
    """How often each ``auto`` row chose each method, per size and class count, and its
    median test NLL ratio to TS (with the worst split)."""
    with out.open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["method"].startswith("auto")]
    classes = {"cifar100_wideresnet-16-4": 100}
    lines = []
    keys = sorted({(classes.get(r["file"], 10), int(r["n_cal"]), r["method"]) for r in rows})
    for k, n, method in keys:
        sel = [r for r in rows if (classes.get(r["file"], 10), int(r["n_cal"]), r["method"]) ==
               (k, n, method)]  # fmt: skip
        counts: dict[str, int] = {}
        for r in sel:
            counts[r["chosen"]] = counts.get(r["chosen"], 0) + 1
        ratios = [float(r["nll_ratio"]) for r in sel if r["nll_ratio"]]
        chosen = ", ".join(f"{m} {c}" for m, c in sorted(counts.items(), key=lambda i: -i[1]))
        ratio = f"{np.median(ratios):.3f}x (worst {max(ratios):.3f}x)" if ratios else ""
        lines.append([str(k), f"{n:,}", method, f"{len(sel)}", chosen, ratio])
    headers = ["K", "n_cal", "auto", "splits", "chosen", "test NLL / TS's"]
    return table(headers, lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n-cal", type=int, nargs="+", default=[100, 300, 1000, 5000])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--files", nargs="+", default=None)
    here = Path(__file__).resolve().parents[2] / "shared" / "data" / "predictions"
    parser.add_argument("--data", type=Path, default=here)
    parser.add_argument("--out", type=Path, default=Path("selection.csv"))
    parser.add_argument("--table", action="store_true", help="only print the medians")
    parser.add_argument("--picks", action="store_true", help="only print auto's choices")
    parser.add_argument("--extra-candidates", nargs="*", default=[])
    parser.add_argument("--rules", nargs="+", default=["one_se", "lowest"])
    parser.add_argument("--nested", action="store_true")
    args = parser.parse_args()
    if args.table or args.picks:
        print(summary(args.out) if args.table else picks(args.out))
        return 0
    files = sorted(args.data.glob("*.npz"))
    if args.files:
        files = [f for f in files if f.stem in args.files]
    done = _done(args.out)
    new = not args.out.exists()
    print(machine(), file=sys.stderr)
    with args.out.open("a", newline="") as f:
        writer = csv.DictWriter(f, FIELDS)
        if new:
            writer.writeheader()
        loaded = {}
        for path in files:
            data = np.load(path)
            loaded[path.stem] = (data["probs"], data["labels"])
        for n in args.n_cal:  # every file at one size before the next size
            for seed in args.seeds:
                for name, (p, y) in loaded.items():
                    if (name, n, seed) in done or n >= len(y):
                        continue
                    t0 = time.perf_counter()
                    writer.writerows(_split_rows(p, y, name, n, seed, args))
                    f.flush()
                    took = time.perf_counter() - t0
                    print(f"{name} n={n} seed={seed}: {took:.0f}s", file=sys.stderr)
    print(summary(args.out))
    print(picks(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
