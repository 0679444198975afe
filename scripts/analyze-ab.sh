#!/bin/bash
# Usage: [AB_ARGS="--threads 1"] scripts/analyze-ab.sh BASE_BINARY NEW_BINARY TRACE [RUNS]
# Times `trainprof analyze TRACE` of two builds, interleaved so that the machine's load falls on
# both alike (docs/perf-log/analyze-views.md: the cost of analyze's views).
# Alternates two trainprof binaries N times on one trace (fresh run folder each time); prints, per binary,
# the median and minimum of wall time and of CPU time (task-clock), in ms.
set -euo pipefail
base=$1; new=$2; trace=$3; n=${4:-15}
out=$(mktemp -d)
for i in $(seq $n); do
  for b in base new; do
    s=$(date +%s%N)
    perf stat -x, -e task-clock -o $out/t ${!b} analyze "$trace" ${AB_ARGS:-} --run-dir $out/$b$i --db off > /dev/null 2>&1
    e=$(date +%s%N)
    echo "$b $(( (e - s) / 1000 )) $(grep task-clock $out/t | cut -d, -f1)"
  done
done | python3 -c '
import sys, statistics as st
d = {}
for l in sys.stdin:
    b, e, c = l.split(); d.setdefault(b, []).append((float(e) / 1000, float(c)))
for b in ("base", "new"):
    w = [x[0] for x in d[b]]; c = [x[1] for x in d[b]]
    print(f"{b}: wall median {st.median(w):.0f} min {min(w):.0f}; cpu median {st.median(c):.0f} min {min(c):.0f} (n={len(w)})")
m = lambda b, k: st.median([x[k] for x in d[b]])
print("ratio new/base: wall median %.3f, cpu median %.3f" % (m("new", 0) / m("base", 0), m("new", 1) / m("base", 1)))
'
rm -rf $out
