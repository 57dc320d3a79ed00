#!/usr/bin/env bash
# Lint, type-check and run the default test suite (slow tests excluded; `scripts/test.sh -m slow`
# runs them). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh test
export MPLBACKEND=Agg
# Two pytest workers on two cores: one BLAS / OpenMP thread each (no oversubscription).
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
.venv/bin/ruff check src tests benchmarks scripts experiments
.venv/bin/ruff format --check src tests benchmarks scripts experiments
.venv/bin/mypy
if [ "$#" -eq 0 ]; then set -- -m "not slow"; fi
exec .venv/bin/python -m pytest -n 2 "$@"
