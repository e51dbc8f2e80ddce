#!/usr/bin/env bash
# The test suite: set up ./.venv (only when it is missing or stale: scripts/setup.sh), then every test of both tiers
# (the fast tier, what `pytest` alone runs, and the integration tests marked slow), and every notebook under nbval.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# the data: $DIRDP_DATA, else ../shared/datasets where this checkout has the offline copies beside it, else ./data
if [ -z "${DIRDP_DATA:-}" ] && [ -d ../shared/datasets ]; then export DIRDP_DATA="$(cd ../shared/datasets && pwd)"; fi
export MPLBACKEND=Agg
# both tiers (pytest alone: the fast one) and every notebook under nbval, in one run: a worker per core
# (pytest-xdist), each test file and each notebook on one worker (its module fixtures, its kernel, set up once; a
# session fixture such as the smoke DAG once per worker that needs it), handed out in the order tests/conftest.py
# collects them (the longest files first; xdist would otherwise order files by their number of tests and start the
# 3-test SLURM file last); DIRDP_TEST_WORKERS=0 runs them in this process, one after another
.venv/bin/python -m pytest -q --durations=25 -m "slow or not slow" -n "${DIRDP_TEST_WORKERS:-auto}" --dist loadfile \
  --no-loadscope-reorder tests --nbval-lax notebooks/
