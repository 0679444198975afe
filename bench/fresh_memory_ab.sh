#!/usr/bin/env bash
# trainprof analyze as a user runs it: once, right after another process (HTA, a notebook's
# kernel) freed its memory. On a VM the pages that process gave back cost far more to touch again
# than warm ones (the kernel clears each page the hypervisor hands back), and back-to-back runs
# (`perf stat -r`) do not see it. Each round runs every binary once, in a random order, each right
# after a process that touched and freed 220 MB; medians and quartiles of the wall times.
# docs/perf-log/reader-and-analyze.md (2026-12-06, night) holds figures.
#   bench/fresh_memory_ab.sh ROUNDS TRACE "TRAINPROF_BIN..."
set -euo pipefail
N=$1 TRACE=$2
read -r -a BINS <<<"$3"
OUT=${TMPDIR:-/tmp}/trainprof-fresh-memory
mkdir -p "$OUT"
: >"$OUT/times"
for ((r = 0; r < N; r++)); do
  for k in $(seq 0 $((${#BINS[@]} - 1)) | shuf); do
    /usr/bin/python3 -c "b = bytearray(220 << 20); b[::4096] = b'\1' * len(b[::4096])"
    t0=$(date +%s%N)
    "${BINS[$k]}" analyze "$TRACE" --run-dir "$OUT/run" --overwrite --db off --progress off \
      >/dev/null 2>&1
    t1=$(date +%s%N)
    echo "$k $(((t1 - t0) / 1000))" >>"$OUT/times"
  done
done
for k in "${!BINS[@]}"; do
  grep "^$k " "$OUT/times" | cut -d' ' -f2 | sort -n | awk -v bin="${BINS[$k]}" '
    { a[NR] = $1 / 1000 }
    END {
      m = NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
      printf "%-40s median %.1f ms (quartiles %.1f-%.1f, %d runs)\n", bin, m, a[int(NR / 4) + 1], a[int(3 * NR / 4)], NR
    }'
done
