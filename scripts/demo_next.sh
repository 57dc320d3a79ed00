#!/usr/bin/env bash
# What to try after the demo: prints the commands to run next on what the study wrote (one
# run's test predictions). Usage: scripts/demo_next.sh [the calibkit study arguments]
# (scripts/demo.sh calls it from the repository root; tests/test_demo_next.py runs what it prints).
set -euo pipefail
out=""
config=""
while [ "$#" -gt 0 ]; do
  case "$1" in
    --out) out="${2:-}"; shift ;;
    --out=*) out="${1#--out=}" ;;
    --models|--seeds|--epochs|--executor|--workers|--address|--data-dir|--threads) shift ;;
    -*) ;;
    *) [ -z "$config" ] && config="$1" ;;
  esac
  shift
done
if [ -z "$out" ]; then
  name="digits"
  [ -n "$config" ] && name="$(basename "$config" .toml)"
  out="study-$name"
fi
out="${out%/}"
run="$(ls -d "$out"/runs/*/seed-*/logits.npz 2>/dev/null | sort | head -n 1 || true)"
keys="--kind logits --scores-key test_logits --labels-key test_labels"
echo
echo "Next: open $out/report.html, then try the command line on one run's test predictions:"
echo "  source .venv/bin/activate"
if [ -n "$run" ]; then
  echo "  calibkit evaluate $run $keys"
  echo "  calibkit compare $run $keys --out compare-demo"
else
  echo "  calibkit evaluate --help"
fi
echo "(or without activating: .venv/bin/calibkit ...; more in README.md, \"The main job\")"
