#!/usr/bin/env bash
# A rehearsal, on this machine's CPU, of the GPU campaign on a GPU node without network (docs/scale.md):
#   1. a Python 3.12 environment with torch 2.11 and only the packages such a node is assumed to have (numpy, scipy,
#      pandas, matplotlib, tqdm, pyyaml), outside the repository (REHEARSAL_VENV, default /tmp/dev312; built once:
#      PyPI's torch wheel pulls its CUDA libraries, about 5 GB);
#   2. BUNDLE=... scripts/gpu_prepare.sh (.gpu/, the size check against the size cap, and the tar of what the node
#      gets: tracked + untracked-not-ignored files + .gpu, no .git), unpacked into a folder as on the node;
#   3. the queue fitted to a short budget there (scripts/gpu_campaign.sh --smoke: no CUDA here, so 4-step CPU runs
#      of the gpu-smoke profile; REHEARSAL_BUDGET, default 420 s), packed into an out/ folder, checked against the
#      bound on what comes back (PACK_PARTS files of at most PACK_PART_MIB MiB each, default 4 and 15.5, passed to
#      the campaign's --pack-parts and --pack-part-mib);
#   4. the pack unpacked into a clean clone of HEAD (refused as a smoke pack first; then --allow-smoke), every file
#      compared with the node copy's, and `campaign status` of the clone.
# Usage: bash scripts/gpu_rehearsal.sh    (FORCE=1 for uncommitted code, as gpu_prepare.sh; PYTHON: this machine's
# project Python, default .venv/bin/python; DIRDP_SIZE_CAP_MIB / DIRDP_TRANSFER_LIMIT_MIB as for gpu_prepare.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
PY=$(cd "$(dirname "$PY")" && pwd)/$(basename "$PY")
VENV=${REHEARSAL_VENV:-/tmp/dev312}
PY312=${PY312:-$(command -v python3.12 || echo /root/.pyenv/versions/3.12.1/bin/python3.12)}
BUDGET=${REHEARSAL_BUDGET:-420}
PARTS=${PACK_PARTS:-4}
PART_MIB=${PACK_PART_MIB:-15.5}
WORK=${REHEARSAL_DIR:-$(mktemp -d /tmp/dirdp-rehearsal.XXXXXX)}
say() { echo "== rehearsal: $*"; }

if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import torch, numpy, scipy, pandas, matplotlib, tqdm, yaml" 2>/dev/null; then
  say "building $VENV (Python 3.12, torch 2.11, only the GPU node's assumed packages)"
  "$PY312" -m venv "$VENV"
  "$VENV/bin/pip" install -q "torch==2.11.*" numpy scipy pandas matplotlib tqdm pyyaml
fi
"$VENV/bin/python" -c "import sys, torch; print('== rehearsal: the node-like Python', sys.version.split()[0], 'torch', torch.__version__)"
for m in jsonschema pytest opacus snakemake papermill; do
  if "$VENV/bin/python" -c "import $m" 2>/dev/null; then echo "rehearsal: $VENV has $m; the node is assumed not to" >&2; exit 2; fi
done

say "prepare (.gpu/, the size check and the bundle $WORK/bundle.tar)"
rm -rf "$WORK/tree" "$WORK/out" "$WORK/clone"
mkdir -p "$WORK/tree" "$WORK/out"
BUNDLE="$WORK/bundle.tar" bash scripts/gpu_prepare.sh

say "unpack the bundle as on the node (tracked + untracked-not-ignored + .gpu, no .git) into $WORK/tree"
tar -xf "$WORK/bundle.tar" -C "$WORK/tree"
bytes=$(find "$WORK/tree" -type f -printf '%s\n' | awk '{s+=$1} END {print s}')
cap=$(PYTHONPATH="$REPO" "$PY" -c "from workflow.campaign.travel import size_cap; print(size_cap())")
say "size on the node: $bytes bytes ($(awk -v b="$bytes" 'BEGIN {printf "%.2f", b/1048576}') MiB; size cap $cap bytes)"
[ "$bytes" -le "$cap" ] || { echo "rehearsal: $bytes bytes, over the size cap ($cap)" >&2; exit 2; }

say "the queue fitted to the budget on the node-like Python, budget $BUDGET s (--smoke: no CUDA here)"
(cd "$WORK/tree" && env -i PATH=/usr/bin:/bin HOME="$WORK" TMPDIR="$WORK" PYTHON="$VENV/bin/python" \
   bash scripts/gpu_campaign.sh --smoke --workdir "$WORK/tree" --budget "$BUDGET" --pack "$WORK/out" \
     --pack-parts "$PARTS" --pack-part-mib "$PART_MIB") 2>&1 | tee "$WORK/campaign.log"

say "what comes back from $WORK/out (at most $PARTS file(s) of $PART_MIB MiB each)"
"$PY" - "$WORK/out" "$PARTS" "$PART_MIB" <<'PYEOF'
import sys
from pathlib import Path
out, parts, part_mib = Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
files = [p for p in sorted(out.rglob("*")) if p.is_file()]
total = sum(p.stat().st_size for p in files)
for p in files:
    print(f"  {p.relative_to(out)}  {p.stat().st_size:,} bytes")
print(f"  {len(files)} file(s), {total:,} bytes")
if len(files) > parts or any(p.stat().st_size > part_mib * 2**20 for p in files):
    sys.exit(f"rehearsal: {out} holds more than {parts} file(s) of {part_mib} MiB")
PYEOF

say "unpack into a clean clone of HEAD ($WORK/clone)"
git clone -q "$REPO" "$WORK/clone"
cd "$WORK/clone"
if PYTHONPATH="$WORK/clone" "$PY" -m workflow campaign unpack "$WORK/out" --into "$WORK/clone" 2> "$WORK/refused.txt"; then
  echo "rehearsal: a smoke pack was unpacked without --allow-smoke" >&2; exit 1
fi
say "refused as it should be: $(cat "$WORK/refused.txt")"
PYTHONPATH="$WORK/clone" "$PY" -m workflow campaign unpack "$WORK/out" --into "$WORK/clone" --allow-smoke | tee "$WORK/unpacked.txt"
n=0
while read -r f; do
  cmp -s "$WORK/clone/$f" "$WORK/tree/$f" || { echo "rehearsal: $f differs from the node copy's" >&2; exit 1; }
  n=$((n + 1))
done < <(sed -n 's/^  //p' "$WORK/unpacked.txt")
say "$n unpacked file(s), each identical to the node copy's"
[ -z "$(git status --porcelain --untracked-files=no)" ] || { echo "rehearsal: the unpack changed tracked files" >&2; exit 1; }
PYTHONPATH="$WORK/clone" "$PY" -m workflow campaign status --config config/gpu.yaml --workdir "$WORK/clone" | sed -n 1p
say "done: $WORK"
