#!/usr/bin/env bash
# The main job on the embedded default: a small study on scikit-learn's bundled digits
# (two MLPs x three seeds, trained, calibrated by every method, reported); no network, no
# ../shared. Usage: scripts/demo.sh [calibkit study options]   (report: ./study-digits)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/calibkit study "$@"
