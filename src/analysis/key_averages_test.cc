// PyTorch's key_averages() on the op tree, on recordings read by trace/inprocess/: the figures
// the C++ job's operator table shows.
#include "analysis/key_averages.h"

#include <gtest/gtest.h>

#include <map>

#include "trace/inprocess/function_events.h"
#include "trace/inprocess/inprocess_reader.h"

namespace trainprof::analysis {
namespace {

using gpu::ActivityKind;

torchlib::OpEvent Call(uint32_t name, int64_t tid, int64_t begin, int64_t end,
                       uint32_t shapes = 0) {
  torchlib::OpEvent e;
  e.name = name, e.tid = tid, e.begin_ns = begin, e.dur_ns = end - begin, e.shapes = shapes;
  return e;
}

gpu::DeviceActivity Work(ActivityKind kind, uint32_t correlation, int64_t begin, int64_t end) {
  return {.kind = kind,
          .name = kind == ActivityKind::kSync ? 2u : 1u,
          .stream = 7,
          .begin_ns = begin,
          .end_ns = end,
          .correlation = correlation};
}

gpu::ApiCall Launch(int64_t tid, int64_t at, uint32_t correlation) {
  return {.name = 0, .tid = tid, .begin_ns = at, .end_ns = at + 2, .correlation = correlation};
}

std::map<std::string, KeyAverage> ByName(const torchlib::OpData& ops, const gpu::ActivityData* a,
                                         bool by_shapes = false) {
  const trace::TraceModel m = trace::ReadInProcess({.label = "job", .ops = &ops, .gpu = a});
  std::map<std::string, KeyAverage> out;
  for (KeyAverage& r : KeyAverages(m, BuildOpTree(m), by_shapes))
    out[r.name + r.shapes] = std::move(r);
  return out;
}

// Thread 1 runs A [0, 100) around B [10, 50) and C [60, 90); thread 2 runs D. Each launch lies
// inside the call that made it: A launches k2 itself, B k1, C a copy and a sync, D k4; one
// kernel was launched outside every call.
TEST(KeyAverages, DeviceTimeFollowsTheLaunchingCall) {
  torchlib::OpData ops;
  ops.names = {"A", "D", "B", "C"};
  ops.ops = {Call(0, 1, 0, 100), Call(1, 2, 0, 100), Call(2, 1, 10, 50), Call(3, 1, 60, 90)};
  gpu::ActivityData a;
  a.names = {"cudaLaunchKernel", "k", "cudaStreamSynchronize"};
  a.device = {Work(ActivityKind::kKernel, 11, 200, 220), Work(ActivityKind::kKernel, 12, 230, 235),
              Work(ActivityKind::kMemcpy, 13, 240, 247), Work(ActivityKind::kSync, 14, 0, 100),
              Work(ActivityKind::kKernel, 15, 300, 303), Work(ActivityKind::kKernel, 16, 310, 319)};
  a.api = {Launch(1, 20, 11), Launch(1, 55, 12),  Launch(1, 70, 13),
           Launch(1, 75, 14), Launch(1, 150, 15), Launch(2, 50, 16)};
  auto rows = ByName(ops, &a);
  EXPECT_EQ(rows["A"].self_device_ns, 5);    // k2
  EXPECT_EQ(rows["A"].device_total_ns, 32);  // k2 + B's k1 + C's copy
  EXPECT_EQ(rows["B"].self_device_ns, 20);
  EXPECT_EQ(rows["B"].device_total_ns, 20);
  EXPECT_EQ(rows["C"].self_device_ns, 7);  // the copy; its sync is not work
  EXPECT_EQ(rows["C"].device_total_ns, 7);
  EXPECT_EQ(rows["D"].device_total_ns, 9);  // its own thread: nothing of A's tree
  // Host self: A's 100 ns less B's 40 and C's 30, less its own launch (2 ns) as the plugin and
  // torch's tree count it; B and C less theirs.
  EXPECT_EQ(rows["A"].self_ns, 28);
  EXPECT_EQ(rows["A"].total_ns, 100);
  EXPECT_EQ(rows["C"].self_ns, 26);
  // ... and the launches are rows of their own, as in torch.profiler's table.
  EXPECT_EQ(rows["cudaLaunchKernel"].calls, 6);
  EXPECT_EQ(rows["cudaLaunchKernel"].self_ns, 12);
  EXPECT_EQ(rows["cudaLaunchKernel"].device_total_ns, 0);
}

// The calls a table counts (the C++ job's recorded steps): the others stay in the tree, so a
// counted call keeps its uncounted children out of its self time.
TEST(KeyAverages, UncountedCallsStillNest) {
  torchlib::OpData ops;
  ops.names = {"outer", "inner"};
  ops.ops = {Call(0, 1, 0, 100), Call(1, 1, 10, 50)};
  const trace::TraceModel m = trace::ReadInProcess({.label = "job", .ops = &ops});
  const std::vector<bool> counted = {true, false};
  const std::vector<KeyAverage> rows = KeyAverages(m, BuildOpTree(m), false, &counted);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].name, "outer");
  EXPECT_EQ(rows[0].self_ns, 60);
}

TEST(KeyAverages, BackToBackCallsAreSiblingsNotNested) {
  torchlib::OpData ops;
  ops.names = {"x", "y"};
  ops.ops = {Call(0, 1, 0, 10), Call(1, 1, 10, 20)};
  gpu::ActivityData a;
  a.names = {"cudaLaunchKernel", "k"};
  a.device = {Work(ActivityKind::kKernel, 1, 0, 4), Work(ActivityKind::kKernel, 2, 5, 11)};
  a.api = {Launch(1, 2, 1), Launch(1, 12, 2)};
  auto rows = ByName(ops, &a);
  EXPECT_EQ(rows["x"].device_total_ns, 4);
  EXPECT_EQ(rows["y"].device_total_ns, 6);
}

