#!/usr/bin/env bash
# The main job: set up ./.venv (only when it is missing or stale: scripts/setup.sh), then run the Snakemake DAG that
# regenerates the profile's tables and figures in results/<profile>/ and figures/<profile>/ (its training runs in
# results/runs/<profile>/); a profile writes only into its own folders, so the committed results of another profile
# (the cpu profile's) stay as they are. Without PROFILE the Snakefile chooses: the paper profile with a CUDA GPU,
# otherwise the quick profile, and says which; force one with PROFILE=paper|quick|cpu|gpu|smoke. Extra arguments go
# to snakemake (e.g. -n for a dry run). A PROFILE with no config/<PROFILE>.yaml, or an option snakemake does not
# know, is one line on stderr and exit 2, before any work. What triggers a rerun: profiles/default/config.yaml,
# which Snakemake loads on its own.
set -euo pipefail
cd "$(dirname "$0")/.."
args=(--cores all --resources gpu=1)
if [ -n "${PROFILE:-}" ]; then
  if [ ! -f "config/$PROFILE.yaml" ] || [ "$PROFILE" = schema ]; then
    known=$(cd config && ls -- *.yaml | sed -e 's/\.yaml$//' -e '/^schema$/d' | paste -sd, - | sed 's/,/, /g')
    says="there is no config/$PROFILE.yaml"
    [ "$PROFILE" != schema ] || says="config/schema.yaml is the profiles' schema, not a profile"
    echo "dirdp: PROFILE=$PROFILE: $says. Profiles: $known." >&2
    exit 2
  fi
  args+=(--configfile "config/$PROFILE.yaml")
fi
bash scripts/setup.sh
.venv/bin/python -m workflow.snakemake_args "${args[@]}" "$@" || exit 2
# the data: $DIRDP_DATA, else ../shared/datasets where this checkout has the offline copies beside it, else ./data
if [ -z "${DIRDP_DATA:-}" ] && [ -d ../shared/datasets ]; then export DIRDP_DATA="$(cd ../shared/datasets && pwd)"; fi
[ -z "${PROFILE:-}" ] || echo "dirdp: running the '$PROFILE' profile (config/$PROFILE.yaml)"
export MPLBACKEND=Agg
exec .venv/bin/snakemake "${args[@]}" "$@"
