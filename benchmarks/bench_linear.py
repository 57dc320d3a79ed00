"""The matrix and structured families' fit times at 100 and 1,000 classes, against a
revision (default 4466453, the code before issue 31), each fit in its own child process.

Every method is timed as ``compare`` fits it (``create_calibrator(name)``) and as ``auto``
tries it (``calibkit.calibrators.logit.auto.candidate(name)``: the unshrunk published
method), on two data sets:

- ``cifar100 5,000 x 100``: the CIFAR-100 WRN-16-4 file's calibration half (compare's
  5,000 / 5,000 split, seed 0; the logarithm of its probabilities as logits);
- ``synthetic 25,000 x 1,000``: half of ``_bench.synthetic(50_000, 1000, temperature=2)``,
  ImageNet's size (``--quick``: 5,000 x 100 synthetic and 10,000 x 300 instead).

Each (method, form) runs ``--repeats`` times on each side, in a fresh process each time
(``PYTHONPATH`` pointing at this checkout's ``src`` or at the revision's, extracted with
``git archive``), the two sides alternating; the fit is timed inside the child (imports
and data loading excluded; the temperature fit included). The table gives the
medians, their ratio (revision / now) and the held-out NLL of each side on the other
half. A method the current scope declines at a case's number of classes is not timed
unless ``--declined`` is given (at 1,000 classes the revision's vector, MS-ODIR and
Dirichlet fits take minutes); a side whose first fit took over ``--budget`` seconds
(default 60) is not run again; ``--methods`` picks the methods.

    .venv/bin/python benchmarks/bench_linear.py [--quick] [--repeats 3] [--rev 4466453]
        [--methods vector,svs] [--cases cifar100,25000x1000] [--declined]

``--probmetrics`` instead times the structured scalings against probmetrics' (issue 15) on
the CIFAR-100 split, in this process, with their test NLL and ECE.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
METHODS = ("temperature", "vector", "ms_odir", "dirichlet", "svs", "sms", "sms_cv")
FORMS = ("compare", "auto")


def load_case(name: str, data: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Calibration logits and labels, then held-out logits and labels, of the case ``name``."""
    sys.path.insert(0, str(HERE))
    from _bench import synthetic

    if name == "cifar100":
        from calibkit.core.splits import split_outputs
        from calibkit.io.predictions import load_predictions

        path = data / "predictions" / "cifar100_wideresnet-16-4.npz"
        cal, test = split_outputs(load_predictions(path), 5000, seed=0)
        return cal.as_logits(), cal.labels, test.as_logits(), test.labels
    n, k = (int(v) for v in name.split("x"))
    z, y = synthetic(2 * n, k, temperature=2)
    return z[:n], y[:n], z[n:], y[n:]


def child(case: str, method: str, form: str, data: Path) -> None:
    """Fit ``method`` once on ``case`` and print its time and held-out NLL as JSON."""
    from calibkit.calibrators import create_calibrator
    from calibkit.calibrators.logit.auto import candidate
    from calibkit.metrics import nll

    z, y, zt, yt = load_case(case, data)
    cal = create_calibrator(method) if form == "compare" else candidate(method)
    t0 = time.perf_counter()
    cal.fit(z, y)
    seconds = time.perf_counter() - t0
    test_nll = float(nll(yt, probs=cal.predict_proba(zt)))
    print(json.dumps({"seconds": seconds, "nll": test_nll}))


def revision_src(rev: str, into: Path) -> Path:
    """The ``src`` folder of ``rev``, extracted under ``into``."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "src"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "src"


def run_child(src: Path, case: str, method: str, form: str, data: Path) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(src), "OMP_NUM_THREADS": "1"}
    args = [sys.executable, __file__, "--child", case, method, form, "--data", str(data)]
    out = subprocess.run(args, env=env, capture_output=True, text=True, timeout=3600)
    if out.returncode != 0:
        print(f"{method} ({form}) on {case} failed: {out.stderr.strip()[-300:]}", file=sys.stderr)
        return {}
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


STRUCTURED = ("temperature_smoothed", "svs", "sms", "sms_cv", "ms_odir", "dirichlet")


def probmetrics_fits() -> dict[str, Callable[[np.ndarray, np.ndarray], object]]:
    """probmetrics' SMS, SVS and ts-mix (fitted on probabilities), if it is installed."""
    try:
        from probmetrics.calibrators import SMSCalibrator, SVSCalibrator
        from probmetrics.calibrators import get_calibrator as pm
    except ImportError:
        return {}
    logging.getLogger("probmetrics").setLevel(logging.WARNING)
    return {
        "probmetrics sms": lambda p, y: SMSCalibrator(print_init_info=False).fit(p, y),
        "probmetrics svs": lambda p, y: SVSCalibrator(print_init_info=False).fit(p, y),
        "probmetrics ts-mix": lambda p, y: pm("ts-mix").fit(p, y),
    }


