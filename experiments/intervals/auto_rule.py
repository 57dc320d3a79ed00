"""How often does ``auto``'s choice lose to temperature scaling on fresh data? (issue #43, 6)

``auto`` (:class:`~calibkit.calibrators.AutoCalibrator`) keeps temperature scaling (TS)
unless a richer candidate's cross-fitted NLL beats it by the rule's margin. That is an
inference from a few hundred to a few thousand samples, and it can be wrong: this measures
how often, and by how much, the method it picks has a higher NLL than TS on fresh data.

A unit is one draw: a calibration set of ``n`` samples and a disjoint test set, from

- each prediction file of ``--data`` (the nine of ``../shared/data/predictions``: the
  calibration set a seeded random subset, the test set the rest of the file, at least
  5,000 rows), and
- simulated models (:func:`calibkit.metrics.simulated.simulate`, :data:`SIMULATED`:
  calibrated, over-confident, Platt- and beta-shaped, class-wise and sign-changing maps
  at 10 classes, a beta-shaped binary model), ``n`` calibration and 5,000 test rows drawn
  together.

``auto`` (its default candidates, five folds, seed 0) is fitted on the calibration set's
probabilities (``fit_outputs``, as ``calibkit compare`` does); every candidate that could be
chosen by a rule requiring an advantage over TS (a negative mean paired difference, or a
lower mean score) is refitted on the whole calibration set as ``auto`` refits its choice
(its once-tuned whole-set fit for the tuned ones) and scored on the test set, and so is TS.
A unit's record (one JSON file, written as it finishes; a killed run resumes, a unit is
redone only if its file is missing) holds each candidate's cross-fitted mean, per-fold
scores, paired difference from TS with its standard error and test NLL: any rule deciding
from these is evaluated afterwards without refitting (:data:`RULES`), the code's own
(:func:`calibkit.calibrators.logit.auto.choose`) among them.

``--table`` (on a finished or partial folder, ``--with`` other runs' folders pooled)
prints the tables of :func:`report`: the old rule against ``auto``'s default, one row per
data kind and size (the share of draws where the choice's test NLL is above TS's and above
1.01x TS's; the median, 95th percentile, maximum and mean ratio to TS), every rule's
largest ratio per size, and every rule's full table; a run writes them as
``OUT/table.md``. ``--first-rep`` starts the draws' indices further on: fresh draws, as
``experiments/intervals/auto_rule.md`` checks the rule on. One process (its fits
single-threaded with ``OMP_NUM_THREADS=1``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):  # run as a file: the repository root on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from experiments._driver import ResultsFolder, driver_parser, input_folder, run_driver

SIZES = (100, 300, 1_000, 5_000)
#: Test rows of a simulated draw.
N_TEST_SIM = 5_000
#: The simulated models: name -> :func:`~calibkit.metrics.simulated.simulate` arguments.
SIMULATED: dict[str, dict[str, Any]] = {
    "sim-calibrated-K10": {"n_classes": 10, "shape": "constant", "gap": 0.0},
    "sim-overconfident-K10": {"n_classes": 10, "shape": "constant", "gap": 0.05},
    "sim-platt-K10": {"n_classes": 10, "shape": "platt", "params": (0.5, 0.0)},
    "sim-beta-K10": {"n_classes": 10, "shape": "beta", "params": (1.0, 0.5, 0.0)},
    "sim-classwise-K10": {"n_classes": 10, "shape": "classwise", "gap": 0.05},
    "sim-sign_change-K10": {"n_classes": 10, "shape": "sign_change", "gap": 0.1},
    "sim-beta-K2": {"n_classes": 2, "shape": "beta", "params": (1.0, 0.5, 0.0)},
}
#: A choice this much above TS's test NLL is "worse than TS" in the issue's sense.
TOLERANCE = 1.01

_log = logging.getLogger("auto_rule")


@dataclass(frozen=True)
class Unit:
    """One draw: ``source`` (a prediction file's stem or a :data:`SIMULATED` name) at
    ``n`` calibration samples, draw ``rep``."""

    source: str
    n: int
    rep: int

    @property
    def name(self) -> str:
        return f"{self.source}-n{self.n}-r{self.rep}"

    @property
    def seed(self) -> int:
        digest = hashlib.sha256(f"auto_rule/{self.name}".encode()).digest()
        return int.from_bytes(digest[:4], "little")


def units(
    files: Sequence[str],
    sizes: Sequence[int],
    reps: int,
    reps_many: int,
    sim_reps: int,
) -> list[Unit]:
    """The draws: each file at each size ``reps`` times (``reps_many`` for files of more
    than 10 classes, whose fits cost most: the stem says ``cifar100``), each simulated model
    ``sim_reps`` times; cheapest first."""
    out = [
        Unit(stem, n, rep)
        for stem in files
        for n in sizes
        for rep in range(reps_many if "cifar100" in stem else reps)
    ]
    out += [Unit(name, n, rep) for name in SIMULATED for n in sizes for rep in range(sim_reps)]
    return sorted(out, key=lambda u: (u.n * (10 if "cifar100" in u.source else 1), u.rep))


def _shifted(unit: Unit, first: int) -> Unit:
    return Unit(unit.source, unit.n, unit.rep + first)


def draw(unit: Unit, data: Path | None) -> tuple[Any, Any]:
    """The calibration and test :class:`~calibkit.core.outputs.ClassifierOutputs` of
    ``unit`` (probabilities)."""
    from calibkit.core.outputs import as_outputs
    from calibkit.metrics.simulated import simulate

    if unit.source in SIMULATED:
        sim = simulate(unit.n + N_TEST_SIM, seed=unit.seed, **SIMULATED[unit.source])
        p, y = sim.probs, sim.labels
        cal, test = np.arange(unit.n), np.arange(unit.n, unit.n + N_TEST_SIM)
    else:
        if data is None:
            raise ValueError(f"{unit.source}: a prediction file needs --data")
        with np.load(data / f"{unit.source}.npz") as npz:
            p, y = npz["probs"].astype(np.float64), npz["labels"]
        p = p / p.sum(axis=1, keepdims=True)
        perm = np.random.default_rng(unit.seed).permutation(y.shape[0])
        cal, test = perm[: unit.n], perm[unit.n :]
    return as_outputs(y[cal], probs=p[cal]), as_outputs(y[test], probs=p[test])


def run_unit(unit: Unit, data: Path | None) -> dict[str, Any]:
    """Fit ``auto`` on the unit's calibration set and score the candidates that a rule
    could choose on its test set (see the module doc)."""
    from calibkit.calibrators.logit.auto import AutoCalibrator, candidate
    from calibkit.metrics import nll

    class Recording(AutoCalibrator):
        """``auto`` keeping its once-tuned whole-set fits (its refits of those)."""

        tuned: dict[str, Any]

        def _tune_once(self, z: Any, labels: Any, names: Any, failed: Any) -> Any:
            self.tuned = super()._tune_once(z, labels, names, failed)
            return self.tuned

    start = time.process_time()
    cal, test = draw(unit, data)
    auto = Recording()
    auto.tuned = {}
    auto.fit_outputs(cal)
    z, y = cal.as_logits(), cal.labels
    z_test = test.as_logits()
    base = auto.baseline
    candidates: dict[str, dict[str, Any]] = {}
    for name, mean in auto.cv_scores_.items():
        d, se = auto.paired_.get(name, (0.0, 0.0))
        row: dict[str, Any] = {
            "cv": mean,
            "folds": auto.cv_fold_scores_[name],
            "d": d,
            "se": se,
            "test_nll": None,
        }
        if name == base or d < 0 or mean < auto.cv_scores_.get(base, np.inf):
            fitted = auto.tuned.get(name)
            if fitted is None:
                fitted = candidate(name).fit(z, y, input_kind=cal.kind)
            row["test_nll"] = nll(test.labels, probs=fitted.predict_proba(z_test))
        candidates[name] = row
    return {
        "unit": asdict(unit),
        "name": unit.name,
        "n_classes": cal.n_classes,
        "n_test": int(test.labels.shape[0]),
        "baseline": base,
        "folds_used": auto.folds_used_,
        "same_as": auto.same_as_,
        "dropped": auto.dropped_,
        "declined": sorted(auto.declined_),
        "chosen_by_code": auto.chosen_,
        "candidates": candidates,
        "cpu_seconds": time.process_time() - start,
    }


# ----- rules, evaluated on the records ---------------------------------------------------------
Rule = Callable[[Mapping[str, Any]], str]


def _code_rule(rule: str) -> Rule:
    """The choice of ``auto``'s own :func:`~calibkit.calibrators.logit.auto.choose` with
    ``rule``, from a record."""
    from calibkit.calibrators.logit.auto import choose

    def decide(record: Mapping[str, Any]) -> str:
        cands = record["candidates"]
        means = {name: c["cv"] for name, c in cands.items()}
        paired = {
            name: [c["d"], c["se"]] for name, c in cands.items() if name != record["baseline"]
        }
        return choose(means, paired, record["baseline"], rule)

    return decide


def _margin_rule(m: float, gain: float = 0.0) -> Rule:
    """A candidate passes when ``d + m * se < -gain * (TS's cross-fitted NLL)``; the lowest
    mean of those that pass (first listed on a tie), else TS: a variant to compare."""

    def decide(record: Mapping[str, Any]) -> str:
        cands, base = record["candidates"], str(record["baseline"])
        if base not in cands:
            return base
        limit = -gain * cands[base]["cv"]
        better = [
            str(name) for name, c in cands.items() if name != base and c["d"] + m * c["se"] < limit
        ]
        return min(better, key=lambda name: cands[name]["cv"]) if better else base

    return decide


def _bonferroni_rule(alpha: float) -> Rule:
    """One-sided z-test of each candidate's paired difference at ``alpha / c`` (``c``
    candidates besides TS): a variant to compare."""
    from scipy.stats import norm

    def decide(record: Mapping[str, Any]) -> str:
        c = max(1, len(record["candidates"]) - 1)
        return _margin_rule(float(norm.isf(alpha / c)))(record)

    return decide


def rules() -> dict[str, Rule]:
    """The rules of the table: the code's (``auto``'s default, the old ``one_se`` and
    ``lowest``), and the variants the default was chosen from: a stricter multiple of the
    standard error, a one-sided z-test with a Bonferroni correction over the candidates, a
    minimum relative gain."""
    from calibkit.calibrators.logit.auto import RULES

    out: dict[str, Rule] = {f"auto rule={r!r}": _code_rule(r) for r in RULES}
    for m in (1.645, 2.0, 2.5, 3.0, 3.25, 3.5, 4.0, 4.5):
        out[f"d + {m:g} se < 0"] = _margin_rule(m)
    out["bonferroni 0.05"] = _bonferroni_rule(0.05)
    out["d < -1% TS"] = _margin_rule(0.0, 0.01)
    out["d + 1 se < -0.5% TS"] = _margin_rule(1.0, 0.005)
    return out


def ratio(record: Mapping[str, Any], chosen: str) -> float:
    """The chosen method's test NLL over TS's (1 where it is TS)."""
    cands = record["candidates"]
    base = cands[record["baseline"]]["test_nll"]
    got = cands[chosen]["test_nll"]
    if got is None:
        raise ValueError(f"{record['name']}: {chosen} chosen but not scored on the test set")
    return float(got / base)


def summary(
    records: Iterable[Mapping[str, Any]], rule: Rule, pooled: bool = False
) -> dict[tuple[str, int], dict[str, float]]:
    """Per (``real``/``sim``, size; ``all`` for both when ``pooled``): draws, share of
    choices other than TS, share above TS, share above :data:`TOLERANCE` x TS, share below
    ``1 / TOLERANCE``, mean, median, 95th percentile and maximum ratio."""
    groups: dict[tuple[str, int], list[tuple[str, float]]] = {}
    for record in records:
        kind = "sim" if record["unit"]["source"] in SIMULATED else "real"
        kind = "all" if pooled else kind
        chosen = rule(record)
        groups.setdefault((kind, record["unit"]["n"]), []).append((chosen, ratio(record, chosen)))
    out = {}
    for key, rows in sorted(groups.items()):
        r = np.array([x for _, x in rows])
        out[key] = {
            "draws": float(r.size),
            "not_ts": float(np.mean([c != "temperature" for c, _ in rows])),
            "worse": float(np.mean(r > 1.0)),
            "over_tol": float(np.mean(r > TOLERANCE)),
            "gain": float(np.mean(r < 2.0 - TOLERANCE)),
            "mean": float(np.mean(r)),
            "median": float(np.median(r)),
            "p95": float(np.quantile(r, 0.95)),
            "max": float(r.max()),
        }
    return out


def table(records: Sequence[Mapping[str, Any]], which: Mapping[str, Rule] | None = None) -> str:
    """The markdown table of every rule by data kind and size."""
    lines = [
        "| rule | data | n | draws | not TS | worse than TS | > 1.01x TS | < 0.99x TS "
        "| mean | median | p95 | max |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label, rule in (which or rules()).items():
        for (kind, n), s in summary(records, rule).items():
            lines.append(
                f"| {label} | {kind} | {n:,} | {int(s['draws'])} | {s['not_ts']:.0%} | "
                f"{s['worse']:.0%} | {s['over_tol']:.1%} | {s['gain']:.0%} | "
                f"{s['mean']:.4f}x | {s['median']:.4f}x | {s['p95']:.4f}x | {s['max']:.4f}x |"
            )
    return "\n".join(lines) + "\n"


def before_after(records: Sequence[Mapping[str, Any]], before: str = "one_se") -> str:
    """The one table of ``auto``'s rule ``before`` against its default: per data kind and
    size, the share of draws whose choice is above TS's test NLL and above
    :data:`TOLERANCE` x TS's, and the median, 95th percentile, maximum and mean ratio."""
    from calibkit.calibrators.logit.auto import AutoCalibrator

    now = AutoCalibrator().rule
    old, new = (summary(records, _code_rule(r)) for r in (before, now))
    lines = [
        f"| data | n | draws | `{before}`: worse than TS, > 1.01x TS | `{before}`: median, "
        f"p95, max | `{now}`: worse than TS, > 1.01x TS | `{now}`: median, p95, max "
        f"| mean: `{before}` -> `{now}` |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for key in old:
        a, b = old[key], new[key]
        lines.append(
            f"| {key[0]} | {key[1]:,} | {int(a['draws'])} | {a['worse']:.1%}, "
            f"{a['over_tol']:.1%} | {a['median']:.4f}x, {a['p95']:.4f}x, {a['max']:.3f}x | "
            f"{b['worse']:.1%}, {b['over_tol']:.1%} | {b['median']:.4f}x, {b['p95']:.4f}x, "
            f"{b['max']:.3f}x | {a['mean']:.4f}x -> {b['mean']:.4f}x |"
        )
    return "\n".join(lines) + "\n"


def report(records: Sequence[Mapping[str, Any]]) -> str:
    """The tables of ``--table``: :func:`before_after`, :func:`compact`, :func:`table`."""
    return "\n".join((before_after(records), compact(records), table(records)))


def compact(records: Sequence[Mapping[str, Any]], which: Mapping[str, Rule] | None = None) -> str:
    """One row per rule, one column per size (real and simulated draws pooled): the largest
    ratio to TS, the share of draws above :data:`TOLERANCE` x TS, and the mean ratio."""
    chosen = which or rules()
    sizes = sorted({r["unit"]["n"] for r in records})
    lines = [
        "| rule | " + " | ".join(f"n = {n:,}: max, > 1.01x, mean" for n in sizes) + " |",
        "|---|" + "---|" * len(sizes),
    ]
    for label, rule in chosen.items():
        s = summary(records, rule, pooled=True)
        cells = [
            f"{s[('all', n)]['max']:.3f}x, {s[('all', n)]['over_tol']:.1%}, "
            f"{s[('all', n)]['mean']:.4f}x"
            for n in sizes
        ]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def worst(records: Sequence[Mapping[str, Any]], rule: Rule, k: int = 10) -> str:
    """The ``k`` draws where ``rule``'s choice is furthest above TS, one line each."""
    rows = sorted(((ratio(r, rule(r)), r["name"], rule(r)) for r in records), reverse=True)
    return "\n".join(f"- {name}: {chosen} {x:.4f}x" for x, name, chosen in rows[:k]) + "\n"


def load(folder: Path) -> list[dict[str, Any]]:
    """Every unit record in ``folder`` (its JSON files, the manifest aside)."""
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("[!.]*.json"))]


