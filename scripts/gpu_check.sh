#!/usr/bin/env bash
# Does calibkit work on this GPU machine, and how fast? Run from a plain copy of the
# repository with the machine's own python3 (torch with CUDA, numpy, scipy, scikit-learn,
# matplotlib, safetensors, Pillow, pytest; no Ray, no network, nothing installed):
#
#   bash scripts/gpu_check.sh DATA_DIR [--fullscale CONFIG] [--workers N] [--out DIR] [--cpu]
#
# (--cpu: a dry run of the script itself on a machine without a GPU: the gpu tests skip,
# only the default smoke configs run, the benchmark is a short one on the CPU.)
#
# DATA_DIR holds what ../shared/data holds (bloodmnist.npz, cifar10-jpeg.zip, pretrained/;
# what is missing is replaced by synthetic stand-ins or skipped with a reason). Steps:
#   1. the tests marked `gpu` (every part of a study's units on the GPU, the trainer there);
#   2. every shipped config smoke-run on CUDA (tests/study/test_smoke.py, slow ones too),
#      each checking that its units ran on the GPU;
#   3. the trainer against a bare PyTorch loop (benchmarks/bench_training.py: BloodMNIST,
#      ResNet-50 for 28x28, batch 128; target: the training epoch within 1.1x);
#   4. the matrix family (vector, MS-ODIR, Dirichlet, SMS) fitted on the GPU at 1,000
#      classes on 50,000 rows, against temperature scaling in the same run
#      (benchmarks/bench_linear_device.py; goal: each under 10 s; stopped after 4 minutes);
#   5. with --fullscale CONFIG, that config at full scale on N worker processes sharing the
#      GPU (default 5), in DIR/fullscale (a run stopped midway resumes there).
# It prints one summary table and writes it to DIR/gpu_check.md (DIR: --out, default
# ./gpu-check). Under 8 minutes on one H100/H200 without --fullscale, the matrix step aside
# (at most 4 more).
set -uo pipefail
cd "$(dirname "$0")/.."
usage() { echo "usage: bash scripts/gpu_check.sh DATA_DIR [--fullscale CONFIG] [--workers N] [--out DIR] [--cpu]" >&2; exit 2; }
[ $# -ge 1 ] || usage
data="$(cd "$1" 2>/dev/null && pwd)" || { echo "gpu_check: DATA_DIR: no folder $1" >&2; exit 2; }
shift
fullscale="" workers=5 out="gpu-check" cpu=0
while [ $# -gt 0 ]; do
  case "$1" in
    --fullscale) fullscale="${2:?}"; shift 2 ;;
    --workers) workers="${2:?}"; shift 2 ;;
    --out) out="${2:?}"; shift 2 ;;
    --cpu) cpu=1; shift ;;
    *) usage ;;
  esac
done
py="${PYTHON:-python3}"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" MPLBACKEND=Agg CALIBKIT_SHARED_DATA="$data"
# --out is new, empty, or one this script wrote (it never writes over or deletes anything else)
if [ -d "$out" ] && [ -n "$(ls -A "$out")" ] && [ ! -f "$out/steps.tsv" ]; then
  echo "gpu_check: --out: expected a new or empty folder, or one gpu_check wrote, got $out" >&2
  exit 2
fi
mkdir -p "$out" || exit 2
out="$(cd "$out" && pwd)"
logs="$out/logs"
mkdir -p "$logs"
if [ "$cpu" = 0 ]; then
  "$py" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" \
    || { echo "gpu_check: torch.cuda.is_available() is False: no GPU here (--cpu: a dry run)" >&2; exit 2; }
  device=cuda smoke="slow or not slow" bench=(--model resnet50_28 --epochs 4 --repeats 2)
  matrix=(--rows 50000 --classes 1000)
else
  device=cpu smoke="not slow" bench=(--model lenet5 --epochs 2 --repeats 1)
  matrix=(--rows 2000 --classes 50 --numpy)
fi
steps="$out/steps.tsv"
: >"$steps"