// aten::linear [0, 100) around aten::addmm [10, 60) on thread 7: addmm allocates 64 bytes on the
// CPU and 4 KiB on cuda:0; linear frees the 64; another thread's allocation during linear is
// not linear's. Called twice, with two input shapes.
TEST(KeyAverages, MemoryIsTheCallsOwnAndItsNestedCalls) {
  torchlib::OpData ops;
  ops.names = {"aten::linear", "aten::addmm"};
  ops.shapes = {"", "[[8, 4]]", "[[2, 4]]"};
  ops.ops = {Call(0, 7, 0, 100), Call(1, 7, 10, 60, 1), Call(0, 7, 200, 300),
             Call(1, 7, 210, 260, 2)};
  auto mem = [](int64_t t, int64_t bytes, int16_t type, int64_t tid) {
    torchlib::MemEvent e{.t_ns = t,
                         .bytes = bytes,
                         .device_type = type,
                         .device_index = static_cast<int16_t>(type == 0 ? -1 : 0)};
    e.tid = tid;
    return e;
  };
  ops.mem = {mem(20, 64, 0, 7), mem(30, 4096, 1, 7), mem(40, 999, 0, 8), mem(80, -64, 0, 7)};
  auto rows = ByName(ops, nullptr);
  const KeyAverage& addmm = rows["aten::addmm"];
  EXPECT_EQ(addmm.calls, 2);
  EXPECT_EQ(addmm.self_alloc[0], 64);
  EXPECT_EQ(addmm.self_alloc[1], 4096);
  EXPECT_EQ(addmm.total_net[1], 4096);
  const KeyAverage& linear = rows["aten::linear"];
  EXPECT_EQ(linear.self_alloc[0], 0);
  EXPECT_EQ(linear.self_freed[0], 64);
  EXPECT_EQ(linear.total_net[0], 0);  // addmm's 64 allocated, its own 64 freed
  EXPECT_EQ(linear.total_net[1], 4096);
  EXPECT_EQ(linear.self_ns, 100);  // two calls of 100 ns, each less addmm's 50
  auto shaped = ByName(ops, nullptr, /*by_shapes=*/true);
  EXPECT_EQ(shaped["aten::addmm[[8, 4]]"].calls, 1);
  EXPECT_EQ(shaped["aten::addmm[[2, 4]]"].calls, 1);
  EXPECT_EQ(shaped["aten::linear"].calls, 2);
}

// torch.profiler's events on a torch without Kineto (the Python Session's legacy path): each
// call's net bytes, turned into reports by OpDataOfFunctionEvents, give back the net bytes torch
// printed; the steps are one row, "ProfilerStep*", as in torch's table.
TEST(KeyAverages, TorchsLegacyEventsGiveBackTheirOwnFigures) {
  auto call = [](std::string name, int64_t b, int64_t e, int64_t cpu) {
    return trace::FunctionEvent{
        .name = std::move(name), .begin_ns = b, .end_ns = e, .tid = 1, .cpu_net = cpu};
  };
  std::vector<trace::FunctionEvent> calls;
  for (int64_t t0 : {0, 1000}) {
    calls.push_back(call("ProfilerStep*", t0, t0 + 900, 100));
    calls.push_back(call("aten::linear", t0 + 10, t0 + 110, 80));
    calls.push_back(call("aten::addmm", t0 + 10, t0 + 100, 64));
  }
  StatusOr<torchlib::OpData> ops = trace::OpDataOfFunctionEvents(calls, 5);
  ASSERT_TRUE(ops.ok());
  auto rows = ByName(*ops, nullptr);
  ASSERT_EQ(rows.size(), 3u);
  const KeyAverage& step = rows["ProfilerStep*"];
  EXPECT_EQ(step.calls, 2);
  EXPECT_EQ(step.total_net[0], 200);
  EXPECT_EQ(step.self_alloc[0], 40);
  EXPECT_EQ(step.self_ns, 2 * (900 - 100));
  EXPECT_EQ(rows["aten::linear"].total_net[0], 160);
  EXPECT_EQ(rows["aten::linear"].self_alloc[0], 32);
  EXPECT_EQ(rows["aten::addmm"].self_alloc[0], 128);
  EXPECT_EQ(rows["aten::addmm"].self_ns, 2 * 89);  // it began with linear: 1 ns later
}

// A Kineto trace's ProfilerStep#N and record_function ranges are user annotations: rows only
// when asked (torch.profiler's table lists them), the steps as one "ProfilerStep*" row.
TEST(KeyAverages, AnnotationsAreRowsWhenAsked) {
  torchlib::OpData ops;
  ops.names = {"aten::mm"};
  ops.ops = {Call(0, 7, 100, 400), Call(0, 7, 1100, 1300)};
  const trace::TraceModel m = trace::ReadInProcess(
      {.label = "job", .ops = &ops, .steps = {{3, 0, 1000, 7}, {4, 1000, 2000, 7}}});
  const OpTree t = BuildOpTree(m);
  EXPECT_EQ(KeyAverages(m, t, false).size(), 1u);
  const std::vector<KeyAverage> rows = KeyAverages(m, t, false, nullptr, /*annotations=*/true);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].name, "ProfilerStep*");
  EXPECT_EQ(rows[0].calls, 2);
  EXPECT_EQ(rows[0].total_ns, 2000);
  EXPECT_EQ(rows[0].self_ns, 2000 - 300 - 200);
  EXPECT_EQ(rows[1].name, "aten::mm");
}

}  // namespace
}  // namespace trainprof::analysis
