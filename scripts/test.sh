#!/usr/bin/env bash
# The test suite: set up ./.venv (only when it is missing or stale: scripts/setup.sh), then the unit tests, then every
# notebook under nbval.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# the data: $DIRDP_DATA, else ../shared/datasets where this checkout has the offline copies beside it, else ./data
if [ -z "${DIRDP_DATA:-}" ] && [ -d ../shared/datasets ]; then export DIRDP_DATA="$(cd ../shared/datasets && pwd)"; fi
export MPLBACKEND=Agg
.venv/bin/python -m pytest -q --durations=25 tests
.venv/bin/python -m pytest -q --durations=10 --nbval-lax notebooks/