# step NAME LOG COMMAND...: runs COMMAND with its output in LOG, records status and seconds
step() {
  local name="$1" log="$2"; shift 2
  echo "[gpu_check] $name ..." >&2
  local t0=$SECONDS
  "$@" >"$log" 2>&1
  local rc=$?
  printf '%s\t%s\t%s\t%s\n' "$name" "$rc" "$((SECONDS - t0))" "$log" >>"$steps"
  tail -n 3 "$log" >&2
}

pytest_args=(-p no:cacheprovider -q -rs)
step "gpu tests" "$logs/gpu_tests.log" \
  "$py" -m pytest "${pytest_args[@]}" -m gpu tests/study/test_units.py tests/training/test_trainer.py \
  tests/calibrators/logit/test_linear_device.py \
  --junitxml="$logs/gpu_tests.xml"
step "smoke: every shipped config on $device" "$logs/smoke.log" \
  "$py" -m pytest "${pytest_args[@]}" -m "$smoke" tests/study/test_smoke.py \
  --junitxml="$logs/smoke.xml"
step "trainer vs bare loop (BloodMNIST, ${bench[1]})" "$logs/bench_training.log" \
  "$py" benchmarks/bench_training.py --device "$device" --dataset bloodmnist \
  --batch-size 128 --no-augment "${bench[@]}" --data-dir "$data" \
  --json "$logs/bench_training.json"
step "matrix family on $device (${matrix[1]} x ${matrix[3]})" "$logs/bench_linear_device.log" \
  timeout 240 "$py" benchmarks/bench_linear_device.py --device "$device" "${matrix[@]}" \
  --json "$logs/bench_linear_device.json"
if [ -n "$fullscale" ]; then
  step "full scale: $fullscale ($workers workers)" "$logs/fullscale.log" \
    "$py" -m calibkit study "$fullscale" --data-dir "$data" --out "$out/fullscale" \
    --executor processes --workers "$workers"
fi

"$py" - "$out" "$steps" <<'PY'
import json, sys, xml.etree.ElementTree as ET
from pathlib import Path

out, steps = Path(sys.argv[1]), Path(sys.argv[2])
import torch

gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "the CPU (a dry run)"
lines = [f"# calibkit on {gpu} (torch {torch.__version__}, CUDA {torch.version.cuda})", ""]
lines += ["| step | result | seconds | detail |", "|---|---|---|---|"]
for row in steps.read_text().splitlines():
    name, rc, seconds, log = row.split("\t")
    detail = ""
    xml = Path(log).with_suffix(".xml")
    if xml.is_file():
        suite = ET.parse(xml).getroot()
        suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
        get = lambda k: int(suite.get(k, 0))
        passed = get("tests") - get("failures") - get("errors") - get("skipped")
        detail = f"{passed} passed, {get('failures') + get('errors')} failed, {get('skipped')} skipped"
    bench = Path(log).with_suffix(".json")
    if bench.is_file() and name.startswith("matrix"):
        fits = json.loads(bench.read_text())["results"]
        detail = ", ".join(
            f"{r['method']} {r['seconds']:.2f} s" + (f" ({r['x_ts']:.0f}x TS)" if "x_ts" in r else "")
            for r in fits
        )
    elif bench.is_file():
        b = json.loads(bench.read_text())
        detail = (
            f"epoch {b['calibkit_epoch_s']:.3f} s vs bare {b['bare_epoch_s']:.3f} s: "
            f"**{b['epoch_ratio']:.2f}x** (target 1.1x); held-out evaluation "
            f"{b['eval_s_per_epoch']:.3f} s per epoch"
        )
    if name.startswith("full scale"):
        detail = f"{int(seconds) / 60:.1f} min wall; results in {out / 'fullscale'}"
    lines.append(f"| {name} | {'ok' if rc == '0' else f'FAILED (exit {rc})'} | {seconds} | {detail} |")
failed = [r for r in steps.read_text().splitlines() if r.split("\t")[1] != "0"]
if failed:
    lines += ["", "Logs of the failed steps: " + ", ".join(r.split("\t")[3] for r in failed)]
for xml in sorted(out.glob("logs/*.xml")):
    suite = ET.parse(xml).getroot()
    for case in suite.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            lines.append(f"- FAILED {case.get('classname')}::{case.get('name')}")
text = "\n".join(lines) + "\n"
(out / "gpu_check.md").write_text(text)
print(text)
sys.exit(1 if failed else 0)
PY
