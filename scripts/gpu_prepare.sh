#!/usr/bin/env bash
# Prepare the GPU campaign's carry folder .gpu/ (git-ignored) on THIS machine, before a call to a GPU machine
# that has torch but no network, no Opacus and no data:
#   .gpu/data/{MNIST,FashionMNIST}/raw   the offline data mirror ($DIRDP_DATA, else ../shared/datasets), ~41 MB
#   .gpu/site/                           Opacus and opt_einsum (pure Python), put on PYTHONPATH there
#   .gpu/COMMIT                          the commit the campaign's results will record in their provenance
# Then, on the GPU machine, from the repository root: bash scripts/gpu_campaign.sh --pack <folder>
# The commit must be clean (every result names the code that made it); FORCE=1 records "+dirty" instead.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
SRC=${DIRDP_DATA:-$(cd .. && pwd)/shared/datasets}
mkdir -p .gpu/data
for set in MNIST FashionMNIST; do
  if [ ! -d "$SRC/$set/raw" ]; then
    echo "gpu_prepare: no $SRC/$set/raw: point DIRDP_DATA at a folder holding MNIST/raw and FashionMNIST/raw" >&2
    exit 2
  fi
  mkdir -p ".gpu/data/$set/raw"
  cp -u "$SRC/$set/raw/"*.gz ".gpu/data/$set/raw/"
done
OPACUS=$("$PY" -c "import importlib.metadata as m; print(m.version('opacus'))" 2>/dev/null || echo 1.6.0)
if [ ! -d .gpu/site/opacus ]; then
  "$PY" -m pip install --quiet --no-deps --target .gpu/site "opacus==$OPACUS" opt_einsum
  rm -rf .gpu/site/benchmarks .gpu/site/examples   # Opacus ships these top-level folders; they would shadow ours
fi
dirty=$(git status --porcelain --untracked-files=no -- . ':(exclude)results' ':(exclude)figures')
if [ -n "$dirty" ] && [ "${FORCE:-0}" != 1 ]; then
  echo "gpu_prepare: the working tree has uncommitted code changes; commit them first (or FORCE=1):" >&2
  echo "$dirty" >&2
  exit 2
fi
echo "$(git rev-parse HEAD)${dirty:++dirty}" > .gpu/COMMIT
echo "gpu_prepare: .gpu/ ready ($(du -sh .gpu | cut -f1); commit $(cat .gpu/COMMIT); Opacus $OPACUS)."
echo "  tree that travels: $(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1) bytes tracked + .gpu"
echo "  on the GPU machine: bash scripts/gpu_campaign.sh --pack <folder>   (carry .gpu)"
