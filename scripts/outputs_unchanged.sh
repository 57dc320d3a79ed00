#!/usr/bin/env bash
# Prove that a refactoring changed no number: run the digits study and a compare report with
# the code of REV (default: the commit before the layering, 9234ebb) and with the working
# tree, then compare the digits study's results.csv byte for byte and the compare report's
# numbers in results.json to rounding (relative 1e-9), listing what moved, went or came:
# every key but its fit_seconds (timings) and the header a report format may add or change
# (calibkit_report, calibkit_version, command, title, verdict, inputs, options, versions),
# key order ignored. Needs .venv (scripts/setup.sh).
# Usage: scripts/outputs_unchanged.sh [REV] [PREDICTIONS.npz]
set -euo pipefail
cd "$(dirname "$0")/.."
rev="${1:-9234ebb}"
preds="${2:-../shared/data/predictions/cifar10_resnet18.npz}"
tmp="$(mktemp -d)"
trap 'git worktree remove --force "$tmp/old" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
git worktree add --detach -q "$tmp/old" "$rev"
export MPLBACKEND=Agg OMP_NUM_THREADS=1
cli=(-c "import sys; from calibkit.cli import main; sys.exit(main(sys.argv[1:]))")
for side in old new; do
  src="$PWD/src"; [ "$side" = old ] && src="$tmp/old/src"
  PYTHONPATH="$src" .venv/bin/python "${cli[@]}" study --out "$tmp/$side-study" --quiet >/dev/null 2>&1
  PYTHONPATH="$src" .venv/bin/python "${cli[@]}" compare "$preds" --seed 0 --n-boot 200 \
    --out "$tmp/$side-compare" >/dev/null 2>&1
  .venv/bin/python - "$tmp/$side-compare/results.json" >"$tmp/$side-results.json" <<'PY'
import json, sys
HEADER = {"calibkit_report", "calibkit_version", "command", "title", "verdict", "inputs",
          "options", "versions"}
doc = {k: v for k, v in json.load(open(sys.argv[1])).items() if k not in HEADER}
for m in doc.get("methods", []):
    m["fit_seconds"] = "T"
print(json.dumps(doc, indent=1, sort_keys=True))
PY
done
cmp "$tmp/old-study/results.csv" "$tmp/new-study/results.csv" && echo "digits study results.csv: byte-identical"
# the compare report's numbers: equal to rounding (relative 1e-9: a sum in another order
# differs in its last digits), every key present on both sides; the rest listed
.venv/bin/python - "$tmp/old-results.json" "$tmp/new-results.json" <<'PY'
import json, math, sys
old, new = (json.load(open(p)) for p in sys.argv[1:3])
def flat(x, path=""):
    if isinstance(x, dict):
        for k, v in x.items():
            yield from flat(v, f"{path}/{k}")
    elif isinstance(x, list) and x and all(isinstance(v, dict) and "method" in v for v in x):
        for v in x:
            yield from flat(v, f"{path}/{v['method']}")
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from flat(v, f"{path}[{i}]")
    else:
        yield path, x
a, b = dict(flat(old)), dict(flat(new))
def same(u, v):
    if isinstance(u, float) and isinstance(v, float | int):
        return (math.isnan(u) and math.isnan(v)) or math.isclose(u, v, rel_tol=1e-9, abs_tol=1e-15)
    return u == v
moved = [k for k in a.keys() & b.keys() if not same(a[k], b[k])]
gone, added = sorted(a.keys() - b.keys()), sorted(b.keys() - a.keys())
for title, keys in (("moved", sorted(moved)), ("only before", gone), ("only now", added)):
    print(f"compare results.json, {title}: {len(keys)}")
    for k in keys[:40]:
        print(f"  {k}: {a.get(k)!r} -> {b.get(k)!r}")
    if len(keys) > 40:
        print(f"  ... and {len(keys) - 40} more")
if not (moved or gone or added):
    print("compare results.json: every number equal to rounding (fit_seconds and header masked)")
PY