# ----- the driver ------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = driver_parser(__file__, __doc__)
    parser.add_argument("--out", required=True, help="the folder of the units (resumed)")
    parser.add_argument("--data", help="a folder of prediction files (*.npz: probs, labels)")
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--reps", type=int, default=8, help="draws per file and size (8)")
    parser.add_argument(
        "--reps-many", type=int, default=3, help="draws of the CIFAR-100 file per size (3)"
    )
    parser.add_argument("--sim-reps", type=int, default=6, help="draws per simulated model (6)")
    parser.add_argument(
        "--first-rep", type=int, default=0, help="the first draw's index (0; fresh draws: more)"
    )
    parser.add_argument("--table", action="store_true", help="only print the folder's table")
    parser.add_argument(
        "--with",
        dest="also",
        nargs="+",
        default=[],
        metavar="FOLDER",
        help="with --table: other runs' folders, their draws pooled with --out's",
    )
    return run_driver(parser, _work, argv)


def _work(args: argparse.Namespace) -> int:
    from calibkit.core.errors import InputError
    from calibkit.core.progress import Phase

    counts = (
        ("--reps", args.reps),
        ("--reps-many", args.reps_many),
        ("--first-rep", args.first_rep),
    )
    for option, value in counts:
        if value < 0:
            raise InputError(option, "a whole number >= 0", str(value))
    if args.sim_reps < 0:
        raise InputError("--sim-reps", "a whole number >= 0", str(args.sim_reps))
    if any(n < 20 for n in args.sizes):
        raise InputError("--sizes", "sizes of at least 20", " ".join(map(str, args.sizes)))
    if args.table:
        folders = [input_folder(args.out, "--out")]
        folders += [input_folder(other, "--with") for other in args.also]
        records = [record for folder in folders for record in load(folder)]
        print(report(records), end="")
        return 0
    results = ResultsFolder(args.out, "--out")
    data = input_folder(args.data, "--data") if args.data else None
    files = sorted(p.stem for p in data.glob("*.npz")) if data else []
    todo = [
        _shifted(u, args.first_rep)
        for u in units(files, args.sizes, args.reps, args.reps_many, args.sim_reps)
        if not (results.path / f"{_shifted(u, args.first_rep).name}.json").is_file()
    ]
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    logging.getLogger("calibkit").setLevel(logging.WARNING)
    phase = Phase(_log, "draws", len(todo), quiet_for=0.0, every=30.0)
    for unit in todo:
        record = run_unit(unit, data)
        results.write_text(results.path / f"{unit.name}.json", json.dumps(record, indent=1) + "\n")
        phase.step(unit.name)
    records = load(results.path)
    results.write_text(results.path / "table.md", report(records))
    print(f"{len(todo)} draws written to {results.path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
