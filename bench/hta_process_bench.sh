#!/usr/bin/env bash
# Whole process against whole process: `trainprof analyze DIR` (start, gunzip, parse, every
# view, all report files) against a Python process that imports Holistic Trace Analysis, loads
# the same folder and makes the five breakdown calls HTA users make (temporal, idle time, GPU
# kernels, comm/comp overlap, kernel launch stats; visualize off). HTA and each trainprof
# binary in turn (their order rotated each repeat), REPEATS times; medians of wall time
# (nanosecond clock) and of peak RSS (from /usr/bin/time), and HTA's time over each binary's.
# HTA's import (pandas, plotly) is part of its process, as trainprof's start is of ours.
# docs/perf-log/reader-and-analyze.md (issue 39) holds figures.
#   bench/hta_process_bench.sh HTA_PYTHONPATH REPEATS "TRAINPROF_BIN..." TRACE_DIR...
set -euo pipefail
HTA_PATH=$1 N=$2
read -r -a BINS <<<"$3"
shift 3
OUT=${TMPDIR:-/tmp}/trainprof-hta-process
mkdir -p "$OUT"
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
HTA_FIVE='
import logging, sys
from hta.trace_analysis import TraceAnalysis
logging.getLogger("hta").setLevel(logging.WARNING)
a = TraceAnalysis(trace_dir=sys.argv[1])
ranks = list(a.t.traces.keys())
a.get_temporal_breakdown(visualize=False)
a.get_idle_time_breakdown(ranks=ranks, visualize=False)
a.get_gpu_kernel_breakdown(visualize=False)
a.get_comm_comp_overlap(visualize=False)
a.get_cuda_kernel_launch_stats(ranks=ranks, visualize=False)
'
# Runs "$@" under /usr/bin/time; appends "wall_seconds peak_kb" to the file $1.
timed() {
  local to=$1
  shift
  local t0 t1
  t0=$(date +%s%N)
  /usr/bin/time -f "%M" -o "$OUT/rss" "$@" >/dev/null 2>&1 || true
  t1=$(date +%s%N)
  echo "$(echo "($t1 - $t0) / 1000000000" | bc -l) $(cat "$OUT/rss")" >>"$to"
}
for dir in "$@"; do
  : >"$OUT/hta.times"
  for k in "${!BINS[@]}"; do : >"$OUT/bin$k.times"; done
  for ((i = 0; i < N; i++)); do
    PYTHONPATH=$HTA_PATH timed "$OUT/hta.times" /usr/bin/python3 -c "$HTA_FIVE" "$dir"
    # The binaries in turn, starting one further each repeat: the first after HTA runs on the
    # memory HTA just freed, 10-25 % slower here than the next (docs/perf-log/reader-and-analyze.md).
    for j in "${!BINS[@]}"; do
      k=$(((i + j) % ${#BINS[@]}))
      timed "$OUT/bin$k.times" "${BINS[$k]}" analyze "$dir" --run-dir "$OUT/run" --overwrite \
        --db off --progress off
    done
  done
  hta=$(cut -d' ' -f1 "$OUT/hta.times" | median)
  printf '%s: HTA %.2f s, %.0f MB\n' "$(basename "$dir")" "$hta" \
    "$(echo "$(cut -d' ' -f2 "$OUT/hta.times" | median) / 1024" | bc -l)"
  for k in "${!BINS[@]}"; do
    ours=$(cut -d' ' -f1 "$OUT/bin$k.times" | median)
    printf '  %-40s %.3f s (%s) %4.0f MB  HTA / this: %5.1fx\n' "${BINS[$k]}" "$ours" \
      "$(cut -d' ' -f1 "$OUT/bin$k.times" | xargs printf '%.3f ')" \
      "$(echo "$(cut -d' ' -f2 "$OUT/bin$k.times" | median) / 1024" | bc -l)" \
      "$(echo "$hta / $ours" | bc -l)"
  done
done
