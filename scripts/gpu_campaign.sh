#!/usr/bin/env bash
# The GPU campaign in one command (run it from the repository root of a machine with one CUDA GPU):
#   CUDA test lane -> benchmark (+ projections) -> the gpu profile's runs, K at a time -> pack
# inside a wall-clock budget (default 540 s; --budget S, 0 = none). Runs the budget cuts off keep their
# checkpoint and the next call resumes them. Arguments go to `python -m dirdp campaign run`:
#   bash scripts/gpu_campaign.sh --pack /tmp/pack      # then: python -m dirdp campaign unpack /tmp/pack
#   bash scripts/gpu_campaign.sh --budget 0 --k 6      # a whole night on your own GPU, no pack
# Needs torch with CUDA, numpy, scipy, pandas, pyyaml, pytest; no install: ./.venv if there is one, else python3
# with .gpu/site (Opacus, from scripts/gpu_prepare.sh) on PYTHONPATH and .gpu/data as the data root.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] && PY=.venv/bin/python
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
[ -d .gpu/site ] && export PYTHONPATH="$PYTHONPATH:$PWD/.gpu/site"
[ -d .gpu/data ] && export DIRDP_DATA="${DIRDP_DATA:-$PWD/.gpu/data}"
[ -f .gpu/COMMIT ] && export DIRDP_GIT_COMMIT="${DIRDP_GIT_COMMIT:-$(cat .gpu/COMMIT)}"
export PYTHONUNBUFFERED=1 MPLBACKEND=Agg
exec "$PY" -m dirdp campaign run --config config/gpu.yaml "$@"
