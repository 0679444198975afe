// Statistics of the operator observer's events, on hand-made events.
#include "operators/op_events.h"

#include <gtest/gtest.h>

namespace trainprof::torchlib {
namespace {

OpEvent Op(uint32_t name, int64_t step, int64_t begin, int64_t dur, int64_t self, int64_t alloc = 0,
           int64_t freed = 0, int64_t net = 0, bool backward = false) {
  OpEvent e;
  e.name = name;
  e.step = step;
  e.begin_ns = begin;
  e.dur_ns = dur;
  e.self_ns = self;
  e.self_alloc[kCpu] = alloc;
  e.self_freed[kCpu] = freed;
  e.total_net[kCpu] = net;
  e.backward = backward;
  return e;
}

MemEvent Mem(int64_t t, int64_t step, uint64_t ptr, int64_t bytes, int64_t total, uint32_t op) {
  MemEvent m;
  m.t_ns = t;
  m.step = step;
  m.ptr = ptr;
  m.bytes = bytes;
  m.total_allocated = total;
  m.op = op;
  return m;
}

TEST(OpEvents, AggregatesOnlyRecordedStepsByNameOrShapes) {
  OpData d;
  d.names = {"aten::linear", "aten::addmm"};
  d.shapes = {"", "[[2, 3]]", "[[4, 3]]"};
  d.ops = {Op(0, 0, 0, 999, 999),  // step 0: warm-up, left out
           Op(0, 1, 0, 100, 10, 0, 0, 64), Op(1, 1, 10, 80, 80, 64, 0, 64),
           Op(0, 2, 200, 300, 30, 0, 0, 0), Op(1, 2, 210, 250, 250, 128, 128, 0)};
  d.ops[1].shapes = 1;
  d.ops[3].shapes = 2;
  std::vector<OpRow> rows = AggregateOps(d, {1, 3}, false);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].name, "aten::linear");
  EXPECT_EQ(rows[0].calls, 2);
  EXPECT_DOUBLE_EQ(rows[0].total_s, 400e-9);
  EXPECT_DOUBLE_EQ(rows[0].self_s, 40e-9);
  EXPECT_EQ(rows[0].total_net[kCpu], 64);
  EXPECT_EQ(rows[1].self_alloc[kCpu], 192);
  EXPECT_EQ(rows[1].self_freed[kCpu], 128);
  EXPECT_EQ(rows[1].self_net[kCpu], 64);

  std::vector<OpRow> by_shape = AggregateOps(d, {1, 3}, true);
  ASSERT_EQ(by_shape.size(), 3u);
  EXPECT_EQ(by_shape[0].shapes, "[[2, 3]]");
  EXPECT_EQ(by_shape[2].shapes, "[[4, 3]]");

  SortOps(rows, SortKey::kSelfCpuTimeTotal);
  EXPECT_EQ(rows[0].name, "aten::addmm");
  SortOps(rows, SortKey::kCpuTimeTotal);
  EXPECT_EQ(rows[0].name, "aten::linear");
  SortKey k;
  EXPECT_TRUE(ParseSortKey("self_cpu_memory_usage", &k));
  EXPECT_EQ(k, SortKey::kSelfCpuMemory);
  EXPECT_TRUE(ParseSortKey("self_cuda_time_total", &k));
  EXPECT_EQ(k, SortKey::kSelfCudaTimeTotal);
  EXPECT_FALSE(ParseSortKey("cuda_memory_usage", &k));
}

TEST(OpEvents, PeakNamesWhatWasLiveAndActivationsCountTheStepsBlocksAtBackward) {
  OpData d;
  d.names = {"aten::empty", "aten::mm", "MmBackward0"};
  // 1000 bytes were allocated before the observer ran (the total starts at 1000).
  d.mem = {Mem(10, 1, 0xa, 100, 1100, 0),  // input, step 1
           Mem(20, 1, 0xb, 400, 1500, 1),  // mm output, saved for backward
           Mem(30, 1, 0xc, 50, 1550, 1),   // temporary
           Mem(40, 1, 0xc, -50, 1500, 1),
           Mem(60, 1, 0xd, 300, 1800, 2),  // gradient during backward: the peak
           Mem(70, 1, 0xb, -400, 1400, 2),
           Mem(80, 2, 0xe, 100, 1500, 0)};
  d.ops = {Op(2, 1, 50, 30, 30, 0, 0, 0, /*backward=*/true)};
  MemoryStats s = AnalyzeMemory(d, {1, 3});
  ASSERT_EQ(s.peaks.size(), 1u);
  const MemoryPeak& p = s.peaks[0];
  EXPECT_EQ(p.peak_allocated, 1800);
  EXPECT_EQ(p.t_ns, 60);
  EXPECT_EQ(p.step, 1);
  EXPECT_EQ(p.events, 7);
  ASSERT_EQ(p.live_by_op.size(), 4u);
  EXPECT_EQ(p.live_by_op[0],
            (std::pair<std::string, int64_t>{"(allocated before the observer)", 1000}));
  EXPECT_EQ(p.live_by_op[1], (std::pair<std::string, int64_t>{"aten::mm", 400}));
  EXPECT_EQ(p.live_by_op[2], (std::pair<std::string, int64_t>{"MmBackward0", 300}));
  EXPECT_EQ(p.live_by_op[3], (std::pair<std::string, int64_t>{"aten::empty", 100}));
  ASSERT_EQ(s.activations.size(), 1u);
  EXPECT_EQ(s.activations[0].step, 1);
  EXPECT_EQ(s.activations[0].bytes, 500);  // input + mm output; the temporary was freed
}

TEST(OpEvents, DeviceNames) {
  EXPECT_EQ(DeviceName(0, -1), "cpu");
  EXPECT_EQ(DeviceName(1, 0), "cuda:0");
  EXPECT_EQ(DeviceName(1, -1), "cuda");
}

}  // namespace
}  // namespace trainprof::torchlib
