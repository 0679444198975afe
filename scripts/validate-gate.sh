#!/usr/bin/env bash
# Validates the noise-aware regression gate on this machine with real runs (docs/ci.md):
#   1. RUNS runs of one small config: `compare --fail-if 'step_time > +3%'` on every ordered pair
#      must not fire;
#   2. SLOW runs of the same config whose data loader spends DELAY ms (busy) per batch, for each
#      delay in DELAYS (a real slowdown of about 5 and 10 %): the gate must flag them against
#      each baseline run;
#   3. `--baseline last:5`, and `--repeat 3` runs, against unchanged and slow runs;
#   4. issue 41's check: in a history of its own, 5 identical runs, `compare latest~i latest~j
#      --fail-if 'step_time > +3%'` on the 10 pairs (at most 1 may fail), and a run with
#      training.batch_size 128 against each of them (all must be flagged).
# Each pair is gated twice: with --db off (no run history: the interval covers step noise only)
# and by id with the defaults (the history's runs of the baseline's config on this host and
# device give the run-to-run spread).
# (data.delay_ms changes the config hash, so --baseline last:K, which pools runs of the
# candidate's config, is checked on unchanged candidates.)
# Prints a Markdown table. Usage: scripts/validate-gate.sh [BUILD_DIR] [RUNS] [SLOW] [DELAYS]
# WORK=DIR keeps the runs there, and a second call reuses them (only the gating runs again).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build/release}
RUNS=${2:-10}
SLOW=${3:-3}
DELAYS=${4:-0.4 0.8}
T="$BUILD/src/cli/trainprof"
WORK=${WORK:-$(mktemp -d)}
mkdir -p "$WORK"
export TRAINPROF_DB="$WORK/history.db"
BOUND='step_time > +3%'
JOB=(profile -q --epochs 1 --limit-train-batches 300 --set training.limit_val_batches=2
     --set memory.enabled=false --set system.enabled=false --set model_summary.enabled=false)

run() {  # run NAME [extra args]: one profile run into $WORK/NAME (kept when WORK is reused)
  local name=$1
  shift
  [ -f "$WORK/$name/report.json" ] && return
  "$T" "${JOB[@]}" --run-dir "$WORK/$name" "$@" >/dev/null 2>"$WORK/$name.err"
}
# Interleaved (base, base, base, slow runs, base, ...), so that the load of whoever else uses
# the machine falls on both sides alike instead of on whichever ran during it.
for i in $(seq "$RUNS"); do
  run "base$i"
  k=$((i / 3))
  if [ $((i % 3)) = 0 ] && [ "$k" -le "$SLOW" ]; then
    for d in $DELAYS; do run "slow${d}_$k" --set "data.delay_ms=$d"; done
  fi
done
run same_repeat --repeat 3
for d in $DELAYS; do run "slow${d}_repeat" --repeat 3 --set "data.delay_ms=$d"; done

id_of() {  # the history id of run folder $1
  "$T" runs list --last 0 --format json | python3 -c "
import json, os, sys
rows = json.load(sys.stdin)['sections'][0]['tables'][0]['rows']
print(next(r['id'] for r in rows if r['run_dir'] == os.path.abspath('$1')))"
}
# gate BASE CAND: prints the verdict word of the bound (beyond / within / inconclusive) and the
# median change with its interval.
gate() {  # gate BASE CAND [compare options]
  local out
  out=$("$T" compare --baseline "$1" "$2" --fail-if "$BOUND" "${@:3}" 2>&1 >/dev/null || true)
  python3 - "$out" <<'EOF'
import re, sys
line = next(l for l in sys.argv[1].splitlines() if 'median change' in l or 'inconclusive' in l)
m = re.search(r'median change ([-+][\d.]+) % \[([-+][\d.]+) %, ([-+][\d.]+) %\]', line)
verdict = line.rsplit(': ', 1)[1]
print(verdict.split()[0], m.group(1) if m else '', m.group(2) if m else '',
      m.group(3) if m else '')
EOF
}

