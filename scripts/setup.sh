#!/usr/bin/env bash
# Create .venv (if needed) and install calibkit into it.
# Usage: scripts/setup.sh [extra]   the extra installed with calibkit: "onnx" by default (ONNX
# export, about 15 s more), "test" for the test-only dependencies (onnx included).
# torch is installed first with an exact pin so that nothing pulls a CUDA build of torch.
set -euo pipefail
cd "$(dirname "$0")/.."
extra="${1:-onnx}"
py="${PYTHON:-python3.11}"
command -v "$py" >/dev/null 2>&1 || py=python3
venv=".venv"
if [ ! -x "$venv/bin/python" ]; then
  echo "[setup] creating $venv with $($py --version)" >&2
  "$py" -m venv "$venv"
fi
stamp="$venv/.calibkit-installed${extra:+-$extra}"
want="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "[setup] installing dependencies into $venv (first run takes about a minute)" >&2
  "$venv/bin/python" -m pip install --quiet --upgrade pip 2>&1 | grep -v "is ignored" >&2 || true
  "$venv/bin/python" -m pip install --quiet "torch==2.13.0" 2>&1 | grep -v "is ignored" >&2 || true
  "$venv/bin/python" -c "import torch" 2>/dev/null || { echo "[setup] torch failed to install" >&2; exit 1; }
  target="."
  [ -n "$extra" ] && target=".[$extra]"
  "$venv/bin/python" -m pip install --quiet -e "$target" 2>&1 | grep -v "is ignored" >&2 || true
  "$venv/bin/python" -c "import calibkit" || { echo "[setup] calibkit failed to install" >&2; exit 1; }
  echo "$want" > "$stamp"
fi
