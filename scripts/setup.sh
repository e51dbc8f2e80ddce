#!/usr/bin/env bash
# Create ./.venv (once) and install dirdp with all its extras: everything its workflow, explorer and tests need
# (`pip install .` alone installs the library: torch, numpy, scipy, tqdm; see pyproject.toml).
# Re-running is cheap: pip skips what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
# torch/torchvision pinned to the versions this artifact was validated with; override with
# TORCH_SPEC (e.g. TORCH_SPEC="torch torchvision" for the newest wheels of your CUDA).
TORCH_SPEC=${TORCH_SPEC:-"torch==2.14.1 torchvision==0.29.1"}
.venv/bin/python -m pip install --quiet --upgrade pip
# shellcheck disable=SC2086
.venv/bin/python -m pip install --quiet $TORCH_SPEC -e ".[data,baselines,workflow,explore,test]"
