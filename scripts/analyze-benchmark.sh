#!/usr/bin/env bash
# Times `trainprof analyze` as a whole process (start, gunzip, parse, analyses, report files) on
# the shared traces and on synthetic inputs made here (never committed): a 54 MB JSON V100 trace
# (trace_diff_test's events twice, the copy shifted past the end) and 8 ranks of it (430 MB).
# Prints wall seconds, peak RSS and JSON throughput per input; docs/performance.md holds the
# figures and HTA 0.6.1's on the same inputs.
#   scripts/analyze-benchmark.sh [BUILD_DIR] [REPEATS]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build/release}
REPEATS=${2:-3}
BIN="$BUILD/src/cli/trainprof"
TRACES=../shared/data/traces
WORK=${TMPDIR:-/tmp}/trainprof-analyze-bench
mkdir -p "$WORK"

if [ ! -f "$WORK/v100_54mb/rank0.json" ]; then
  echo "making the synthetic inputs in $WORK ..."
  mkdir -p "$WORK/v100_54mb" "$WORK/v100_8ranks"
  python3 - "$TRACES/trace_diff_test/test.json.gz" "$WORK" <<'PY'
import gzip, json, sys
src, work = sys.argv[1], sys.argv[2]
d = json.load(gzip.open(src))
ev = d["traceEvents"]
t0 = min(e["ts"] for e in ev if "ts" in e)
t1 = max(e["ts"] + e.get("dur", 0) for e in ev if "ts" in e)
shift = t1 - t0 + 1000
copy = []
for e in ev:
    e2 = dict(e)
    if "ts" in e2:
        e2["ts"] = e2["ts"] + shift
    for k in ("correlation", "External id"):
        if isinstance(e2.get("args"), dict) and k in e2["args"]:
            e2["args"] = dict(e2["args"]); e2["args"][k] += 10**8
    if "id" in e2 and isinstance(e2["id"], int):
        e2["id"] += 10**8
    if e2.get("name", "").startswith("ProfilerStep#"):
        e2["name"] = "ProfilerStep#%d" % (int(e2["name"].split("#")[1]) + 1000)
    copy.append(e2)
d["traceEvents"] = ev + copy
for r in range(8):
    d["distributedInfo"] = {"backend": "nccl", "rank": r, "world_size": 8}
    text = json.dumps(d)
    if r == 0:
        open(f"{work}/v100_54mb/rank0.json", "w").write(text)
    open(f"{work}/v100_8ranks/rank{r}.json", "w").write(text)
PY
fi

# Wall seconds and peak RSS (KiB) of one run, from GNU time's -f or a Python wrapper.
measure() {
  python3 - "$@" <<'PY'
import resource, subprocess, sys, time
t = time.perf_counter()
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)
wall = time.perf_counter() - t
print(f"{wall:.3f} {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}")
PY
}

printf "%-38s %10s %10s %12s %10s\n" input "JSON MB" "wall s" "peak RSS MB" "MB/s"
for input in "$TRACES/trace_diff_control" "$TRACES/trace_diff_test" \
             "$TRACES/negative_queue_length_values_check" "$WORK/v100_54mb" "$WORK/v100_8ranks"; do
  best=""; rss=0
  for _ in $(seq "$REPEATS"); do
    read -r wall kib < <(measure "$BIN" analyze "$input" --progress off --run-dir "$WORK/out" --overwrite --db off)
    if [ -z "$best" ] || python3 -c "import sys; sys.exit(0 if $wall < $best else 1)"; then best=$wall; fi
    rss=$kib
  done
  mb=$(python3 -c "import json; print(round(json.load(open('$WORK/out/report.json'))['meta']['json_bytes']/1e6, 1))")
  printf "%-38s %10s %10s %12s %10s\n" "$(basename "$input")" "$mb" "$best" \
    "$(( rss / 1024 ))" "$(python3 -c "print(round($mb / $best))")"
done
