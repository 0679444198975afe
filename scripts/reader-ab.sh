#!/usr/bin/env bash
# Times `trainprof analyze` (whole process) of two builds on the same inputs, interleaved, and
# prints the median wall time, JSON rate and peak RSS of each; then checks that both wrote the
# same report.json (without its "meta" member). docs/perf-log/reader-and-analyze.md (issue 39) holds the figures.
#   scripts/reader-ab.sh BASE_BIN NEW_BIN REPEATS INPUT...
set -euo pipefail
BASE=$1 NEW=$2 N=$3
shift 3
OUT=${TMPDIR:-/tmp}/trainprof-reader-ab
mkdir -p "$OUT"
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
for input in "$@"; do
  bytes=$(if [[ $input == *.gz ]]; then zcat "$input" | wc -c; else stat -c %s "$input"; fi)
  for which in base new; do : >"$OUT/$which.times"; done
  for ((i = 0; i < N; i++)); do
    for which in base new; do
      bin=$BASE; [ $which = new ] && bin=$NEW
      /usr/bin/time -f "%e %M" -o "$OUT/t" "$bin" analyze "$input" --run-dir "$OUT/$which" \
        --overwrite --db off --progress off >/dev/null 2>&1 || true
      cat "$OUT/t" >>"$OUT/$which.times"
    done
  done
  for which in base new; do
    wall=$(cut -d' ' -f1 "$OUT/$which.times" | median)
    rss=$(cut -d' ' -f2 "$OUT/$which.times" | median)
    walls=$(cut -d' ' -f1 "$OUT/$which.times" | tr '\n' ' ')
    printf '%-40s %-4s median %6.3f s (%s) %7.0f MB/s  RSS %4.0f MB\n' "$(basename "$input")" \
      $which "$wall" "$walls" "$(echo "$bytes / $wall / 1000000" | bc -l)" "$(echo "$rss / 1024" | bc -l)"
  done
  same=$(/usr/bin/python3 - "$OUT/base/report.json" "$OUT/new/report.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for d in (a, b):
    d.pop("meta", None)
print("same report.json" if a == b else "REPORT.JSON DIFFERS")
PY
)
  echo "  $same"
done
