#!/bin/bash
# Runs AMD's TraceLens on the shared modern traces and keeps, in tests/data/tracelens/, the few
# figures the conformance test (src/analysis/tracelens_golden_test.cc) checks ours against:
# per trace, the GPU time per operator category and the GEMMs per shape.
#
#   scripts/tracelens-oracle.sh TRACELENS_SOURCE_DIR [OUT_DIR]
#
# TraceLens runs from its source with Debian's python3-pandas, -openpyxl, -tabulate and -yaml
# (no pip). The files in tests/data/tracelens came from TraceLens commit 171dd747. TraceLens
# ships no H100 peak table; the roofline columns are not kept, only FLOPs and kernel time.
set -euo pipefail
src=${1:?usage: scripts/tracelens-oracle.sh TRACELENS_SOURCE_DIR [OUT_DIR]}
out=${2:-/tmp/tracelens-oracle}
here=$(cd "$(dirname "$0")/.." && pwd)
traces=$here/../shared/data/traces/modern
mkdir -p "$out" "$here/tests/data/tracelens"
for dev in h100 mi300; do
  for f in "$traces/$dev"/*.json.gz; do
    name=${dev}_$(basename "$f" | cut -d_ -f1 | tr 'A-Z' 'a-z')
    (cd "$src" && python3 -m TraceLens.Reporting.generate_perf_report_pytorch \
      --profile_json_path "$f" --output_csvs_dir "$out/$name" >"$out/$name.log" 2>&1)
    python3 - "$out/$name" "$here/tests/data/tracelens/$name" <<'PY'
import csv, sys
src, dst = sys.argv[1], sys.argv[2]
with open(src + "/ops_summary_by_category.csv") as i, open(dst + ".categories.csv", "w") as o:
    w = csv.writer(o, lineterminator="\n")
    w.writerow(["category", "direct_kernel_ms", "pct"])
    for r in csv.DictReader(i):
        w.writerow([r["op category"], r["total_direct_kernel_time_ms"], r["Percentage (%)"]])
with open(src + "/GEMM.csv") as i, open(dst + ".gemm.csv", "w") as o:
    w = csv.writer(o, lineterminator="\n")
    w.writerow(["op", "input_dims", "calls", "gflops_per_call", "kernel_us_sum"])
    for r in csv.DictReader(i):
        w.writerow([r["name"], r["Input Dims_first"], r["name_count"], r["GFLOPS_first"],
                    r["Kernel Time (µs)_sum"]])
PY
  done
done
ls -l "$here/tests/data/tracelens"
