#!/usr/bin/env bash
# Set up ./.venv, when it is missing or stale: create it and install dirdp (editable) with all its extras, everything
# its workflow, explorer and tests need (`pip install .` alone installs the library: torch, numpy, scipy, tqdm; see
# pyproject.toml), and put this checkout on the venv's path for the workflow package beside the library. Stale: the
# stamp .venv/.dirdp-setup holds a hash of pyproject.toml, this script and the torch spec, and the install runs again
# only when that hash changes (the package is editable: a change to its code needs none).
# Quiet: pip's output goes to .venv/setup.log; a failure says so in one line naming that log. FORCE=1 reinstalls.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
# torch/torchvision pinned to the versions this artifact was validated with; override with
# TORCH_SPEC (e.g. TORCH_SPEC="torch torchvision" for the newest wheels of your CUDA).
TORCH_SPEC=${TORCH_SPEC:-"torch==2.14.1 torchvision==0.29.1"}
STAMP=.venv/.dirdp-setup
LOG=.venv/setup.log
sha256() { if command -v sha256sum >/dev/null; then sha256sum; else shasum -a 256; fi | cut -d' ' -f1; }
want=$({ cat pyproject.toml scripts/setup.sh; printf '%s\n' "$TORCH_SPEC"; } | sha256)
if [ "${FORCE:-0}" != 1 ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$want" ] && .venv/bin/python -c "" 2>/dev/null; then
  exit 0  # up to date
fi
mkdir -p .venv
rm -f "$STAMP"  # an install cut short is redone next time
echo "dirdp: installing dirdp and what it needs into .venv (pip's output: $LOG)"
rc=0
# shellcheck disable=SC2086
{ { [ -x .venv/bin/python ] || "$PY" -m venv .venv; } &&
  .venv/bin/python -m pip install --upgrade pip &&
  .venv/bin/python -m pip install $TORCH_SPEC -e ".[data,baselines,workflow,explore,test]" &&
  # the workflow (workflow/ beside the Snakefile) is no part of the package: the venv finds it in this checkout
  # (the notebooks import it, run by papermill, nbval or JupyterLab from any folder)
  for site in .venv/lib/python*/site-packages; do [ ! -d "$site" ] || echo "$PWD" > "$site/dirdp-workflow.pth"; done; } \
    >"$LOG" 2>&1 || rc=$?
if [ "$rc" != 0 ]; then
  echo "dirdp: setting up .venv failed (exit $rc); what went wrong is at the end of $LOG" >&2
  exit "$rc"
fi
echo "$want" >"$STAMP"
