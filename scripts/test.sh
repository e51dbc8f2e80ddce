#!/usr/bin/env bash
# The test suite: set up ./.venv, then the unit tests, then every notebook under nbval.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export MPLBACKEND=Agg
.venv/bin/python -m pytest -q --durations=25 tests
.venv/bin/python -m pytest -q --durations=10 --nbval-lax notebooks/
