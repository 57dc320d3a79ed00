#!/usr/bin/env bash
# The main job on the embedded default: a small study on scikit-learn's bundled digits
# (two MLPs x three seeds, trained, calibrated by every method, reported); no network, no
# ../shared. Usage: scripts/demo.sh [calibkit study options]   (report: ./study-digits)
# It ends by printing the next commands to try (scripts/demo_next.sh).
set -euo pipefail
caller="$PWD"
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/calibkit study "$@"
[ "$caller" = "$PWD" ] || echo "(the paths below are from the repository: cd $PWD)"
bash scripts/demo_next.sh "$@"
