#include "operators/memory_snapshot.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "operators/pickle_writer.h"
#include "util/golden.h"

namespace trainprof::torchlib {
namespace {

// Runs python3 on `script` with the pickle's path as argv[1]; returns its stdout, or "ERROR"
// and its exit status.
std::string RunPython(const std::string& pickle_bytes, const std::string& script) {
  const std::string dir = testutil::FreshTempDir();
  const std::string pkl = dir + "/memory_snapshot.pickle";
  const std::string py = dir + "/check.py";
  std::ofstream(pkl, std::ios::binary) << pickle_bytes;
  std::ofstream(py) << script;
  const std::string cmd = "/usr/bin/python3 " + py + " " + pkl + " 2>&1";
  FILE* f = popen(cmd.c_str(), "r");
  if (f == nullptr) return "ERROR popen";
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), f)) > 0;) out.append(buf, n);
  const int rc = pclose(f);
  return rc == 0 ? out : "ERROR " + std::to_string(rc) + ": " + out;
}

// Loads the pickle and prints it as JSON (tuples become lists) with sorted keys.
constexpr const char* kLoadAsJson = R"(import json, pickle, sys
with open(sys.argv[1], "rb") as f:
    obj = pickle.load(f)
print(json.dumps(obj, sort_keys=True, separators=(",", ":")))
)";

TEST(PickleWriter, PythonLoadsEveryKindOfValue) {
  PickleWriter p;
  p.BeginList();
  p.Int(0);
  p.Int(-1);
  p.Int(2147483647);
  p.Int(-5'000'000'000);
  p.UInt(18446744073709551615u);
  p.Float(0.25);
  p.Bool(true);
  p.Bool(false);
  p.None();
  p.Str("caf\xc3\xa9");
  p.Str("bad\xff");
  p.Str("overlong\xc0\x80");
  p.Tuple2Int(1, 2);
  p.BeginDict();
  p.End();
  p.BeginList();
  p.End();
  p.End();
  EXPECT_EQ(RunPython(p.Finish(), kLoadAsJson),
            "[0,-1,2147483647,-5000000000,18446744073709551615,0.25,true,false,null,"
            "\"caf\\u00e9\",\"bad\\ufffd\",\"overlong\\ufffd\\ufffd\",[1,2],{},[]]\n");
}

MemSnapshot TwoSegmentsAndAnOom() {
  MemFrame fwd{"/src/model.py", 42, "forward"};
  MemFrame train{"/src/train.py", 7, "train_step"};
  MemSnapshot s;
  MemSegment big{.device = 0,
                 .address = 139'637'976'727'552,
                 .total_size = 20 << 20,
                 .stream = 0,
                 .segment_type = "large",
                 .allocated_size = 8 << 20,
                 .active_size = 8 << 20,
                 .requested_size = 8 << 20};
  big.blocks = {{8 << 20, 8 << 20, 139'637'976'727'552, "active_allocated", {fwd, train}},
                {12 << 20, 0, 139'637'985'116'160, "inactive", {}}};
  MemSegment small{.device = 0,
                   .address = 139'637'955'756'032,
                   .total_size = 2 << 20,
                   .segment_type = "small",
                   .allocated_size = 512,
                   .active_size = 512,
                   .requested_size = 500};
  small.blocks = {{512, 500, 139'637'955'756'032, "active_allocated", {train}},
                  {(2 << 20) - 512, 0, 139'637'955'756'544, "inactive", {}}};
  s.segments = {big, small};
  s.device_traces = {{{.action = "alloc",
                       .addr = 139'637'976'727'552,
                       .size = 8 << 20,
                       .time_us = 100,
                       .frames = {fwd}},
                      {.action = "oom",
                       .size = 40 << 20,
                       .time_us = 200,
                       .device_free = 1 << 20,
                       .frames = {fwd, train}}}};
  return s;
}

// The structure torch.cuda.memory._snapshot() documents (Snapshot, Segment, Block, Frame,
// TraceEntry), checked field by field by Python after pickle.load.
TEST(MemorySnapshot, PickleHasTheStructureMemoryVizReads) {
  const std::string script = std::string(R"(import pickle, sys
with open(sys.argv[1], "rb") as f:
    s = pickle.load(f)
assert sorted(s) == ["device_traces", "segments"], sorted(s)
seg_keys = {"device", "address", "total_size", "allocated_size", "active_size",
            "requested_size", "stream", "segment_type", "segment_pool_id", "is_expandable",
            "frames", "blocks"}
for seg in s["segments"]:
    assert set(seg) == seg_keys, set(seg) ^ seg_keys
    assert seg["total_size"] == sum(b["size"] for b in seg["blocks"])
    assert seg["allocated_size"] == sum(b["size"] for b in seg["blocks"]
                                        if b["state"] == "active_allocated")
    assert seg["segment_pool_id"] == (0, 0)
    for b in seg["blocks"]:
        assert set(b) == {"address", "size", "requested_size", "state", "frames"}, set(b)
        for fr in b["frames"]:
            assert set(fr) == {"filename", "line", "name"}
seg = s["segments"][0]
assert seg["address"] == 139637976727552 and seg["segment_type"] == "large"
assert seg["blocks"][0]["frames"][0] == {"filename": "/src/model.py", "line": 42, "name": "forward"}
(trace,) = s["device_traces"]
alloc, oom = trace
assert alloc == {"action": "alloc", "addr": 139637976727552, "size": 8388608, "stream": 0,
                 "time_us": 100,
                 "frames": [{"filename": "/src/model.py", "line": 42, "name": "forward"}]}
assert "addr" not in oom and oom["device_free"] == 1048576 and oom["size"] == 41943040
print("ok")
)");
  EXPECT_EQ(RunPython(SnapshotPickle(TwoSegmentsAndAnOom()), script), "ok\n");
}

// PyTorch 2.x's own reader of the format: _memory_viz.segments() walks every segment, block
// and frame (its flamegraph formatter is replaced, as it would download flamegraph.pl).
TEST(MemorySnapshot, TorchsMemoryVizReadsThePickle) {
  const std::string probe =
      RunPython("", "import torch.cuda._memory_viz as v\nprint(hasattr(v, 'trace_plot'))\n");
  if (probe != "True\n") {
    GTEST_SKIP() << "skipped: needs PyTorch 2.1 or later for python3 (torch.cuda._memory_viz "
                    "with trace_plot); found: "
                 << probe;
  }
  const std::string script = R"(import pickle, sys
import torch.cuda._memory_viz as v
with open(sys.argv[1], "rb") as f:
    s = pickle.load(f)
text = v.segments(s, format_flamegraph=lambda t: t)
assert "model.py:42:forward" in text, text
print("ok")
)";
  EXPECT_EQ(RunPython(SnapshotPickle(TwoSegmentsAndAnOom()), script), "ok\n");
}

TEST(MemorySnapshot, WriteNamesTheFileItCannotWrite) {
  Status st = WriteSnapshotPickle({}, "/nonexistent-dir/memory_snapshot.pickle");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("/nonexistent-dir/memory_snapshot.pickle"), std::string::npos);
}

}  // namespace
}  // namespace trainprof::torchlib
