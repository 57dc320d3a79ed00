#!/usr/bin/env bash
# Every report calibkit writes, on the real data beside the repo (../shared/data), each with a
# 1,400 px headless-Chromium screenshot: what a reader sees. The verdicts quoted in issue notes
# come from this script (their text: DIR/<command>.txt, the first two lines).
# Usage: scripts/every_report.sh [DIR]   (default /tmp/calibkit-reports; needs .venv, chromium)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-/tmp/calibkit-reports}"
data="$(cd ../shared/data && pwd)"
preds="$data/predictions/cifar10_resnet18.npz"
export MPLBACKEND=Agg OMP_NUM_THREADS=1
ck() { .venv/bin/python -m calibkit "$@"; }
mkdir -p "$out"
# a group per row (30% of rows in 'b', their logits made 2.5x as confident), and a source /
# target pair: the second half resampled to skewed class priors (label shift)
.venv/bin/python - "$preds" "$out" <<'PY'
import sys
import numpy as np
d = np.load(sys.argv[1]); out = sys.argv[2]
p, y = d["probs"].astype(np.float64), d["labels"]
rng = np.random.default_rng(0)
z = np.log(np.clip(p, 1e-12, 1))
site = np.where(rng.random(len(y)) < 0.3, "b", "a")
np.savez(f"{out}/groups.npz", logits=np.where((site == "b")[:, None], 2.5 * z, z), labels=y, site=site)
half = len(y) // 2
np.savez(f"{out}/source.npz", probs=p[:half], labels=y[:half])
priors = np.array([.3, .2, .1, .1, .08, .07, .05, .04, .03, .03])
rows = [rng.choice(np.flatnonzero(y[half:] == c) + half, int(priors[c] * 5000)) for c in range(10)]
rows = np.concatenate(rows)
np.savez(f"{out}/target.npz", probs=p[rows], labels=y[rows])
PY
ck evaluate "$preds" --out "$out/evaluate" >"$out/evaluate.txt"
ck compare "$preds" --n-boot 200 --out "$out/compare" >"$out/compare.txt"
ck compare "$out/groups.npz" --groups site --n-boot 200 --out "$out/compare-groups" >"$out/compare-groups.txt"
ck conformal "$preds" --out "$out/conformal" >"$out/conformal.txt"
ck labelshift --cal "$out/source.npz" --target "$out/target.npz" --out "$out/labelshift" >"$out/labelshift.txt"
ck shift --model resnet20 --weights "$data/pretrained/resnet20-12fca82f.th" --data-dir "$data" \
  --cal-size 1000 --test-size 500 --corruptions gaussian_noise,fog,contrast --severities 1,3,5 \
  --device cpu --out "$out/shift" >"$out/shift.txt"
ck demo --out "$out/demo" >"$out/demo.txt"
ck study --smoke --quiet --out "$out/study" >"$out/study.txt"
for r in evaluate compare compare-groups conformal labelshift shift demo study; do
  chromium --headless --no-sandbox --disable-gpu --window-size=1400,1100 \
    --screenshot="$out/$r.png" "file://$out/$r/report.html" >/dev/null 2>&1
done
echo "reports and screenshots in $out"
