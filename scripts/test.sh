#!/usr/bin/env bash
# Lint, type-check and run the tests in two tiers: the unit tier (every module's own tests,
# doctests included; budget: 6 minutes on two cores, its slowest tests printed), then the
# integration tier (builds, packaging, the documents' blocks, whole commands, studies and
# executors: tests/conftest.py:INTEGRATION). Slow tests run in neither (`scripts/test.sh -m
# slow` runs them). `scripts/test.sh unit` or `scripts/test.sh integration` runs one tier;
# any other arguments go to pytest as they are.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh test
export MPLBACKEND=Agg
# Two pytest workers on two cores: one BLAS / OpenMP thread each (no oversubscription).
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
.venv/bin/ruff check src tests benchmarks scripts experiments
.venv/bin/ruff format --check src tests benchmarks scripts experiments
.venv/bin/mypy
UNIT_BUDGET_S=360
unit() {
  local start=$SECONDS status=0
  .venv/bin/python -m pytest -n 2 -m "not slow and not integration" --durations=15 "$@" \
    || status=$?
  local spent=$((SECONDS - start))
  echo "unit tier: ${spent} s (budget ${UNIT_BUDGET_S} s on two cores)"
  if [ "$spent" -gt "$UNIT_BUDGET_S" ]; then
    echo "warning: the unit tier is over its budget: move the slowest tests above to the" \
      "integration tier (tests/conftest.py:INTEGRATION) or make them faster" >&2
  fi
  return "$status"
}
integration() {
  .venv/bin/python -m pytest -n 2 -m "integration and not slow" --durations=10 "$@"
}
case "${1:-}" in
  "")  # both tiers, even when the first fails: one run says every failure
    status=0
    unit || status=$?
    integration || status=$?
    exit "$status"
    ;;
  unit | integration)
    tier=$1
    shift
    "$tier" "$@"
    ;;
  *) exec .venv/bin/python -m pytest -n 2 "$@" ;;
esac
