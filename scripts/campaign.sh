#!/usr/bin/env bash
# The CPU evidence campaign (config/cpu.yaml, `campaign: queue:`): its runs in the background through Snakemake
# (python -m workflow campaign run: the runs not done as targets of snakemake --keep-going, each train job at the
# priority of its place in the queue), K = 2 cores by default (a run that `training: threads_by_width` gives n threads
# takes n of them), logs in results/logs/runs/cpu/ and results/logs/campaign-cpu.log.
#   bash scripts/campaign.sh start    # start, or resume: first restores the parked checkpoints (below)
#   bash scripts/campaign.sh status   # where each run stands (finished + accuracy, checkpoint step, queued)
#   bash scripts/campaign.sh stop     # every run writes its checkpoint now and stops (SIGTERM)
#   bash scripts/campaign.sh land     # while the runs go on: commit the results that have landed (no checkpoint);
#                                     # a finished run whose weights stay out of git first gets its membership
#                                     # record (python -m workflow membership), which the audit reads in their place
#   bash scripts/campaign.sh save     # when a session stops: stop, commit the results as land does, and park the
#                                     # checkpoints of unfinished runs: one commit adds them (git add -f: they are
#                                     # ignored), the next takes them out of the tree and records in
#                                     # results/campaign/<profile>/parked.json where history holds them
#                                     # (workflow.campaign.parked): the next start, in any clone, restores them, and
#                                     # no tree carries them (a copy to a GPU node stays under its size cap)
#   bash scripts/campaign.sh tables RUN.json...   # after runs land (committed): rebuild, in a clean checkout of
#                                     # HEAD, every table, figure, notebook and index downstream of those runs (and
#                                     # nothing else), copy them back, rewrite the README and docs blocks and commit; DRY=1
#                                     # only prints the plan. Snakemake's own means: the rules whose jobs read the runs
#                                     # (python -m workflow.campaign.rebuild asks Snakemake) forced, train=false; no file
#                                     # time is touched. The audit of released weights is not forced by a run
#                                     # whose weights are not in git (full width): it cannot change. A committed
#                                     # source file in place of a run (workflow/report/compare.py) rebuilds what reads it
#                                     # (every notebook job reads the code: all of them)
# Automated commits: one per `land` (results, released models, membership records), two per `save` (the same with
# the runner records and the checkpoints of unfinished runs; then the checkpoints parked) and one per `tables` (what
# the DAG rebuilt downstream of runs already saved); nothing else here, and not the runner (workflow.campaign), commits.
# Work on these machines can stop at any time: `save` before it does. Runs start only from a clean tree
# (their provenance names the commit): `start` refuses uncommitted code changes (ALLOW_DIRTY=1 overrides).
# K=1 bash scripts/campaign.sh start for one run at a time. The runs' session gets CAMPAIGN_PRIORITY (a Linux autogroup
# nice value, default -5): otherwise a test run in another terminal takes as large a share of the cores as all the runs
# together (nice alone does not reach across sessions); CAMPAIGN_PRIORITY=0 to share the cores equally.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
[ -x "$PY" ] || { echo "campaign: no .venv: run bash scripts/setup.sh first" >&2; exit 2; }
CONFIG=${CONFIG:-config/cpu.yaml}
LOG=results/logs/campaign-cpu.log
PIDFILE=results/logs/campaign-cpu.pid
export DIRDP_DATA="${DIRDP_DATA:-$(cd .. && pwd)/shared/datasets}"
export CAMPAIGN_PRIORITY="${CAMPAIGN_PRIORITY:--5}"
mkdir -p results/logs

