#!/usr/bin/env bash
# Issue 59's checks on the GPU machine, in one device call (run scripts/gpu/prepare.sh here first):
#   run(command="scripts/gpu/check.sh", carry=[".gpu"], timeout_s=600)
# Builds trainprof against torch's CUDA LibTorch, with the Debian packages from .gpu/debs
# unpacked into /tmp/prefix, then runs each check under its own time limit, most important
# first. Everything printed goes to $OUT/log.txt; the small files the checks made go to
# $OUT/gpu-results.tar.gz. A check that fails does not stop the ones after it.
# CHECKS="build cpp ..." runs a subset (all but snapshot need the build). Every check ends by
# DEADLINE seconds (default 560, inside the device's 600 s a call): one that would start later
# is skipped and named, to run in a second call while the machine is warm (the build is kept).
set -uo pipefail
SELF=$(readlink -f "$0")
cd "$(dirname "$SELF")/../.."
ROOT=$PWD
OUT=${OUT:-/tmp/gpu-out}
RES=/tmp/gpu-results
B=/tmp/trainprof-cuda
mkdir -p "$OUT" "$RES"
CHECKS=${CHECKS:-"env build cpp python snapshot overhead ranks nsys"}
T=$B/src/cli/trainprof
DATA=$ROOT/.gpu/fmnist
DEVICE=${DEVICE:-cuda}  # cpu: a rehearsal on a machine without a GPU
started=$(date +%s)
DEADLINE=${DEADLINE:-560}

say() { echo; echo "=== $* (t+$(($(date +%s) - started)) s)"; }
# check NAME SECONDS FUNCTION: runs the function (this script again, so `timeout` can end the
# whole process group) under a limit and says how it ended.
check() {
  local name=$1 limit=$2 fn=$3
  local left=$((DEADLINE - ($(date +%s) - started)))
  if [ "$left" -lt 30 ]; then
    echo "--- $name: skipped, $left s left before the deadline (run it with CHECKS=$name)"
    return 1
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  say "$name"
  timeout -k 10 "$limit" "$SELF" --one "$fn"
  local rc=$?
  echo "--- $name: exit $rc$([ $rc = 124 ] && echo ' (time limit)')"
  return $rc
}
wants() { [[ " $CHECKS " == *" $1 "* ]]; }
# The results in one archive (the device returns at most 8 files of 16 MiB): files under 4 MB,
# then, if that is over 15 MB, without the traces and pickles over 1 MB.
pack() {
  local a=$OUT/gpu-results.tar.gz
  (cd "$RES" && find . -type f -size -4M -print0 | tar --null -czf "$a" -T -)
  if [ "$(stat -c %s "$a")" -gt 15000000 ]; then
    (cd "$RES" && find . -type f -size -4M ! \( -size +1M \( -name '*.json' -o -name '*.pickle' \) \) \
      -print0 | tar --null -czf "$a" -T -)
  fi
  echo "results: $(du -h "$a" | cut -f1) in gpu-results.tar.gz"
}

env_info() {
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__,
"cuda", torch.version.cuda, "gpu", torch.cuda.get_device_name(0))'
  nvcc --version | tail -1
  cmake --version | head -1
  g++ --version | head -1
  echo "nsys: $(command -v nsys || echo 'not on PATH')"
}

