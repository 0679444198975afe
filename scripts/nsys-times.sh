#!/bin/sh
# Whole-process time and peak memory of `trainprof analyze` on Nsight Systems exports: the best
# of five runs per file (wall seconds, peak RSS in MB). docs/performance.md quotes it.
#
#   scripts/nsys-times.sh build/release/src/cli/trainprof ../shared/data/nsys/*.sqlite
set -eu
cli=$1
shift
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for f in "$@"; do
  best=""
  for _ in 1 2 3 4 5; do
    /usr/bin/time -o "$out/time" -f "%e %M" "$cli" analyze "$f" -o "$out" --db off >/dev/null 2>&1
    r=$(tail -n 1 "$out/time")
    best=$(printf '%s\n%s\n' "$best" "$r" | sed '/^$/d' | sort -n | head -n 1)
  done
  echo "$best" | awk -v f="$f" '{ printf "%-60s %6.2f s %7.0f MB\n", f, $1, $2 / 1024 }'
done
