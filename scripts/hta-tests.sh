#!/usr/bin/env bash
# Runs Holistic Trace Analysis' own TraceAnalysis tests (test_trace_analysis.py,
# test_critical_path_analysis.py, test_cupti_profiler.py) against trainprof's drop-in
# trainprof.hta.TraceAnalysis, and prints one row per test: passed, failed or skipped, and why.
# Tests that read HTA's internals are skipped (scripts/hta_tests/conftest_swap.py lists them).
# --real runs the same tests against HTA itself, for comparison. Issue 55.
#
# Not in CI: HTA's source is not a dependency of trainprof. It needs a built trainprof
# (build/release/python) and HTA's Python dependencies from Debian:
#   apt-get install python3-pandas python3-numpy python3-pytest python3-plotly \
#     python3-networkx python3-ijson python3-psutil python3-yaml
#
# Usage: scripts/hta-tests.sh [--real] [HTA_SRC]
#   HTA_SRC: an HTA source tree, or a bare git clone of it (then HTA_REF, default v0.6.1, is
#   extracted to /tmp/hta-src-$HTA_REF, leaving out blobs the clone lacks). Default: the
#   fetch tool's mirror, /work/.mirror/facebookresearch+HolisticTraceAnalysis/repo.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
real=0; [[ ${1:-} == --real ]] && { real=1; shift; }
src=${1:-/work/.mirror/facebookresearch+HolisticTraceAnalysis/repo}
py=${PYTHON:-/usr/bin/python3}

if [[ ! -d $src/hta && -f $src/HEAD ]]; then           # a bare git clone: extract HTA_REF
  ref=${HTA_REF:-v0.6.1}; tree=/tmp/hta-src-$ref
  if [[ ! -d $tree/hta ]]; then
    mkdir -p "$tree"
    git --git-dir="$src" ls-tree -r "$ref" | while read -r _ type sha path; do
      [[ $type == blob ]] || continue
      mkdir -p "$tree/$(dirname "$path")"
      git --git-dir="$src" cat-file blob "$sha" >"$tree/$path" 2>/dev/null \
        || { rm -f "$tree/$path"; echo "not in the clone: $path" >&2; }
    done
  fi
  src=$tree
fi

export PYTHONPATH="$root/build/release/python:$src:$root/scripts/hta_tests${PYTHONPATH:+:$PYTHONPATH}"
export HTA_TESTS_REAL=$real HTA_TESTS_TSV
out=$(mktemp -d); HTA_TESTS_TSV=$out/results.tsv
cd "$src"
# One pytest per file: in real HTA, test_critical_path_basic_add fails (KeyError) when it runs
# after test_trace_analysis.py in the same process.
for f in test_trace_analysis test_critical_path_analysis test_cupti_profiler; do
  "$py" -m pytest -p no:cacheprovider -p conftest_swap -q "tests/$f.py" >"$out/$f.log" 2>&1 || true
  tail -n 1 "$out/$f.log"
done
# The tests whose traces this copy lacks, on traces that are here, against HTA's own answer.
"$py" -m pytest -p no:cacheprovider -p conftest_swap -q --rootdir "$src" \
  "$root/scripts/hta_tests/test_on_present_traces.py" >"$out/present.log" 2>&1 || true
tail -n 1 "$out/present.log"
echo "== $( ((real)) && echo 'real HTA' || echo 'trainprof.hta') (logs: $out)"
sed 's/^tests\/test_//; s/\.py::[A-Za-z]*::/::/' "$HTA_TESTS_TSV" | sort -t$'\t' -k2,2 -k1,1 \
  | awk -F'\t' '{printf "%-8s %-62s %s\n", $2, $1, $3}'
cut -f2 "$HTA_TESTS_TSV" | sort | uniq -c
# One count: each of HTA's tests, those whose traces are missing here by their stand-in.
((real)) || "$py" - "$HTA_TESTS_TSV" <<'PY'
import sys
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1])]
stand_in = lambda nodeid: nodeid.startswith("::") or "test_on_present_traces" in nodeid
present = {r[0].rsplit("::", 1)[1]: r[1] for r in rows if stand_in(r[0])}
counted = {}
for nodeid, outcome, *_ in rows:
    if stand_in(nodeid) or outcome == "skipped":
        continue
    name = nodeid.rsplit("::", 1)[1]
    counted[nodeid] = present.get(name, outcome) if name in present else outcome
passed = sum(o == "passed" for o in counted.values())
print(f"== HTA's tests (a missing trace's test by its stand-in): {passed} of {len(counted)} pass")
PY
