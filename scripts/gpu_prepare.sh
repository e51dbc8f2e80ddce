#!/usr/bin/env bash
# Prepare the GPU campaign's carry folder .gpu/ (git-ignored) on THIS machine, before a call to a GPU machine
# that has Python 3.12, torch, numpy, scipy, pandas, matplotlib, tqdm and pyyaml, but no network, no Opacus, no
# jsonschema, no pytest and no data:
#   .gpu/data/<Set>/raw   the raw data of the data set(s) the call trains (GPU_DATASETS, default: fashionmnist,
#                         the queue's first runs; "mnist fashionmnist" for both), from $DIRDP_DATA (else
#                         ../shared/datasets)
#   .gpu/wheels/          pure-Python wheels of Opacus, opt_einsum, pytest, pluggy, iniconfig and packaging
#                         (scripts/gpu_campaign.sh installs them outside the tree: no __pycache__, no package tests)
#   .gpu/resume/          checkpoints of unfinished GPU runs (results/runs/gpu/**/*.ckpt.pt, git-ignored), restored
#                         in place there so that the runs resume
#   .gpu/COMMIT           the commit the campaign's results will record in their provenance
#   .gpu/TRAVEL.json      what the call sends, by the device's own rule (python -m dirdp.campaign.travel)
# Then refuses when the call would send over 60 MiB (the device refuses over 64 MiB), naming what to drop.
# On the GPU machine, from the repository root: bash scripts/gpu_campaign.sh --pack $OUT   (carry .gpu)
# The commit must be clean (every result names the code that made it); FORCE=1 records "+dirty" instead.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
SRC=${DIRDP_DATA:-$(cd .. && pwd)/shared/datasets}
DATASETS=${GPU_DATASETS:-fashionmnist}
rm -rf .gpu/data .gpu/site .gpu/resume
mkdir -p .gpu/data .gpu/wheels
for ds in $DATASETS; do
  case $ds in
    mnist) set=MNIST ;;
    fashionmnist) set=FashionMNIST ;;
    *) echo "gpu_prepare: GPU_DATASETS: unknown data set '$ds' (mnist, fashionmnist)" >&2; exit 2 ;;
  esac
  if [ ! -d "$SRC/$set/raw" ]; then
    echo "gpu_prepare: no $SRC/$set/raw: point DIRDP_DATA at a folder holding $set/raw" >&2
    exit 2
  fi
  mkdir -p ".gpu/data/$set/raw"
  cp "$SRC/$set/raw/"*.gz ".gpu/data/$set/raw/"
done
OPACUS=$("$PY" -c "import importlib.metadata as m; print(m.version('opacus'))" 2>/dev/null || echo 1.6.0)
WHEELS="opacus==$OPACUS opt_einsum==3.4.0 pytest==8.3.5 pluggy==1.5.0 iniconfig==2.1.0 packaging==25.0"
for w in $WHEELS; do
  name=${w%%==*}
  ls .gpu/wheels/ 2>/dev/null | grep -qi "^${name//-/_}-${w##*==}-" && continue
  "$PY" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation py \
    --abi none --platform any -d .gpu/wheels "$w"
done
"$PY" - <<'PYEOF'
import sys
from pathlib import Path
from dirdp.campaign.travel import WHEELS_BYTES_MAX
size = sum(p.stat().st_size for p in Path(".gpu/wheels").glob("*.whl"))
if size > WHEELS_BYTES_MAX:
    sys.exit(f"gpu_prepare: the wheels in .gpu/wheels weigh {size:,} bytes, over the {WHEELS_BYTES_MAX:,} that "
             "dirdp.campaign.travel budgets: remove stale versions (rm -r .gpu/wheels) or raise the bound")
PYEOF
if [ -d results/runs/gpu ]; then
  (cd results/runs/gpu && find . -name '*.ckpt.pt' -print0 | while IFS= read -r -d '' f; do
     mkdir -p "../../../.gpu/resume/$(dirname "$f")"; cp "$f" "../../../.gpu/resume/$f"; done)
fi
dirty=$(git status --porcelain --untracked-files=no -- . ':(exclude)results' ':(exclude)figures')
if [ -n "$dirty" ] && [ "${FORCE:-0}" != 1 ]; then
  echo "gpu_prepare: the working tree has uncommitted code changes; commit them first (or FORCE=1):" >&2
  echo "$dirty" >&2
  exit 2
fi
echo "$(git rev-parse HEAD)${dirty:++dirty}" > .gpu/COMMIT
echo '{}' > .gpu/TRAVEL.json
"$PY" -m dirdp.campaign.travel --carry .gpu --write .gpu/TRAVEL.json.new
mv .gpu/TRAVEL.json.new .gpu/TRAVEL.json
echo "gpu_prepare: .gpu/ ready (data: $DATASETS; commit $(cat .gpu/COMMIT); Opacus $OPACUS)."
echo "  on the GPU machine: bash scripts/gpu_campaign.sh --pack \$OUT   (carry .gpu)"
