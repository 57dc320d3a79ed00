#!/usr/bin/env bash
# The main job on the embedded default: no network, no ../shared.
# Usage: scripts/demo.sh [calibkit demo options]   (report goes to ./demo-report by default)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/calibkit demo "$@"
