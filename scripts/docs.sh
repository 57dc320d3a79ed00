#!/usr/bin/env bash
# Build the API reference offline into docs/_build/api (open docs/_build/api/index.html).
# Any warning fails the build. Needs the docs extra: `bash scripts/setup.sh docs` (the test
# extra includes it). Extra arguments go to sphinx-build (e.g. -E to rebuild every page).
set -euo pipefail
cd "$(dirname "$0")/.."
py="${PYTHON:-.venv/bin/python}"
[ -x "$py" ] || py=python3
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" MPLBACKEND=Agg
"$py" -m sphinx -W --keep-going -q -b html "$@" docs/api docs/_build/api
echo "API reference: docs/_build/api/index.html"