summarise() {  # label, then lines "verdict change low high" on stdin
  python3 -c "
import sys
rows = [l.split() for l in sys.stdin if l.strip()]
n = len(rows)
beyond = sum(r[0] == 'beyond' for r in rows)
within = sum(r[0] == 'within' for r in rows)
inc = n - beyond - within
ch = sorted(float(r[1]) for r in rows if len(r) > 1)
w = sorted(float(r[3]) - float(r[2]) for r in rows if len(r) > 3)
med = lambda v: v[len(v) // 2] if v else float('nan')
print(f'| $1 | {n} | {beyond} | {within} | {inc} | {ch[0]:+.1f} to {ch[-1]:+.1f} % | {med(w):.1f} pp |')
"
}

declare -A id
for r in $(seq "$RUNS"); do id[base$r]=$(id_of "$WORK/base$r"); done
for d in $DELAYS; do
  for s in $(seq "$SLOW"); do id[slow${d}_$s]=$(id_of "$WORK/slow${d}_$s"); done
done

echo "| pairs | gated | beyond noise (fails) | within noise | inconclusive | median change | median CI width |"
echo "|---|---|---|---|---|---|---|"
for mode in steps history; do
  ref() { if [ $mode = steps ]; then echo "$WORK/$1"; else echo "${id[$1]}"; fi; }
  opts() { if [ $mode = steps ]; then echo --db=off; else echo --db="$TRAINPROF_DB"; fi; }
  for a in $(seq "$RUNS"); do
    for b in $(seq "$RUNS"); do
      [ "$a" = "$b" ] || gate "$(ref "base$a")" "$(ref "base$b")" "$(opts)"
    done
  done | summarise "no change: $RUNS runs, every ordered pair, $mode"
  for d in $DELAYS; do
    for a in $(seq "$RUNS"); do
      for s in $(seq "$SLOW"); do gate "$(ref "base$a")" "$(ref "slow${d}_$s")" "$(opts)"; done
    done | summarise "data.delay_ms=$d: each slow run against each baseline run, $mode"
  done
done
for c in $(seq 6 "$RUNS"); do gate last:5 "${id[base$c]}"; done \
  | summarise "--baseline last:5 (the newest 5 other runs of the config), unchanged candidates"
for b in 1 2 3; do gate "$WORK/same_repeat" "$WORK/base$b"; done \
  | summarise "--repeat 3 against an unchanged run"
for d in $DELAYS; do
  gate "$WORK/same_repeat" "$WORK/slow${d}_repeat" \
    | summarise "--repeat 3 against --repeat 3 with data.delay_ms=$d"
  for s in $(seq "$SLOW"); do gate "$WORK/same_repeat" "$WORK/slow${d}_$s"; done \
    | summarise "--repeat 3 against a run with data.delay_ms=$d"
done

# 4. Issue 41's check, in a history of its own: 5 identical runs, the 10 pairs, and batch 128.
ISSUE="$WORK/issue"
mkdir -p "$ISSUE"
export TRAINPROF_DB="$ISSUE/history.db"
for i in 1 2 3 4 5; do run "issue/same$i"; done
run issue/batch128 --set training.batch_size=128
for i in 4 3 2 1 0; do
  for j in $(seq 0 $((i - 1))); do gate "latest~$((i + 1))" "latest~$((j + 1))"; done
done | summarise "issue 41: 5 identical runs, compare latest~i latest~j (older as baseline), 10 pairs"
for i in 1 2 3 4 5; do gate "latest~$i" latest; done \
  | summarise "issue 41: training.batch_size 64 -> 128 against each of the 5 runs"
export TRAINPROF_DB="$WORK/history.db"
"$T" runs noise --bound 3%

echo
echo "median step of each run (ms), in the order made:"
"$T" runs list --last 0 --format json | python3 -c "
import json, os, sys
rows = json.load(sys.stdin)['sections'][0]['tables'][0]['rows']
print(' '.join(f\"{os.path.basename(r['run_dir'])}:{1000 * r['step_time_median']:.2f}\" for r in reversed(rows)))"
echo "runs in $WORK"
