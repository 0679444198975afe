#!/usr/bin/env bash
# `trainprof compare` with confidence intervals over two 10,000-step runs, whole process
# (docs/performance.md): two real profile runs of 10,200 training steps each (batch 16, three
# epochs of 3,400 batches), then the best and the median of REPEATS timed compares with a gate.
# Usage: scripts/compare-benchmark.sh [BUILD_DIR] [REPEATS] [RUN_A RUN_B]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build/release}
REPEATS=${2:-11}
T="$BUILD/src/cli/trainprof"
WORK=${WORK:-$(mktemp -d)}
A=${3:-$WORK/a}
B=${4:-$WORK/b}
export TRAINPROF_DB=off
for run in "$A" "$B"; do
  [ -f "$run/report.json" ] && continue
  "$T" profile -q --run-dir "$run" --set training.batch_size=16 --epochs 3 \
    --limit-train-batches 3400 --set training.limit_val_batches=2 --set memory.enabled=false \
    >/dev/null
done
steps=$(python3 -c "
import json, sys
r = json.load(open('$A/report.json'))
print(next(len(t['rows']) for s in r['sections'] for t in s['tables'] if t['id'] == 'training_rate'))")
echo "runs: $A, $B ($steps training steps each, report.json $(stat -c %s "$A/report.json") bytes)"
times=()
for _ in $(seq "$REPEATS"); do
  a=$(date +%s%N)
  "$T" compare "$A" "$B" --fail-if 'step_time > +3%' --fail-if 'training_throughput < -3%' \
    >/dev/null 2>&1 || true
  b=$(date +%s%N)
  times+=($(( (b - a) / 1000 )))
done
printf '%s\n' "${times[@]}" | sort -n | awk '{ t[NR] = $1 } END {
  printf "trainprof compare, whole process: best %.1f ms, median %.1f ms (%d runs)\n",
         t[1] / 1000, t[int((NR + 1) / 2)] / 1000, NR }'
"$T" compare "$A" "$B" --fail-if 'step_time > +3%' 2>&1 >/dev/null | grep 'median change' || true
