#!/usr/bin/env bash
# Bundle what a GPU node without network needs for the GPU campaign, on a machine with network (a login node, your
# workstation), into the git-ignored folder .gpu/. The node is assumed to have Python with torch (CUDA), numpy,
# scipy, pandas, matplotlib, tqdm and pyyaml, and no Opacus, jsonschema, pytest or data:
#   .gpu/data/<Set>/raw   the raw data of the data set(s) the campaign trains (GPU_DATASETS, default: fashionmnist,
#                         the queue's first runs; "mnist fashionmnist" for both), from $DIRDP_DATA (else
#                         ../shared/datasets)
#   .gpu/wheels/          pure-Python wheels of Opacus, opt_einsum, pytest, pluggy, iniconfig and packaging
#                         (scripts/gpu_campaign.sh installs them outside the tree: no __pycache__, no package tests)
#   .gpu/resume/          checkpoints of unfinished GPU runs (results/runs/gpu/**/*.ckpt.pt, git-ignored), restored
#                         in place there so that the runs resume
#   .gpu/COMMIT           the commit the campaign's results will record in their provenance
#   .gpu/TRAVEL.json      what the copy to the node weighs (the working tree + .gpu/) and the size cap it was
#                         checked against (python -m workflow.campaign.travel)
# Then refuses when that copy would weigh more than the size cap, naming what to drop. The cap, in MiB:
# DIRDP_SIZE_CAP_MIB, default 15/16 of DIRDP_TRANSFER_LIMIT_MIB (the most your copy to the node may weigh, default
# 64), so 60 MiB; without a limit on the copy, set both high.
# BUNDLE=FILE (outside the repository) also writes exactly that copy, the working tree (tracked + untracked-not-
# ignored files, no .git) and .gpu/, as one tar. Copy it to the node, unpack it and, from its root:
#   bash scripts/gpu_campaign.sh --budget S --pack out/          (docs/scale.md, "A GPU node without network").
# The commit must be clean (every result names the code that made it); FORCE=1 records "+dirty" instead.
set -euo pipefail
if [ -n "${BUNDLE:-}" ]; then BUNDLE=$(realpath -m "$BUNDLE"); fi   # relative to where it was called from
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
SRC=${DIRDP_DATA:-$(cd .. && pwd)/shared/datasets}
DATASETS=${GPU_DATASETS:-fashionmnist}
case ${BUNDLE:-} in "$PWD"/*) echo "gpu_prepare: BUNDLE=$BUNDLE: write it outside the repository" >&2; exit 2 ;; esac
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
from workflow.campaign.travel import WHEELS_BYTES_MAX
size = sum(p.stat().st_size for p in Path(".gpu/wheels").glob("*.whl"))
if size > WHEELS_BYTES_MAX:
    sys.exit(f"gpu_prepare: the wheels in .gpu/wheels weigh {size:,} bytes, over the {WHEELS_BYTES_MAX:,} that "
             "workflow.campaign.travel budgets: remove stale versions (rm -r .gpu/wheels) or raise the bound")
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
"$PY" -m workflow.campaign.travel --carry .gpu --write .gpu/TRAVEL.json.new
mv .gpu/TRAVEL.json.new .gpu/TRAVEL.json
echo "gpu_prepare: .gpu/ ready (data: $DATASETS; commit $(cat .gpu/COMMIT); Opacus $OPACUS)."
if [ -n "${BUNDLE:-}" ]; then   # one tar of what the node needs: the working tree (no .git) and .gpu/
  { git ls-files -z --cached --others --exclude-standard; find .gpu -type f -print0; } \
    | while IFS= read -r -d '' f; do if [ -e "$f" ]; then printf '%s\0' "$f"; fi; done \
    | tar --null -T - -cf "$BUNDLE"
  echo "gpu_prepare: wrote $BUNDLE ($(wc -c < "$BUNDLE") bytes): copy it to the GPU node, there"
  echo "  mkdir dirdp && tar -xf $(basename "$BUNDLE") -C dirdp && cd dirdp && bash scripts/gpu_campaign.sh --budget S --pack out/"
else
  echo "  copy the tree and .gpu/ to the GPU node (or rerun with BUNDLE=FILE for one tar of them); there:"
  echo "  bash scripts/gpu_campaign.sh --budget S --pack out/"
fi
