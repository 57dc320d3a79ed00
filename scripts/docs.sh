#!/usr/bin/env bash
# Build the API reference offline into docs/_build/api (open docs/_build/api/index.html);
# any warning fails the build. Without PYTHON=..., it uses .venv and installs the docs extra
# there first if Sphinx is missing (scripts/setup.sh docs; the test extra includes it).
# Extra arguments go to sphinx-build (e.g. -E to rebuild every page).
set -euo pipefail
cd "$(dirname "$0")/.."
py="${PYTHON:-}"
if [ -z "$py" ]; then
  py=".venv/bin/python"
  "$py" -c "import sphinx, myst_parser" 2>/dev/null || bash scripts/setup.sh docs
fi
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" MPLBACKEND=Agg
"$py" -m sphinx -W --keep-going -q -b html "$@" docs/api docs/_build/api
echo "API reference: docs/_build/api/index.html"