build() {
  local prefix=/tmp/prefix
  for f in "$ROOT"/.gpu/debs/*.deb; do dpkg -x "$f" "$prefix"; done
  local torch_cmake site nccl cupti_args=() pybind_args=() nccl_args=() pybind
  pybind=$(python3 -m pybind11 --cmakedir 2>/dev/null) && pybind_args=(-Dpybind11_DIR="$pybind")
  torch_cmake=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
  site=$(python3 -c 'import torch, os; print(os.path.dirname(os.path.dirname(torch.__file__)))')
  nccl=$(find "$site/nvidia" -name nccl.h 2>/dev/null | head -1)
  [ -n "$nccl" ] && nccl_args=(-DNCCL_INCLUDE_DIR="$(dirname "$nccl")") || echo "nccl.h: not found"
  if [ -d "$site/torch/include/gloo" ]; then  # Debian's older copy must not shadow torch's
    rm -rf "$prefix/usr/include/gloo"
    echo "gloo headers: torch's"
  else
    echo "gloo headers: Debian's"
  fi
  if [ ! -e /usr/local/cuda/include/cupti.h ] && [ ! -e /usr/local/cuda/extras/CUPTI/include/cupti.h ]; then
    local h l
    h=$(find "$site/nvidia" -name cupti.h 2>/dev/null | head -1)
    l=$(find "$site/nvidia" -name 'libcupti.so*' 2>/dev/null | head -1)
    echo "CUPTI from the wheel: $h $l"
    [ -n "$h" ] && [ -n "$l" ] && cupti_args=(-DCUPTI_INCLUDE_DIR="$(dirname "$h")" -DCUPTI_LIBRARY="$l")
  fi
  cmake -S "$ROOT" -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$torch_cmake;$prefix/usr" -DTRAINPROF_WITH_TORCH=ON \
    -DTRAINPROF_WITH_MPI=OFF -DTRAINPROF_BUILD_BENCH=OFF \
    -DPython_EXECUTABLE="$(command -v python3)" "${pybind_args[@]}" \
    "${nccl_args[@]}" "${cupti_args[@]}" | grep -E "trainprof:|Error|error" || return 1
  # -k 0: a test that does not compile must not keep the commands from linking. The whole log
  # is kept; the first errors and the end are shown.
  ninja -C "$B" -k 0 trainprof_cli trainprof_profile_cli trainprof_torch_test \
    trainprof_jobs_test >"$RES/build.log" 2>&1
  grep -n -m 30 -E 'error|Error' "$RES/build.log"
  grep -v '^\[' "$RES/build.log" | tail -20
  [ -x "$T" ] && [ -x "$B/src/cli/trainprof-profile" ]
}

# The Python package needs Python's headers there; without them the C++ checks still run.
python_package() {
  if ! ninja -C "$B" -t targets all | grep -q '^trainprof_python:'; then
    echo "Python package: not configured (no Python headers or pybind11 there)"
    return 1
  fi
  ninja -C "$B" trainprof_python trainprof_python_files >"$RES/build-python.log" 2>&1
  local rc=$?
  grep -v '^\[' "$RES/build-python.log" | tail -30
  return $rc
}

# Item 1: the C++ side. The torch tests' GPU branches, then `trainprof profile` on the GPU.
cpp() {
  # On the GPU a test's GPU branch that cannot see one fails instead of skipping.
  local require=()
  [ "$DEVICE" = cuda ] && require=(TRAINPROF_REQUIRE_GPU=1)
  (cd "$B" && env "${require[@]}" ctest -R 'TorchProfiler|^Distributed\.' \
    --output-on-failure >"$RES/ctest.txt" 2>&1)
  grep -E 'Passed|Failed|Skipped|tests passed' "$RES/ctest.txt" | tail -20
  local run=$RES/cpp
  "$T" profile -o "$run" --no-progress --db off --set data.dir="$DATA" \
    --set training.device="$DEVICE" --set training.epochs=1 --limit-train-batches 100 \
    --set snapshot.enabled=true --set memory.cuda_activity=on >"$RES/cpp.txt" 2>&1
  echo "exit $?"
  head -150 "$RES/cpp.txt"
  local dir
  dir=$(ls -d "$run"/*/ | head -1)
  ls -la "$dir"
  python3 - "$dir" <<'PY'
import json, sys
r = json.load(open(sys.argv[1] + "/report.json"))
print("device:", r["meta"].get("device"))
for s in r["sections"]:
    if s["id"] in ("operators", "cuda_memory", "snapshot", "gpu_time"):
        print(s["id"], {k: m.get("value") for k, m in s.get("metrics", {}).items()})
        for t in s.get("tables", [])[:1]:
            print("  ", t["id"], [c["key"] for c in t["columns"]][:14], len(t.get("rows", [])), "rows")
print("diagnostics:", [(d["name"], d["message"][:160]) for d in r.get("diagnostics", [])])
# analyze's views of the in-process recording (trace/inprocess/): compare with cpp-analyze.txt
views = [s for s in r["sections"] if s["title"].startswith("in-process recording: ")]
print("in-process analyze sections:", [s["id"] for s in views])
for s in views:
    if s["id"] in ("overview", "trace_overview", "gpu", "memory", "trace_memory"):
        print(s["id"], {k: m.get("value") for k, m in s.get("metrics", {}).items()})
