#include <gtest/gtest.h>

#include <filesystem>

#include "analysis/overview.h"
#include "analysis/steps.h"
#include "gpu/correlate.h"
#include "gpu/gpu_trace.h"
#include "trace/inprocess/activity.h"
#include "trace/inprocess/inprocess_reader.h"
#include "trace/kineto/kineto_reader.h"
#include "util/golden.h"

namespace trainprof::gpu {
namespace {

torchlib::OpEvent Call(int64_t tid, int64_t begin, int64_t end, uint64_t id, uint32_t depth) {
  torchlib::OpEvent e;
  e.tid = tid, e.begin_ns = begin, e.dur_ns = end - begin, e.self_ns = e.dur_ns;
  e.id = id, e.depth = depth;
  return e;
}

DeviceActivity Work(ActivityKind kind, uint32_t correlation, int64_t begin, int64_t end) {
  DeviceActivity a;
  a.kind = kind, a.correlation = correlation, a.begin_ns = begin, a.end_ns = end;
  a.stream = 7;
  return a;
}

// Thread 1 runs A [0, 100) around B [10, 50) and C [60, 90); thread 2 runs D. Each launch lies
// inside the call that made it: A launches k2 itself, B k1, C a copy and a sync, D k4; one
// kernel was launched outside every call. The external correlation records say the same, as
// CUPTI's do; the attribution (the analysis op tree's) needs only the launch's place.
struct FourCalls {
  torchlib::OpData ops;
  ActivityData a;
  trace::InProcessRecording rec;
  FourCalls() {
    ops.names = {"A", "D", "B", "C"};
    ops.ops = {Call(1, 0, 100, 1, 0), Call(2, 0, 100, 4, 0), Call(1, 10, 50, 2, 1),
               Call(1, 60, 90, 3, 1)};
    for (uint32_t i = 0; i < 4; ++i) ops.ops[i].name = i;
    a.names = {"cudaLaunchKernel", "k", "cudaStreamSynchronize"};
    a.device = {
        Work(ActivityKind::kKernel, 11, 200, 220), Work(ActivityKind::kKernel, 12, 230, 235),
        Work(ActivityKind::kMemcpy, 13, 240, 247), Work(ActivityKind::kSync, 14, 0, 100),
        Work(ActivityKind::kKernel, 15, 300, 303), Work(ActivityKind::kKernel, 16, 310, 319)};
    for (DeviceActivity& d : a.device) d.name = d.kind == ActivityKind::kSync ? 2 : 1;
    auto launch = [](int64_t tid, int64_t at, uint32_t corr) {
      return ApiCall{.name = 0, .tid = tid, .begin_ns = at, .end_ns = at + 2, .correlation = corr};
    };
    a.api = {launch(1, 20, 11), launch(1, 55, 12),  launch(1, 70, 13),
             launch(1, 75, 14), launch(1, 150, 15), launch(2, 50, 16)};
    a.external = {{11, 2}, {12, 1}, {13, 3}, {14, 3}, {16, 4}};
    rec = {.label = "job", .ops = &ops, .gpu = &a, .steps = {{0, 0, 400, 1}}};
  }
};

TEST(SetDeviceTimes, SelfAndTotalFollowTheLaunchingCall) {
  FourCalls f;
  SetDeviceTimes(f.rec, trace::ReadInProcess(f.rec), f.ops);
  const std::vector<torchlib::OpEvent>& ops = f.ops.ops;
  EXPECT_EQ(ops[0].self_device_ns, 5);   // A: k2
  EXPECT_EQ(ops[0].device_ns, 32);       // A: k2 + B's k1 + C's copy
  EXPECT_EQ(ops[2].self_device_ns, 20);  // B
  EXPECT_EQ(ops[2].device_ns, 20);
  EXPECT_EQ(ops[3].self_device_ns, 7);  // C: the copy; its sync is not work
  EXPECT_EQ(ops[3].device_ns, 7);
  EXPECT_EQ(ops[1].self_device_ns, 9);  // D, on its own thread: nothing of A's tree
  EXPECT_EQ(ops[1].device_ns, 9);
}

TEST(SetDeviceTimes, BackToBackCallsAreSiblingsNotNested) {
  torchlib::OpData ops;
  ops.names = {"x"};
  ops.ops = {Call(1, 0, 10, 1, 0), Call(1, 10, 20, 2, 0)};
  ActivityData a;
  a.names = {"cudaLaunchKernel", "k"};
  a.device = {Work(ActivityKind::kKernel, 1, 0, 4), Work(ActivityKind::kKernel, 2, 5, 11)};
  for (DeviceActivity& d : a.device) d.name = 1;
  a.api = {{.name = 0, .tid = 1, .begin_ns = 2, .end_ns = 3, .correlation = 1},
           {.name = 0, .tid = 1, .begin_ns = 12, .end_ns = 13, .correlation = 2}};
  const trace::InProcessRecording rec{.label = "job", .ops = &ops, .gpu = &a};
  SetDeviceTimes(rec, trace::ReadInProcess(rec), ops);
  EXPECT_EQ(ops.ops[0].device_ns, 4);
  EXPECT_EQ(ops.ops[1].device_ns, 6);
}

// A step of 1 ms on the CPU thread; two kernels of 200 and 300 us and a 100 us copy, each
// launched from the thread, on device 0's stream 7. Written as trainprof writes its trace.json,
// then read back as `trainprof analyze` reads any Kineto trace.
session::TraceInput OneGpuStep() {
  session::TraceInput t;
  t.process_name = "job";
  t.pid = 4242;
  t.steps.push_back({.profiler_step = 3, .begin_ns = 0, .end_ns = 1'000'000, .tid = 1});
  ActivityData a;
  a.names = {"cudaLaunchKernel", "cudaMemcpyAsync", "void gemm<float>()", "relu_kernel"};
  auto kernel = [](uint32_t name, uint32_t corr, int64_t b, int64_t e) {
    DeviceActivity k = Work(ActivityKind::kKernel, corr, b, e);
    k.name = name;
    k.grid[0] = 264, k.grid[1] = 1, k.grid[2] = 1;
    k.block[0] = 128, k.block[1] = 1, k.block[2] = 1;
    return k;
  };
  DeviceActivity copy = Work(ActivityKind::kMemcpy, 3, 700'000, 800'000);
  copy.name = 1, copy.bytes = 1 << 20, copy.copy = CopyKind::kHtoD;
  a.device = {kernel(2, 1, 100'000, 300'000), kernel(3, 2, 300'000, 600'000), copy};
  a.api = {{.name = 0, .tid = 1, .begin_ns = 10'000, .end_ns = 20'000, .correlation = 1},
           {.name = 0, .tid = 1, .begin_ns = 30'000, .end_ns = 40'000, .correlation = 2},
           {.name = 1, .tid = 1, .begin_ns = 50'000, .end_ns = 60'000, .correlation = 3}};
  a.devices = {{.id = 0,
                .name = "NVIDIA H100 80GB HBM3",
                .total_memory = 85'000'000'000,
                .major = 9,
                .minor = 0,
                .sms = 132,
                .max_threads_per_sm = 2048}};
  AddGpuTrace(a, t);
  return t;
}

TEST(GpuTrace, AnalyzeReadsTheKernelsOfTrainprofsOwnTrace) {
  const std::string path = testutil::FreshTempDir() + "/trace.json";
  ASSERT_TRUE(session::WriteTrace(OneGpuStep(), path).ok());
  StatusOr<trace::TraceModel> m = trace::ReadTraceFile(path, {});
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->devices.size(), 1u);
  EXPECT_EQ(m->devices[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(m->devices[0].compute_major, 9);
  EXPECT_EQ(m->devices[0].num_sms, 132);
  int kernels = 0;
  for (size_t i = 0; i < m->size(); ++i) {
    if (m->kind[i] != trace::EventKind::kKernel) continue;
    ++kernels;
    ASSERT_GE(m->launcher[i], 0) << "kernel " << m->name_of(i) << " has no launching call";
    EXPECT_EQ(m->name_of(static_cast<size_t>(m->launcher[i])), "cudaLaunchKernel");
  }
  EXPECT_EQ(kernels, 2);
  ASSERT_EQ(m->kernel_stats.size(), 2u);
  EXPECT_FLOAT_EQ(m->kernel_stats[0].blocks_per_sm, 2.0f);  // 264 blocks on 132 SMs

  analysis::StepsResult steps = analysis::FindSteps(*m, analysis::StepsMode::kAll);
  ASSERT_EQ(steps.steps.size(), 1u);
  EXPECT_TRUE(steps.has_gpu);
  analysis::Overview o = analysis::ComputeOverview(*m, steps);
  EXPECT_EQ(o.steps[0].total_ns, 1'000'000);
  EXPECT_EQ(o.steps[0].ns[analysis::kKernel], 500'000);
  EXPECT_EQ(o.steps[0].ns[analysis::kMemcpy], 100'000);
}

TEST(GpuTrace, DevicePropertiesAreEmptyWithoutDevices) { EXPECT_EQ(DevicePropertiesJson({}), ""); }

}  // namespace
}  // namespace trainprof::gpu
