#!/usr/bin/env bash
# The GPU campaign in one command (run it from the repository root of a machine with one CUDA GPU):
#   CUDA test lane -> benchmark (+ projections) -> the gpu profile's runs that can finish in the budget -> pack
# inside a wall-clock budget (default 540 s; --budget S, 0 = none). With a budget, only the runs the benchmark's
# steps/s says can finish are started (the queue fitted to the budget, workflow.campaign.fit); --k N or --no-fit
# start the queue K at a time instead (through Snakemake; on a node without it, xargs -P K), and runs the budget cuts
# off keep their checkpoint for the next campaign run.
# Arguments go to `python -m workflow campaign run`:
#   bash scripts/gpu_campaign.sh --budget 3300 --pack out/   # on a GPU node without network, in the tree that
#                                                            # scripts/gpu_prepare.sh bundled; copy out/ back, then
#                                                            # python -m workflow campaign unpack out/
#   bash scripts/gpu_campaign.sh --budget 0 --k 6            # a whole night on your own GPU, no pack
# Needs torch with CUDA, numpy, scipy, pandas, pyyaml; nothing else installed: ./.venv if there is one, else $PYTHON,
# else python3, with .gpu/wheels (Opacus, opt_einsum, pytest: scripts/gpu_prepare.sh) installed outside the tree
# (DIRDP_SITE, default $TMPDIR/dirdp-gpu-site), .gpu/data as the data root and .gpu/resume's checkpoints put back
# in place.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] && PY=.venv/bin/python
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
if compgen -G ".gpu/wheels/*.whl" >/dev/null; then
  SITE=${DIRDP_SITE:-${TMPDIR:-/tmp}/dirdp-gpu-site}
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .gpu/wheels/*.whl \
    && export PYTHONPATH="$PYTHONPATH:$SITE" \
    || echo "gpu_campaign: could not install .gpu/wheels (no Opacus, no pytest this time)" >&2
fi
if [ -d .gpu/resume ]; then   # checkpoints of unfinished runs, bundled from the last campaign run
  (cd .gpu/resume && find . -name '*.ckpt.pt' -print0 | while IFS= read -r -d '' f; do
     mkdir -p "../../results/runs/gpu/$(dirname "$f")"; cp -n "$f" "../../results/runs/gpu/$f"; done)
fi
[ -d .gpu/data ] && export DIRDP_DATA="${DIRDP_DATA:-$PWD/.gpu/data}"
[ -f .gpu/COMMIT ] && export DIRDP_GIT_COMMIT="${DIRDP_GIT_COMMIT:-$(cat .gpu/COMMIT)}"
export PYTHONUNBUFFERED=1 MPLBACKEND=Agg
exec "$PY" -m workflow campaign run --config config/gpu.yaml "$@"