def against_probmetrics(data: Path, repeats: int) -> None:
    """The structured scalings against probmetrics' on the CIFAR-100 file's compare split
    (issue 15): fit time (interleaved, in this process), test NLL and ECE."""
    from _bench import fmt_time, interleaved, median, table

    from calibkit.calibrators import create_calibrator
    from calibkit.metrics import ece, nll

    zc, yc, zt, yt = load_case("cifar100", data)
    pc, pt = np.exp(zc - zc.max(1, keepdims=True)), np.exp(zt - zt.max(1, keepdims=True))
    pc, pt = pc / pc.sum(1, keepdims=True), pt / pt.sum(1, keepdims=True)
    fits: dict[str, Callable[[], object]] = {
        m: (lambda m=m: create_calibrator(m).fit(zc, yc)) for m in STRUCTURED
    }
    theirs = probmetrics_fits()
    fits |= {name: (lambda f=f: f(pc, yc)) for name, f in theirs.items()}
    times = interleaved(fits, repeats)
    unit = median(times["probmetrics sms"]) if theirs else None
    rows = []
    for name, fit in fits.items():
        probs = fit().predict_proba(pt if name in theirs else zt)  # type: ignore[attr-defined]
        t = median(times[name])
        ratio = "–" if unit is None else f"{t / unit:.2f}"
        values = [f"{float(nll(yt, probs=probs)):.4f}", f"{100 * float(ece(yt, probs=probs)):.2f}"]
        rows.append([name, fmt_time(t), ratio, *values])
    print("\n### cifar100_wideresnet-16-4.npz, compare's 5,000 / 5,000 split (seed 0)\n")
    print(table(["method", "median fit", "/ probmetrics sms", "test NLL", "test ECE %"], rows))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--rev", default="4466453", help="the revision to time against")
    ap.add_argument("--quick", action="store_true", help="5,000 x 100 and 10,000 x 300")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--budget", type=float, default=60.0)
    ap.add_argument("--declined", action="store_true", help="also time declined methods")
    ap.add_argument("--cases", default=None, help="e.g. cifar100,25000x1000 (NxK synthetic)")
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--child", nargs=3, metavar=("CASE", "METHOD", "FORM"))
    ap.add_argument(
        "--probmetrics", action="store_true", help="the structured scalings against probmetrics"
    )
    args = ap.parse_args()
    if args.child:
        child(*args.child, args.data)
        return
    sys.path.insert(0, str(ROOT / "src"))
    if args.probmetrics:
        against_probmetrics(args.data, args.repeats)
        return
    from _bench import fmt_time, machine, median, table

    from calibkit.calibrators.scope import scope_of

    print(machine())
    cifar = args.data / "predictions" / "cifar100_wideresnet-16-4.npz"
    cases = ["5000x100", "10000x300"] if args.quick else ["25000x1000"]
    if not args.quick and cifar.exists():
        cases.insert(0, "cifar100")
    cases = args.cases.split(",") if args.cases else cases
    with tempfile.TemporaryDirectory() as tmp:
        sides = {"now": ROOT / "src", args.rev: revision_src(args.rev, Path(tmp))}
        for case in cases:
            k = 100 if case == "cifar100" else int(case.split("x")[1])
            rows = []
            for method in args.methods.split(","):
                why = scope_of(method).declines(k)
                for form in FORMS:
                    runs: dict[str, list[dict[str, float]]] = {side: [] for side in sides}
                    for r in range(args.repeats):
                        for side in list(sides) if r % 2 == 0 else list(sides)[::-1]:
                            slow = (why is not None and not args.declined) or (
                                side != "now"
                                and any(x["seconds"] > args.budget for x in runs[side])
                            )
                            if not slow:
                                res = run_child(sides[side], case, method, form, args.data)
                                runs[side] += [res] if "seconds" in res else []
                    cells = []
                    for side in sides:
                        done = runs[side]
                        if not done:
                            cells += ["–", "–"]
                            continue
                        cells += [
                            fmt_time(median([x["seconds"] for x in done])),
                            f"{done[0]['nll']:.4f}",
                        ]
                    now_t = [x["seconds"] for x in runs["now"]]
                    old_t = [x["seconds"] for x in runs[args.rev]]
                    ratio = f"{median(old_t) / median(now_t):.1f}" if now_t and old_t else "–"
                    scope = "default" if why is None else why.split(":")[0]
                    rows.append([method, form, *cells, ratio, scope])
                    print(f"  {case}: " + " | ".join(rows[-1]), file=sys.stderr, flush=True)
            headers = ["method", "as", "now", "NLL now", args.rev, f"NLL {args.rev}"]
            print(f"\n### {case} (median of {args.repeats}, one process per fit)\n")
            print(table([*headers, f"{args.rev} / now", "scope now"], rows))


if __name__ == "__main__":
    main()
