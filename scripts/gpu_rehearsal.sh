#!/usr/bin/env bash
# A rehearsal of the GPU device call on this machine's CPU, as the device would run it:
#   1. a Python 3.12 environment with torch 2.11 and only the device's packages (numpy, scipy, pandas, matplotlib,
#      tqdm, pyyaml), outside the repository (REHEARSAL_VENV, default /tmp/dev312; built once: PyPI's torch wheel
#      pulls its CUDA libraries, about 5 GB);
#   2. scripts/gpu_prepare.sh (the carry .gpu/ and the size check: what travels, refused over 60 MiB);
#   3. the tree copied as the device receives it: tracked + untracked-not-ignored files + .gpu, no .git;
#   4. the first-call plan there (scripts/gpu_campaign.sh --smoke: no CUDA here, so 4-step CPU runs of the
#      gpu-smoke profile) with a short budget (REHEARSAL_BUDGET, default 420 s), packed into an $OUT folder, checked
#      against the device's rule for what comes back (at most 8 files, 16 MiB each, 64 MiB in all);
#   5. the pack unpacked into a clean clone of HEAD (refused as a smoke pack first; then --allow-smoke), every file
#      compared with the copy's, and `campaign status` of the clone.
# Usage: bash scripts/gpu_rehearsal.sh    (FORCE=1 for uncommitted code, as gpu_prepare.sh; PYTHON: this machine's
# project Python, default .venv/bin/python)
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
PY=$(cd "$(dirname "$PY")" && pwd)/$(basename "$PY")
VENV=${REHEARSAL_VENV:-/tmp/dev312}
PY312=${PY312:-$(command -v python3.12 || echo /root/.pyenv/versions/3.12.1/bin/python3.12)}
BUDGET=${REHEARSAL_BUDGET:-420}
WORK=${REHEARSAL_DIR:-$(mktemp -d /tmp/dirdp-rehearsal.XXXXXX)}
say() { echo "== rehearsal: $*"; }

if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import torch, numpy, scipy, pandas, matplotlib, tqdm, yaml" 2>/dev/null; then
  say "building $VENV (Python 3.12, torch 2.11, the device's packages only)"
  "$PY312" -m venv "$VENV"
  "$VENV/bin/pip" install -q "torch==2.11.*" numpy scipy pandas matplotlib tqdm pyyaml
fi
"$VENV/bin/python" -c "import sys, torch; print('== rehearsal: device-like Python', sys.version.split()[0], 'torch', torch.__version__)"
for m in jsonschema pytest opacus snakemake papermill; do
  if "$VENV/bin/python" -c "import $m" 2>/dev/null; then echo "rehearsal: $VENV has $m; the device does not" >&2; exit 2; fi
done

say "prepare (.gpu/ and the size check)"
bash scripts/gpu_prepare.sh

say "copy the tree as the device receives it (tracked + untracked-not-ignored + .gpu, no .git) to $WORK/tree"
rm -rf "$WORK/tree" "$WORK/out" "$WORK/clone"
mkdir -p "$WORK/tree" "$WORK/out"
{ git ls-files -z --cached --others --exclude-standard; find .gpu -type f -print0; } \
  | while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done \
  | tar --null -T - -cf - | tar -xf - -C "$WORK/tree"
bytes=$(find "$WORK/tree" -type f -printf '%s\n' | awk '{s+=$1} END {print s}')
say "travelling size: $bytes bytes ($(awk -v b="$bytes" 'BEGIN {printf "%.2f", b/1048576}') MiB; the device refuses over 64 MiB, gpu_prepare over 60)"
[ "$bytes" -le $((60 * 1048576)) ] || { echo "rehearsal: over 60 MiB" >&2; exit 2; }

say "the first-call plan on the device-like Python, budget $BUDGET s (--smoke: no CUDA here)"
(cd "$WORK/tree" && env -i PATH=/usr/bin:/bin HOME="$WORK" TMPDIR="$WORK" OUT="$WORK/out" PYTHON="$VENV/bin/python" \
   bash scripts/gpu_campaign.sh --smoke --workdir "$WORK/tree" --budget "$BUDGET" --pack "$WORK/out") 2>&1 \
   | tee "$WORK/campaign.log"

say "what comes back from \$OUT (the device returns at most 8 files, 16 MiB each, 64 MiB in all, 2 folders deep)"
"$PY" - "$WORK/out" <<'PYEOF'
import sys
from pathlib import Path
out = Path(sys.argv[1])
files = [p for p in sorted(out.rglob("*")) if p.is_file()]
total = sum(p.stat().st_size for p in files)
for p in files:
    print(f"  {p.relative_to(out)}  {p.stat().st_size:,} bytes")
print(f"  {len(files)} file(s), {total:,} bytes")
deep = [p for p in files if len(p.relative_to(out).parts) > 3]
if len(files) > 8 or total > 64 * 2**20 or any(p.stat().st_size > 16 * 2**20 for p in files) or deep:
    sys.exit("rehearsal: $OUT breaks the device's rule for what comes back")
PYEOF

say "unpack into a clean clone of HEAD ($WORK/clone)"
git clone -q "$REPO" "$WORK/clone"
cd "$WORK/clone"
if PYTHONPATH="$WORK/clone" "$PY" -m dirdp campaign unpack "$WORK/out" --into "$WORK/clone" 2> "$WORK/refused.txt"; then
  echo "rehearsal: a smoke pack was unpacked without --allow-smoke" >&2; exit 1
fi
say "refused as it should be: $(cat "$WORK/refused.txt")"
PYTHONPATH="$WORK/clone" "$PY" -m dirdp campaign unpack "$WORK/out" --into "$WORK/clone" --allow-smoke | tee "$WORK/unpacked.txt"
n=0
while read -r f; do
  cmp -s "$WORK/clone/$f" "$WORK/tree/$f" || { echo "rehearsal: $f differs from the device copy's" >&2; exit 1; }
  n=$((n + 1))
done < <(sed -n 's/^  //p' "$WORK/unpacked.txt")
say "$n unpacked file(s), each identical to the device copy's"
[ -z "$(git status --porcelain --untracked-files=no)" ] || { echo "rehearsal: the unpack changed tracked files" >&2; exit 1; }
PYTHONPATH="$WORK/clone" "$PY" -m dirdp campaign status --config config/gpu.yaml --workdir "$WORK/clone" | sed -n 1p
say "done: $WORK"
