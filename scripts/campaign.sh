#!/usr/bin/env bash
# The CPU evidence campaign (config/cpu.yaml, `campaign: queue:`): its runs in the background, one thread
# each, K = 2 at a time by default, logs in results/logs/runs/cpu/ and results/logs/campaign-cpu.log.
#   bash scripts/campaign.sh start    # start, or resume from the committed checkpoints (the default)
#   bash scripts/campaign.sh status   # where each run stands (finished + accuracy, checkpoint step, queued)
#   bash scripts/campaign.sh stop     # every run writes its checkpoint now and stops
#   bash scripts/campaign.sh save     # stop, then commit finished results and the checkpoints of unfinished
#                                     # runs (git add -f: they are ignored otherwise), so the next start resumes
# Work on these machines can stop at any time: `save` before it does. Runs start only from a clean tree
# (their provenance names the commit): `start` refuses uncommitted code changes (ALLOW_DIRTY=1 overrides), and
# the runner holds each next start back while there are some. K=1 bash scripts/campaign.sh start for one.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
[ -x "$PY" ] || { echo "campaign: no .venv: run bash scripts/setup.sh first" >&2; exit 2; }
CONFIG=${CONFIG:-config/cpu.yaml}
LOG=results/logs/campaign-cpu.log
PIDFILE=results/logs/campaign-cpu.pid
export DIRDP_DATA="${DIRDP_DATA:-$(cd .. && pwd)/shared/datasets}"
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
    clean=--require-clean
    [ "${ALLOW_DIRTY:-0}" = 1 ] && clean=
    setsid nohup "$PY" -m dirdp campaign run --config "$CONFIG" --k "${K:-2}" --budget 0 --no-tests --no-bench $clean \
      >> "$LOG" 2>&1 < /dev/null &
    echo $! > "$PIDFILE"
    echo "campaign: runner $(cat "$PIDFILE") started; log $LOG"
    sleep 3
    "$PY" -m dirdp campaign status --config "$CONFIG"
    ;;
  status)
    running && echo "runner: pid $(cat "$PIDFILE")" || echo "runner: not running"
    "$PY" -m dirdp campaign status --config "$CONFIG"
    ;;
  stop)
    stop
    "$PY" -m dirdp campaign status --config "$CONFIG"
    ;;
  save)
    stop
    profile=$("$PY" -c "import yaml, sys; print(yaml.safe_load(open('$CONFIG'))['profile'])")
    paths=("results/runs/$profile")
    [ -n "$(ls -A "results/campaign/$profile" 2>/dev/null)" ] && paths+=("results/campaign/$profile")  # runner records
    git add -A -- "${paths[@]}"   # results, released models, runner records, a finished run's deleted checkpoint
    find "results/runs/$profile" -name '*.ckpt.pt' -print0 | xargs -0 -r git add -f --   # unfinished runs
    if git diff --cached --quiet -- "${paths[@]}"; then
      echo "campaign: nothing new to commit"
    else
      git commit -q -m "campaign ($profile): results and checkpoints as of $(date -u +%Y-%m-%dT%H:%MZ)" -- "${paths[@]}"
      echo "campaign: committed $(git rev-parse --short HEAD)"
    fi
    "$PY" -m dirdp campaign status --config "$CONFIG"
    ;;
  *)
    echo "usage: bash scripts/campaign.sh [start|status|stop|save]" >&2
    exit 2
    ;;
esac
