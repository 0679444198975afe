#!/usr/bin/env bash
# Issue 8's performance figures, whole commands on this machine:
#   1. report.html of the largest shared trace's analysis (trace_diff_control): its size, and the
#      time headless Chromium takes to open it, against an empty page (Chromium's own start);
#   2. `trainprof runs list` over 10 000 stored runs (the database bench/report_bench.cc makes).
# The in-process figures (writing the page, listing) are Google Benchmarks:
#   ./build/release/bench/trainprof_bench --benchmark_filter='Html|History'
# Usage: scripts/report-benchmark.sh [BUILD_DIR] [REPEATS]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build/release}
REPEATS=${2:-5}
T="$BUILD/src/cli/trainprof"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

now() { date +%s.%N; }
best() {  # best of REPEATS wall-clock seconds of "$@"
  local best=999
  for _ in $(seq "$REPEATS"); do
    local a b
    a=$(now); "$@" >/dev/null 2>&1; b=$(now)
    best=$(awk -v a="$a" -v b="$b" -v x="$best" 'BEGIN { d = b - a; print (d < x) ? d : x }')
  done
  printf '%.3f' "$best"
}

TRAINPROF_DB=off "$T" analyze ../shared/data/traces/trace_diff_control --run-dir "$WORK/run" >/dev/null
echo '<!doctype html><html><body></body></html>' > "$WORK/empty.html"
SIZE=$(stat -c %s "$WORK/run/report.html")
CHROME=(chromium --headless --no-sandbox --disable-gpu --user-data-dir="$WORK/profile" --dump-dom)
OPEN=$(best "${CHROME[@]}" "file://$WORK/run/report.html")
EMPTY=$(best "${CHROME[@]}" "file://$WORK/empty.html")
echo "report.html of trace_diff_control: $SIZE bytes"
echo "chromium --headless --dump-dom: report.html ${OPEN} s, empty page ${EMPTY} s (best of $REPEATS)"

TRAINPROF_BENCH_KEEP_DB="$WORK/runs.db" "$BUILD/bench/trainprof_bench" \
  --benchmark_filter='History_RunsList/20' --benchmark_min_time=0.01 >/dev/null
LIST=$(best "$T" runs list --db "$WORK/runs.db")
LIST_ALL=$(best "$T" runs list --db "$WORK/runs.db" --last 0)
HELP=$(best "$T" --version)
echo "trainprof runs list over 10000 runs: ${LIST} s (--last 0, all rows: ${LIST_ALL} s; trainprof --version: ${HELP} s)"