running() { [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }

stop() {
  if running; then
    pid=$(cat "$PIDFILE")
    kill -TERM "$pid"
    echo "campaign: asked runner $pid to stop; its runs are writing their checkpoints..."
    while kill -0 "$pid" 2>/dev/null; do sleep 1; done
  fi
  rm -f "$PIDFILE"
}

case "${1:-start}" in
  start)
    if running; then echo "campaign: already running (pid $(cat "$PIDFILE")); see: bash scripts/campaign.sh status"; exit 0; fi
    dirty=$(git status --porcelain --untracked-files=no -- . ':(exclude)results' ':(exclude)figures')
    if [ -n "$dirty" ] && [ "${ALLOW_DIRTY:-0}" != 1 ]; then
      echo "campaign: uncommitted code changes; commit them first so that results name their code (or ALLOW_DIRTY=1):" >&2
      echo "$dirty" >&2
      exit 2
    fi
    profile=$("$PY" -c "import yaml, sys; print(yaml.safe_load(open('$CONFIG'))['profile'])")
    "$PY" -m workflow.campaign.parked restore --profile "$profile" --root "$PWD" || exit 2   # checkpoints parked in history
    clean=--require-clean
    [ "${ALLOW_DIRTY:-0}" = 1 ] && clean=
    setsid nohup "$PY" -m workflow campaign run --config "$CONFIG" --k "${K:-2}" --budget 0 --no-tests --no-bench $clean \
      >> "$LOG" 2>&1 < /dev/null &
    echo $! > "$PIDFILE"
    echo "campaign: runner $(cat "$PIDFILE") started; log $LOG"
    sleep 3
    "$PY" -m workflow campaign status --config "$CONFIG" --workdir "$PWD"
    ;;
  status)
    running && echo "runner: pid $(cat "$PIDFILE")" || echo "runner: not running"
    "$PY" -m workflow campaign status --config "$CONFIG" --workdir "$PWD"
    ;;
  stop)
    stop
    "$PY" -m workflow campaign status --config "$CONFIG" --workdir "$PWD"
    ;;
  save|land)
    # save: stop the runs, commit the results and park the checkpoints of unfinished runs (once, when a session stops);
    # land: commit the results that have landed while the runs go on (no checkpoint)
    [ "$1" = save ] && stop
    profile=$("$PY" -c "import yaml, sys; print(yaml.safe_load(open('$CONFIG'))['profile'])")
    staged=$(git diff --cached --name-only -- . ":(exclude)results/runs/$profile" ":(exclude)results/campaign/$profile")
    [ -z "$staged" ] || { echo "campaign: files outside the campaign's results are staged; commit or unstage them first:" >&2; echo "$staged" >&2; exit 2; }
    # each finished run whose weights stay out of git (full width): its membership row, kept in a record beside it
    # (RUN.json.membership, committed below) for the audit of the released models (python -m workflow membership; a
    # record already made for the same weights, n, seed and code is kept; minutes a new full-width model)
    mapfile -t unkept < <(find "results/runs/$profile" -name '*.model.pt' | sort | while read -r w; do
      j="${w%.model.pt}.json"; if [ -f "$j" ] && git check-ignore -q "$w"; then echo "$j"; fi; done)
    if [ ${#unkept[@]} -gt 0 ]; then
      "$PY" -m workflow membership "${unkept[@]}" \
        || echo "campaign: not every membership record was made (above); the results are saved regardless" >&2
    fi
    "$PY" -m workflow.campaign.parked prune --profile "$profile" --root "$PWD"   # a run that landed leaves the ledger
    ledger="results/campaign/$profile/parked.json"
    paths=("results/runs/$profile")
    if [ "$1" = save ]; then
      [ -n "$(ls -A "results/campaign/$profile" 2>/dev/null)" ] && paths+=("results/campaign/$profile")  # runner records
    elif [ -e "$ledger" ] || git cat-file -e "HEAD:$ledger" 2>/dev/null; then
      paths+=("$ledger")
    fi
    git add -A -- "${paths[@]}"   # results, released models, runner records, the ledger
    [ "$1" = save ] && find "results/runs/$profile" -name '*.ckpt.pt' -print0 | xargs -0 -r git add -f --   # unfinished runs
    what="results and checkpoints"; [ "$1" = land ] && what="results"
    if git diff --cached --quiet -- "${paths[@]}"; then
      echo "campaign: nothing new to commit"
    else
      git commit -q -m "campaign ($profile): $what as of $(date -u +%Y-%m-%dT%H:%MZ)" -- "${paths[@]}"
      echo "campaign: committed $(git rev-parse --short HEAD)"
    fi
    if [ "$1" = save ]; then
      # park: the checkpoints just committed leave the tree in the next commit, and the ledger says where they are
      # (workflow.campaign.parked): history holds each once, no later tree carries it (nor a copy to a GPU node)
      listed=$("$PY" -m workflow.campaign.parked record --profile "$profile" --root "$PWD") || exit 2
      parked=(); [ -z "$listed" ] || mapfile -t parked <<< "$listed"
      [ ${#parked[@]} -eq 0 ] || git rm -q --cached -- "${parked[@]}"
      if [ -e "$ledger" ] || git cat-file -e "HEAD:$ledger" 2>/dev/null; then git add -A -- "$ledger"; fi
      if ! git diff --cached --quiet; then
        git commit -q -m "campaign ($profile): ${#parked[@]} checkpoint(s) of unfinished runs parked: out of the tree, in history at $(git rev-parse --short HEAD) ($ledger says where; start restores them)"
        echo "campaign: parked ${#parked[@]} checkpoint(s): committed $(git rev-parse --short HEAD)"
      fi
      "$PY" -c "import pathlib; from workflow.campaign.travel import over_size_cap as f; m = f(pathlib.Path.cwd()); m and print('campaign: warning: ' + m)" >&2
    fi
    "$PY" -m workflow campaign status --config "$CONFIG" --workdir "$PWD"
    ;;
  tables)
    shift
    [ $# -gt 0 ] || { echo "campaign: tables needs the run JSONs that landed, e.g. results/runs/cpu/mnist/alg1_eps1_seed2.json" >&2; exit 2; }
    for run in "$@"; do
      git cat-file -e "HEAD:$run" 2>/dev/null || {
        echo "campaign: $run is not in HEAD: commit it first (bash scripts/campaign.sh save) so the checkout has it" >&2; exit 2; }
    done
    dirty=$(git status --porcelain --untracked-files=no -- . ':(exclude)results' ':(exclude)figures')
    [ -z "$dirty" ] || { echo "campaign: note: these uncommitted changes are not used (the tables are made by HEAD's code):" >&2; echo "$dirty" >&2; }
    repo=$(pwd) head=$(git rev-parse HEAD) tmp=$(mktemp -d)
    wt="$tmp/checkout"
    git worktree add -q --detach "$wt" HEAD
    trap 'git -C "$repo" worktree remove --force "$wt"; rm -rf "$tmp"' EXIT
    # the rules whose jobs read those runs, asked of Snakemake in the checkout (a dry run lists each job's inputs;
    # train=false: the runs are inputs, no train job); forced, Snakemake reruns them and everything downstream of them
    # (the index after a table), nothing else
    found=$(cd "$wt" && PYTHONPATH="$wt" "$repo/$PY" -m workflow.campaign.rebuild --configfile "$CONFIG" "$@") || exit 2
    mapfile -t rules <<< "$found"
    [ -n "$found" ] || { echo "campaign: no job reads these runs: nothing to rebuild"; exit 0; }
    echo "campaign: forcing the rules that read these runs (and so what is downstream of them): ${rules[*]}"
    args=(--cores 1 --configfile "$CONFIG" --config train=false --forcerun "${rules[@]}")
    [ "${DRY:-0}" = 1 ] && args+=(-n -q rules)
    (cd "$wt" && PYTHONPATH="$wt" "$repo/$PY" -m snakemake "${args[@]}")
    [ "${DRY:-0}" = 1 ] && exit 0
    # what the checkout's jobs wrote (NUL-separated "XY path" entries: any file name survives)
    mapfile -d '' -t entries < <(git -C "$wt" status --porcelain -z --untracked-files=all -- results figures)
    changed=()
    for e in "${entries[@]}"; do changed+=("${e:3}"); done
    for f in "${changed[@]}"; do mkdir -p "$(dirname "$f")"; cp "$wt/$f" "$f"; done
    profile=$("$PY" -c "import yaml; print(yaml.safe_load(open('$CONFIG'))['profile'])")
    "$PY" -m workflow readme --profile "$profile"
    git add -- "${changed[@]}" README.md docs
    git commit -q -m "results ($profile): tables, figures and index downstream of $(echo "$@" | sed "s#results/runs/$profile/##g") (clean checkout of ${head:0:8}); README and docs blocks regenerated"
    echo "campaign: committed $(git rev-parse --short HEAD): ${#changed[@]} files"
    ;;
  *)
    echo "usage: bash scripts/campaign.sh [start|status|stop|save|land|tables RUN.json...]" >&2
    exit 2
    ;;
esac
