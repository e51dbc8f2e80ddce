#!/usr/bin/env bash
# The main job: set up ./.venv, then run the Snakemake DAG that regenerates the profile's tables and
# figures in results/<profile>/ and figures/<profile>/ (its training runs in results/runs/<profile>/);
# a profile writes only into its own folders, so the committed results of another profile (the cpu
# profile's) stay as they are. With a CUDA GPU it runs the paper profile, otherwise the quick profile;
# force one with PROFILE=paper|quick. Extra arguments go to snakemake (e.g. -n for a dry run). What
# triggers a rerun: profiles/default/config.yaml, which Snakemake loads on its own.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# the data: $DIRDP_DATA, else ../shared/datasets where this checkout has the offline copies beside it, else ./data
if [ -z "${DIRDP_DATA:-}" ] && [ -d ../shared/datasets ]; then export DIRDP_DATA="$(cd ../shared/datasets && pwd)"; fi
if [ -z "${PROFILE:-}" ]; then
  if .venv/bin/python -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)"; then
    PROFILE=paper
  else
    PROFILE=quick
  fi
fi
echo "dirdp: running the '$PROFILE' profile (config/$PROFILE.yaml)"
export MPLBACKEND=Agg
exec .venv/bin/snakemake --cores all --resources gpu=1 --configfile "config/$PROFILE.yaml" "$@"