ops = next(s for s in r["sections"] if s["id"] == "operators")
rows = next(t for t in ops["tables"] if t["id"] == "operators")["rows"]
print("operators with Self CUDA > 0:", sum(1 for x in rows if (x.get("self_cuda_s") or 0) > 0),
      "of", len(rows))
PY
  "$T" analyze "$dir/memory_snapshot.pickle" -o "$RES/cpp-snapshot" --db off \
    >"$RES/cpp-snapshot.txt" 2>&1
  echo "snapshot: exit $?"
  head -40 "$RES/cpp-snapshot.txt"
  "$T" analyze "$dir/trace.json" -o "$RES/cpp-analyze" --db off >"$RES/cpp-analyze.txt" 2>&1
  echo "analyze: exit $?"
  head -100 "$RES/cpp-analyze.txt"
}

# Item 1: two ranks on the one GPU over Gloo (NCCL refuses two ranks on one device).
ranks() {
  "$T" profile -o "$RES/ranks" --no-progress --db off --set data.dir="$DATA" \
    --set training.device="$DEVICE" --set training.epochs=1 --limit-train-batches 40 \
    --nproc-per-node 2 2>&1 | tail -30
}

# Item 3: time.cuda_events against torch.cuda.Event by hand.
python_events() {
  TRAINPROF_CMAKE_BUILD_DIR=$B PYTHONPATH=$B/python TRAINPROF_CLI=$T \
    python3 "$ROOT/scripts/gpu/cuda_events_check.py" "$RES/events" --data "$DATA"
}

# Item 2: the CUPTI collector's cost against torch.profiler's (Kineto), each against no profiler.
overhead() {
  TRAINPROF_CMAKE_BUILD_DIR=$B PYTHONPATH=$B/python TRAINPROF_CLI=$T \
    python3 "$ROOT/scripts/gpu/overhead.py" "$RES/overhead" --data "$DATA" --rounds 2
}

# Item 5: the GPT-style snapshot with AdamW for the next round's memory-by-role analysis.
gpt_snapshot() {
  python3 "$ROOT/tests/data/snapshots/make_gpt_adamw_snapshot.py" "$RES/snapshot" && \
    ls -la "$RES/snapshot" && "$T" analyze "$RES"/snapshot/*.pickle \
    -o "$RES/gpt-snapshot" --db off >"$RES/gpt-snapshot.txt" 2>&1
  head -30 "$RES/gpt-snapshot.txt"
}

# Item 4: an emit_nvtx run under nsys, when nsys is there.
nsys_check() {
  local nsys
  nsys=$(command -v nsys || ls /opt/nvidia/nsight-*/*/host/target-linux-x64/nsys 2>/dev/null | head -1)
  if [ -z "$nsys" ]; then echo "nsys: not on this machine"; return 0; fi
  echo "nsys: $nsys"
  "$nsys" profile -t cuda,nvtx -o "$RES/nsys/run" --export sqlite \
    python3 "$ROOT/examples/python/fashion_mnist.py" --device cuda --epochs 1 \
    --limit-train-batches 30 --data "$DATA" -o "$RES/nsys/runs" 2>&1 | tail -15
  ls -la "$RES/nsys"
}

if [ "${1:-}" = --one ]; then  # a single check, from check()
  "$2"
  exit $?
fi
exec > >(tee -a "$OUT/log.txt") 2>&1
trap pack EXIT
wants env && check env 30 env_info
if wants build; then
  check build 400 build
  if [ ! -x "$T" ] || [ ! -x "$B/src/cli/trainprof-profile" ]; then
    echo "the commands did not build: the checks that need them are skipped"
    for c in cpp ranks overhead python; do CHECKS=${CHECKS//$c/}; done
  fi
  if ! check python-package 120 python_package; then
    for c in python overhead; do CHECKS=${CHECKS//$c/}; done
  fi
fi
wants cpp && check cpp 150 cpp
wants python && check python 90 python_events
wants snapshot && check snapshot 90 gpt_snapshot
wants overhead && check overhead 180 overhead
wants ranks && check ranks 90 ranks
wants nsys && check nsys 90 nsys_check
say done
