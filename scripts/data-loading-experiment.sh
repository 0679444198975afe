#!/usr/bin/env bash
# The PyTorch profiler tutorial's data-loading experiment with the built-in job: one PNG file
# per sample with the loop loading (0 workers), then with 2 loader workers, then one packed
# file; and the same job on 1 and 2 ranks. Prints step time, data-wait share and throughput of
# each run (docs/data-loading.md shows a run on a 2-core machine).
#   scripts/data-loading-experiment.sh [BUILD_DIR] [BATCHES]
set -euo pipefail
cd "$(dirname "$0")/.."
T=${1:-build/release}/src/cli/trainprof
BATCHES=${2:-300}
WORK=$(mktemp -d /tmp/trainprof-data-XXXXXX)
trap 'rm -rf "$WORK"' EXIT

"$T" dataset export-png -o "$WORK/png" --progress off > /dev/null
"$T" dataset export-packed -o "$WORK/packed" --progress off > /dev/null
sync  # the export's 280 MB of dirty pages would otherwise be flushed during the runs

run() {  # label, extra flags...
  local label=$1; shift
  local dir="$WORK/runs/$label"
  mkdir -p "$WORK/runs"
  "$T" profile -q --run-dir "$dir" --epochs 1 --limit-train-batches "$BATCHES" \
    --set memory.enabled=false --set model_summary.enabled=false "$@" > "$dir.out" 2>&1
  local s="$dir/summary.txt"
  [ -f "$dir/rank0/summary.txt" ] && s="$dir/rank0/summary.txt"
  printf '%-26s' "$label"
  grep -E '^  training  ' "$s" | awk '{printf "  step mean %s %s  median %s %s", $4, $5, $6, $7}'
  grep -E 'Training time waiting for data' "$s" | awk '{printf "  data wait %s %%", $(NF-4)}'
  if [ -f "$dir/report.json" ] && grep -q 'Training throughput, all ranks' "$dir/summary.txt" 2>/dev/null; then
    grep -E 'Training throughput, all ranks' "$dir/summary.txt" | awk '{printf "  %s samples/s (all ranks)", $(NF-1)}'
  else
    grep -E 'Training throughput per sample' "$s" | awk '{printf "  %s samples/s", $(NF-1)}'
  fi
  echo
}

run png_dir-0-workers --set data.format=png_dir --set data.dir="$WORK/png" --set data.num_workers=0
run png_dir-2-workers --set data.format=png_dir --set data.dir="$WORK/png" --set data.num_workers=2
run packed-0-workers --set data.format=packed --set data.dir="$WORK/packed" --set data.num_workers=0
run idx-1-rank --set data.format=idx
run idx-2-ranks --set data.format=idx --nproc-per-node 2
