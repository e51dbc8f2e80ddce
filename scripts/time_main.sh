#!/usr/bin/env bash
# Time one of the README's two commands as a new user meets it, and record the measurement in results/timings.csv
# (the README's "timings" block is rendered from that file: python -m workflow readme).
#   bash scripts/time_main.sh main [PROFILE]   # bash scripts/main.sh (PROFILE: quick by default on a CPU machine)
#   bash scripts/time_main.sh test             # bash scripts/test.sh
#   bash scripts/time_main.sh ci               # bash .ci/run (CI: Debian packages if missing, then scripts/test.sh)
# It clones HEAD into a temporary folder beside ../shared (the offline data), so the command sets up its own .venv
# and runs from nothing, as on a fresh machine; the wall time covers all of it. The row names the processor, the
# commit, the 1-minute load average before and after (other work on the machine slows the command: run it quiet)
# and replaces its own earlier row of the same command and profile (or one not measured yet), then rewrites the
# README's timings block from it (python -m workflow readme), so that the two are committed together. The clone is
# removed afterwards; its log stays in results/logs/timings/ (the tests' with each file's seconds beside it).
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-}
case "$what" in
  main) profile=${2:-quick}; script=scripts/main.sh; cmd="bash scripts/main.sh"
        [ "$profile" = quick ] || cmd="PROFILE=$profile bash scripts/main.sh"
        desc="the whole DAG of the $profile profile, from a fresh clone (setting up .venv included)" ;;
  test) profile=""; script=scripts/test.sh; cmd="bash scripts/test.sh"
        desc="set up .venv, both test tiers and every notebook under nbval (fresh clone)" ;;
  ci) profile=""; script=.ci/run; cmd="bash .ci/run"
      desc="CI: the Debian packages some tests need if missing, then scripts/test.sh (fresh clone)" ;;
  *) echo "time_main: say what to time: main [PROFILE], test or ci" >&2; exit 2 ;;
esac
[ -d ../shared ] || { echo "time_main: ../shared (the offline data) not found beside this checkout" >&2; exit 2; }
[ -z "$(git status --porcelain --untracked-files=no -- dirdp scripts rules config notebooks Snakefile)" ] || {
  echo "time_main: commit the code first (the clone times HEAD, not your working tree)" >&2; exit 2; }
repo=$(pwd) commit=$(git rev-parse --short HEAD)
tmp=$(mktemp -d "$(cd .. && pwd)/.timing.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
git clone -q "$repo" "$tmp/main"
ln -s "$(cd ../shared && pwd)" "$tmp/shared"
mkdir -p results/logs/timings
log="results/logs/timings/${what}${profile:+-$profile}.log"
load_before=$(cut -d' ' -f1 /proc/loadavg)
start=$(date +%s)
rc=0
(cd "$tmp/main" && env -u VIRTUAL_ENV ${profile:+PROFILE=$profile} bash "$script") >"$log" 2>&1 || rc=$?
wall=$(( $(date +%s) - start ))
load_after=$(cut -d' ' -f1 /proc/loadavg)
# the suite's seconds per test file (tests/conftest.py writes them; its FIRST order follows them), beside the log
durations="$tmp/main/tests/artifacts/durations.csv"
[ ! -f "$durations" ] || cp "$durations" "${log%.log}-durations.csv"
[ "$rc" = 0 ] || { echo "time_main: '$cmd' failed (exit $rc) after ${wall} s; nothing recorded; see $log" >&2; exit 1; }
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
bf16=$(grep -c avx512_bf16 /proc/cpuinfo || true)
cpu="$cpu ($(nproc) cores$([ "$bf16" -gt 0 ] && echo ', avx512_bf16'))"
python3 - "$cmd" "$profile" "$desc" "$wall" "$cpu" "$(date -u +%Y-%m-%d)" \
  "scripts/time_main.sh $what${profile:+ $profile} at $commit; 1-min load $load_before before, $load_after after" <<'EOF'
import csv, sys
cmd, profile, what, wall, cpu, day, source = sys.argv[1:]
path = "results/timings.csv"
rows = list(csv.DictReader(open(path)))
new = dict(command=cmd, profile=profile, what=what, wall_s=wall, processor=cpu, measured_utc=day, source=source)
# this script's own earlier row of the command (rows from other sources, e.g. the CI service's, stay)
same = [i for i, r in enumerate(rows) if r["command"] == cmd and r["profile"] == profile
        and (r["source"].startswith("scripts/time_main.sh") or not r["wall_s"])]
if same:
    rows[same[0]] = new
else:
    rows.append(new)
with open(path, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(new), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
print(f"time_main: {cmd} ({profile or 'tests'}): {wall} s on {cpu}; results/timings.csv updated")
EOF
if [ -x .venv/bin/python ]; then
  .venv/bin/python -m workflow readme >/dev/null && echo "time_main: README's timings block rewritten from it; commit both"
else
  echo "time_main: no .venv here: run python -m workflow readme before committing results/timings.csv" >&2
fi
